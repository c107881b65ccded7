"""`auto_commit` / `auto_push`: one git commit of the archive after a run that changed it.

The archive root must be the top of its own git repository (`pplx-export init --git` makes
one); an archive that merely sits inside some other repository is never committed to. What
decides "changed": files outside `index/` (thread directories, spaces/, relations/). The
index and state files change on every run (fetch stamps, attempt counters) and ride along in
a commit, but never cause one. A missing git, a failed commit or a failed push is a warning:
the export itself succeeded and stays on disk.

Secrets: `.gitignore` always carries the lines below before anything is staged, and a staged
path that looks like a cookie cache aborts the commit.
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pplx_export.util.atomic import TEMP_PREFIX, atomic_write_text

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
)
SECRET_NAMES = (".cookies.json",)
GIT_TIMEOUT = 120.0
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

    def to_json(self) -> dict[str, object]:
        return {
            "committed": self.committed,
            "message": self.message,
            "new": self.new,
            "updated": self.updated,
            "removed": self.removed,
            "files": self.files,
            "pushed": self.pushed,
            "warning": self.warning,
        }


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
    root: Path, command: str, *, push: bool = False, git: str = "git"
) -> CommitResult:
    """Stage everything (minus .gitignore), commit once if anything outside index/ changed.

    Never raises for git trouble: the result carries a warning instead (logged here).
    """
    try:
        result = _commit(root, command, push=push, git=git)
    except GitError as exc:
        result = CommitResult(warning=f"auto_commit: {exc}")
    if result.warning:
        log.warning("%s", result.warning)
    elif result.committed:
        log.info("auto_commit: %s%s", result.message, " (pushed)" if result.pushed else "")
    return result


def _commit(root: Path, command: str, *, push: bool, git: str) -> CommitResult:
    if not is_repo_root(root, git):
        return CommitResult(
            warning=f"auto_commit: {root} is not the top of a git repository "
            "(`pplx-export init --git` makes one); nothing committed"
        )
    ensure_gitignore(root)
    _git(root, ["add", "-A", "--", "."], git)
    staged = _staged(root, git)
    secret = [p for _s, p in staged if p.rsplit("/", 1)[-1] in SECRET_NAMES]
    if secret:
        _git(root, ["reset", "-q"], git)
        return CommitResult(
            warning=f"auto_commit: refusing to commit {', '.join(secret)} (a cookie cache); "
            "nothing committed"
        )
    if not any(not p.startswith(f"{INDEX_DIR}/") for _s, p in staged):
        # Only fetch stamps and counters moved: leave them for the next real change.
        if staged:
            _git(root, ["reset", "-q"], git)
        return CommitResult(skipped_index_only=bool(staged))
    result = describe(command, staged)
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
