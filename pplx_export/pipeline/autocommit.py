"""`auto_commit` / `auto_push`: one git commit of the archive after a run that changed it.

The archive root must be the top of its own git repository (`pplx-export init --git` makes
one); an archive that merely sits inside some other repository is never committed to. What
decides "changed": files outside `index/` (thread directories, spaces/, relations/). The
index and state files change on every run (fetch stamps, attempt counters) and ride along in
a commit, but never cause one. A missing git, a failed commit or a failed push is a warning:
the export itself succeeded and stays on disk.

Secrets: `.gitignore` always carries the lines below before anything is staged. Of what
`git add -A` staged, a cookie jar (judged by its content, whatever its name), the file given
to `--cookies`, the `--log-file` and any log are taken out again; a staged file that still
holds a session value of the run aborts the commit. A failed commit is an error, not a
warning: the run's exit code says so, and `status` shows it (the state store's `auto_commit`
document).
A `.git/index.lock` that a killed git left (no git process is running in the archive) is
removed first: otherwise every later commit fails.

Long because committing an archive safely is one sequence (.gitignore, stage, take secrets
out again, look for session values, commit, push, record) whose steps depend on each other;
the secret checks stay in the module of the commit they guard.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pplx_export.site.cookies import is_cookie_jar
from pplx_export.store.docs import load_bytes, save_bytes
from pplx_export.util.atomic import TEMP_PREFIX, atomic_write_text
from pplx_export.util.jsonobj import attrs_json
from pplx_export.util.timefmt import format_utc

log = logging.getLogger(__name__)

INDEX_DIR = "index"
GITIGNORE_LINES = (
    "# written by pplx-export: never commit secrets, locks, temp files or logs",
    "index/.cookies.json",
    ".cookies.json",
    "index/.lock",
    "*.lock",
    f"{TEMP_PREFIX}*",
    "index/logs/",
    "index/search.sqlite*",
    # The state store changes on every run and is rewritten in place (a WAL beside it): a
    # copy in git would be a binary blob per commit, and one taken mid-run inconsistent.
    "index/state.sqlite*",
    "index/*.running",
)
SECRET_NAMES = (".cookies.json",)
GIT_TIMEOUT = 120.0
# Where the outcome of the last auto-commit is kept, for `status` (a state store document).
RECORD = "auto_commit"
# Without /proc (macOS, Windows) a lock this old is taken for a killed git's.
STALE_LOCK_AGE_S = 600.0
# A cookie jar is small; larger files are not read to be judged one.
JAR_MAX_BYTES = 1 << 20
FALLBACK_IDENTITY = ("-c", "user.name=pplx-export", "-c", "user.email=pplx-export@localhost")


@dataclass
class CommitResult:
    committed: bool = False
    message: str = ""
    new: int = 0
    updated: int = 0
    removed: int = 0
    files: int = 0
    pushed: bool = False
    warning: str = ""
    skipped_index_only: bool = False
    # The commit was due and did not happen (git failed, or a secret was staged): an error.
    failed: bool = False
    # Staged files taken out again (cookie jars, logs, the --cookies file).
    unstaged: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        keys = "committed message new updated removed files pushed warning failed unstaged"
        return attrs_json(self, keys, unstaged=list(self.unstaged))


class GitError(Exception):
    """git failed or is missing; the message says which command and why."""


class GitMissing(GitError):
    pass


def _git(root: Path, args: Sequence[str], git: str, extra: Sequence[str] = ()) -> str:
    argv = [git, *extra, "-C", str(root), *args]
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=GIT_TIMEOUT, check=False
        )
    except FileNotFoundError:
        raise GitMissing(f"git executable {git!r} not found") from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {args[0]}: {type(exc).__name__}: {exc}") from None
    if done.returncode != 0:
        lines = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        # git puts the cause on its `fatal:`/`error:` line; hints follow it.
        why = next((ln for ln in lines if ln.startswith(("fatal:", "error:"))), "")
        why = why or (lines[0] if lines else f"exit {done.returncode}")
        raise GitError(f"git {args[0]} failed: {why}")
    return done.stdout


def ensure_gitignore(root: Path) -> bool:
    """Add our ignore lines to `<root>/.gitignore` when missing; True if the file changed."""
    path = root / ".gitignore"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    have = {line.strip() for line in text.splitlines()}
    missing = [line for line in GITIGNORE_LINES if line not in have]
    if not missing:
        return False
    sep = "" if not text or text.endswith("\n") else "\n"
    atomic_write_text(path, text + sep + "\n".join(missing) + "\n")
    return True


def is_repo_root(root: Path, git: str = "git") -> bool:
    """True when `root` is the top level of a git work tree (not just somewhere inside one)."""
    try:
        top = _git(root, ["rev-parse", "--show-toplevel"], git).strip()
    except GitMissing:
        raise
    except GitError:
        return False
    return bool(top) and Path(top).resolve() == root.resolve()


def init_repo(root: Path, git: str = "git") -> bool:
    """`git init` the archive (when it is not a repository yet) and write `.gitignore`.

    Returns True when a repository was created.
    """
    root.mkdir(parents=True, exist_ok=True)
    ensure_gitignore(root)
    if is_repo_root(root, git):
        return False
    _git(root, ["init", "-q"], git)
    return True


def _staged(root: Path, git: str) -> list[tuple[str, str]]:
    out = _git(root, ["diff", "--cached", "--name-status", "--no-renames", "-z"], git)
    parts = out.split("\0")
    pairs: list[tuple[str, str]] = []
    for status, path in zip(parts[0::2], parts[1::2], strict=False):
        if status and path:
            pairs.append((status[0], path))
    return pairs


def _thread_key(path: str) -> str:
    """`<account>/<mode>/<date>_<slug>_<uuid8>/thread.json` -> `<uuid8>` (a moved dir keeps it)."""
    parent = path.rsplit("/", 2)[-2] if path.count("/") >= 1 else ""
    return parent.rsplit("_", 1)[-1]


def describe(command: str, staged: list[tuple[str, str]]) -> CommitResult:
    """Count threads from the staged `thread.json` files: added = new, modified = updated.

    A thread whose directory moved (its date changed) shows as deleted + added under the
    same `uuid8`: that is an update, not a new thread.
    """
    result = CommitResult(files=len(staged))
    seen: dict[str, set[str]] = {}
    for status, path in staged:
        if path.endswith("/thread.json") and not path.startswith(f"{INDEX_DIR}/"):
            seen.setdefault(_thread_key(path), set()).add(status)
    for statuses in seen.values():
        if statuses == {"A"}:
            result.new += 1
        elif statuses == {"D"}:
            result.removed += 1
        else:
            result.updated += 1
    counts = ((result.new, "new"), (result.updated, "updated"), (result.removed, "removed"))
    parts = [f"{n} {word}" for n, word in counts if n]
    if parts:
        total = result.new + result.updated + result.removed
        result.message = f"{command}: {', '.join(parts)} thread{'s' if total != 1 else ''}"
    else:
        n = result.files
        result.message = f"{command}: {n} file{'s' if n != 1 else ''} changed"
    return result


def commit_archive(
    root: Path,
    command: str,
    *,
    push: bool = False,
    git: str = "git",
    secrets: Iterable[str] = (),
    exclude: Iterable[Path | None] = (),
) -> CommitResult:
    """Stage everything (minus .gitignore and secrets), commit once if anything outside
    index/ changed. `secrets`: session values no committed file may hold; `exclude`: files
    never to commit (the --cookies file, the --log-file).

    Never raises for git trouble: the result carries the reason (`failed` when the commit
    was due and did not happen: the caller fails the run; otherwise logged here as a
    warning) and is recorded for `status`.
    """
    try:
        result = _commit(
            root, command, push=push, git=git, secrets=tuple(secrets), exclude=tuple(exclude)
        )
    except GitError as exc:
        result = CommitResult(warning=f"auto_commit: {exc}", failed=True)
    if result.failed:
        log.debug("%s", result.warning)  # the caller fails the run with it (CommitFailed)
    elif result.warning:
        log.warning("%s", result.warning)
    elif result.committed:
        log.info("auto_commit: %s%s", result.message, " (pushed)" if result.pushed else "")
    _record(root, command, result)
    return result


def _record(root: Path, command: str, result: CommitResult) -> None:
    """Keep the outcome for `status` (only when a commit was due or failed)."""
    if not (result.committed or result.failed):
        return
    doc = {"at": format_utc(datetime.now(UTC)), "command": command, **result.to_json()}
    try:
        save_bytes(root, RECORD, json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
    except OSError as exc:
        log.debug("auto_commit outcome not recorded: %s", exc)


def read_record(root: Path) -> dict[str, object] | None:
    """The last auto-commit outcome recorded (None when none or unreadable)."""
    try:
        doc = json.loads(load_bytes(root, RECORD) or b"null")
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _git_alive_in(root: Path) -> bool | None:
    """Whether a git process runs in `root` (its cwd or an argument inside it); None when
    the system does not say (no /proc)."""
    proc = Path("/proc")
    if not (proc / "self").is_dir():
        return None
    top = str(root.resolve())
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if (entry / "comm").read_text().strip() not in ("git", "git-remote-http"):
                continue
            cwd = os.readlink(entry / "cwd")
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        inside = cwd == top or cwd.startswith(top + os.sep)
        if inside or any(a.decode("utf-8", "replace").startswith(top) for a in args):
            return True
    return False


def clear_stale_lock(root: Path, git: str = "git") -> bool:
    """Remove `<git dir>/index.lock` when no git process can own it (a killed commit left
    it); True when removed. Every later commit would fail on it otherwise."""
    try:
        git_dir = Path(_git(root, ["rev-parse", "--absolute-git-dir"], git).strip())
    except GitError:
        return False
    lock = git_dir / "index.lock"
    try:
        age = time.time() - lock.stat().st_mtime
    except FileNotFoundError:
        return False
    alive = _git_alive_in(root)
    if alive or (alive is None and age < STALE_LOCK_AGE_S):
        return False
    lock.unlink(missing_ok=True)
    log.warning("auto_commit: removed a stale %s (no git process was running)", lock)
    return True


def _excluded(root: Path, exclude: Sequence[Path | None]) -> set[str]:
    """The archive-relative POSIX paths of `exclude` files that lie inside the archive."""
    top = root.resolve()
    out: set[str] = set()
    for path in exclude:
        if path is None:
            continue
        try:
            out.add(Path(path).resolve().relative_to(top).as_posix())
        except ValueError:
            continue
    return out


def _never_commit(root: Path, rel: str, excluded: set[str]) -> bool:
    """A file no commit may hold: given to --cookies or --log-file, a log, a cookie jar."""
    name = rel.rsplit("/", 1)[-1]
    if rel in excluded or name in SECRET_NAMES or name.endswith(".log"):
        return True
    if rel.startswith(f"{INDEX_DIR}/logs/"):
        return True
    path = root / rel
    try:
        if path.stat().st_size > JAR_MAX_BYTES:
            return False
        return is_cookie_jar(path.read_bytes())
    except OSError:
        return False


def _holding(root: Path, staged: list[tuple[str, str]], secrets: Sequence[str]) -> list[str]:
    """Staged files whose content holds one of `secrets` (as staged: `git add` just copied
    the work tree, under the archive lock)."""
    needles = [s.encode("utf-8") for s in secrets if s]
    if not needles:
        return []
    found = []
    for status, rel in staged:
        if status == "D":
            continue
        try:
            data = (root / rel).read_bytes()
        except OSError:
            continue
        if any(n in data for n in needles):
            found.append(rel)
    return found


def _unstage(root: Path, git: str, paths: list[str]) -> None:
    # `rm --cached` takes a new file out of the index (the branch may have no commit yet);
    # it also untracks a file an earlier version committed, which is what we want.
    for at in range(0, len(paths), 100):
        _git(root, ["rm", "-q", "--cached", "--ignore-unmatch", "--", *paths[at : at + 100]], git)


def _commit(
    root: Path,
    command: str,
    *,
    push: bool,
    git: str,
    secrets: Sequence[str] = (),
    exclude: Sequence[Path | None] = (),
) -> CommitResult:
    if not is_repo_root(root, git):
        return CommitResult(
            warning=f"auto_commit: {root} is not the top of a git repository "
            "(`pplx-export init --git` makes one); nothing committed"
        )
    ensure_gitignore(root)
    clear_stale_lock(root, git)
    _git(root, ["add", "-A", "--", "."], git)
    staged = _staged(root, git)
    excluded = _excluded(root, exclude)
    never = [p for s, p in staged if s != "D" and _never_commit(root, p, excluded)]
    if never:
        _unstage(root, git, never)
        log.warning("auto_commit: not committing %s (cookies or logs)", ", ".join(sorted(never)))
        staged = _staged(root, git)
    holding = _holding(root, staged, secrets)
    if holding:
        _reset(root, git)
        return CommitResult(
            warning=f"auto_commit: refusing to commit: {holding[0]} holds the session cookie "
            f"value{f' (and {len(holding) - 1} more file(s))' if len(holding) > 1 else ''}; "
            "nothing committed",
            failed=True,
            unstaged=tuple(never),
        )
    if not any(not p.startswith(f"{INDEX_DIR}/") for _s, p in staged):
        # Only fetch stamps and counters moved: leave them for the next real change.
        if staged:
            _reset(root, git)
        return CommitResult(skipped_index_only=bool(staged), unstaged=tuple(never))
    result = describe(command, staged)
    result.unstaged = tuple(never)
    identity: tuple[str, ...] = ()
    try:
        _git(root, ["config", "user.email"], git)
    except GitError:
        identity = FALLBACK_IDENTITY  # cron has no git identity configured: still commit
    _git(root, ["commit", "-q", "-m", result.message], git, identity)
    result.committed = True
    if push:
        try:
            _git(root, ["push", "-q"], git)
            result.pushed = True
        except GitError as exc:
            result.warning = f"auto_push: {exc}"
    return result


def _has_head(root: Path, git: str) -> bool:
    try:
        _git(root, ["rev-parse", "-q", "--verify", "HEAD"], git)
    except GitError:
        return False
    return True


def _reset(root: Path, git: str) -> None:
    """Unstage everything (on a branch without a commit yet too)."""
    if _has_head(root, git):
        _git(root, ["reset", "-q"], git)
    else:
        _git(root, ["rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", "."], git)
