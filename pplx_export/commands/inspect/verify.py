"""`pplx-export verify`: is the archive whole, current and searchable? Zero network.

Per thread directory (in worker processes, like re-render): thread.json parses and names
this thread; the raw files parse; every derived file equals a fresh in-memory render
(`write_thread` in a dry run says which would change); the assets manifest points to files
that exist (with the recorded size and sha256, when it records them); no temp files are
left. Over the archive: no trash directories or index temp files; the batch state and the
directories agree; the search index covers every thread as it is now. The schema-drift
report counts what the parser did not recognise (unknown step types, workflow item types,
statuses, block usages), with one example directory each: a warning, not a problem.

`--fix` re-renders the stale threads, brings the search index up to date (rebuilding it
when it is missing or damaged) and sweeps the debris; what remains is reported, and the
command exits 4 while any problem remains.

Long because every check (per thread in workers, over the archive, of the state and the
search index, the schema drift) fills one `VerifyReport`, and `--fix` acts on that report's
problems: the report and the checks that fill it change together.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pplx_export.archive.assets import FILES_DIR, MANIFEST, read_manifest
from pplx_export.archive.loader import parse_read, read_thread
from pplx_export.archive.paths import RESERVED_TOP, TRASH_PREFIX, iter_thread_rels, uuid8
from pplx_export.archive.thread_json import THREAD_JSON
from pplx_export.context import RunOptions
from pplx_export.errors import ArchiveError, SchemaError, ThreadUnreadable, UsageError
from pplx_export.pipeline.assemble import default_engine, preload_engine, rewrite_conversation
from pplx_export.pipeline.capture_hint import capture_command, hint_lines, thread_url
from pplx_export.search import index as search_index
from pplx_export.store.batch_state import BatchState
from pplx_export.store.lock import archive_lock, archive_read_lock
from pplx_export.store.state_check import check_state_vs_dirs
from pplx_export.util.atomic import TEMP_PREFIX
from pplx_export.util.jsonobj import attrs_json
from pplx_export.workers import auto_jobs, ordered_map

log = logging.getLogger(__name__)

# Problem kinds, in the order of the summary table.
KINDS = {
    "thread_json": "thread.json",
    "raw": "raw files",
    "stale": "stale derived files",
    "loss": "content not read",
    "manifest": "assets manifest",
    "debris": "temp/trash leftovers",
    "state": "state vs directories",
    "index": "search index",
}
MAX_JOBS = 8
MIN_SHARE = 64


@dataclass
class Problem:
    kind: str  # a key of KINDS
    where: str  # relative to the archive root
    detail: str
    fixed: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "where": self.where, "detail": self.detail}


@dataclass
class ThreadCheck:
    rel: str
    problems: list[Problem] = field(default_factory=list)
    drift: dict[str, int] = field(default_factory=dict)
    uuid: str = ""  # the thread's web uuid and URL, once its thread.json is read
    url: str = ""
    # Files in the directory that no pplx-export wrote (relative to the root): left alone.
    not_ours: list[str] = field(default_factory=list)

    def add(self, kind: str, detail: str, where: str = "") -> None:
        self.problems.append(Problem(kind, where or self.rel, detail))


@dataclass
class DriftItem:
    kind: str  # step_type | item_type | status | block_usage | step_content
    value: str
    count: int = 0
    threads: int = 0
    example: str = ""  # the first thread's directory
    first: tuple[str, str] = ("", "")  # its (web uuid, url)

    def to_json(self) -> dict[str, Any]:
        known = bool(self.first[0])
        return attrs_json(
            self,
            "kind value count threads example first capture",
            first=thread_url(*self.first) if known else "",
            capture=capture_command(*self.first) if known else "",
        )


@dataclass
class VerifyReport:
    root: Path
    threads: int = 0
    problems: list[Problem] = field(default_factory=list)
    drift: dict[str, DriftItem] = field(default_factory=dict)
    fixed: list[str] = field(default_factory=list)  # what --fix did, one line each
    elapsed: float = 0.0
    # Files in thread directories that pplx-export did not write: never touched, listed.
    not_ours: list[str] = field(default_factory=list)
    # The first thread with a loss or an unknown shape, (web uuid, url): named with the
    # capture hint; and how many threads have either.
    first_drift: tuple[str, str] | None = None
    drifted: int = 0

    @property
    def remaining(self) -> list[Problem]:
        return [p for p in self.problems if not p.fixed]

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(KINDS, 0)
        for p in self.remaining:
            out[p.kind] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "threads": self.threads,
            "ok": not self.remaining,
            "counts": self.counts(),
            "problems": [p.to_json() for p in self.remaining],
            "fixed": self.fixed,
            "schema_drift": [d.to_json() for d in self._drift_sorted()],
            "not_ours": self.not_ours,
            "elapsed": round(self.elapsed, 3),
            **({"capture": capture_command(*self.first_drift)} if self.first_drift else {}),
        }

    def _drift_sorted(self) -> list[DriftItem]:
        return sorted(self.drift.values(), key=lambda d: (-d.count, d.kind, d.value))

    def lines(self) -> list[str]:
        out = [f"verify: {self.threads} threads in {self.root} ({self.elapsed:.1f}s)"]
        counts = self.counts()
        width = max(len(label) for label in KINDS.values())
        out.append(f"  {'check':<{width}}  problems")
        for kind, label in KINDS.items():
            out.append(f"  {label:<{width}}  {counts[kind]}")
        if self.drift:
            out.append(f"schema drift (warning): {len(self.drift)} unknown value(s)")
            for d in self._drift_sorted():
                out.append(f"  {d.kind} {d.value!r}: {d.count}x in {d.threads} thread(s), e.g.")
                out.append(f"    {d.example}")
        else:
            out.append("schema drift: none")
        if self.not_ours:
            out.append(
                f"not ours (left alone): {len(self.not_ours)} file(s) in thread directories "
                "that pplx-export did not write"
            )
            out += [f"  {rel}" for rel in self.not_ours[:20]]
            if len(self.not_ours) > 20:
                out.append(f"  ... and {len(self.not_ours) - 20} more (--json lists all)")
        for line in self.fixed:
            out.append(f"fixed: {line}")
        if self.remaining:
            out.append("problems:")
        for p in self.remaining:
            out.append(f"  {KINDS[p.kind]}: {p.where}")
            out.append(f"    {p.detail}")
        if any(p.kind == "loss" for p in self.remaining):
            out.append(
                "content not read: --fix cannot repair it; the raw files keep it, and a "
                "pplx-export\nthat reads the shape shows it after `re-render` (please report "
                "the shape)"
            )
        if self.first_drift is not None:
            what = f"{self.drifted} thread(s) with content not read or unknown shapes"
            out += hint_lines(what, *self.first_drift)
        return out

    def drift_lines(self) -> list[str]:
        """`verify --drift`: every unknown value with its first thread and the command that
        makes a bundle of that thread for a bug report."""
        if not self.drift:
            return [f"schema drift: none in {self.threads} threads"]
        out = [f"schema drift: {len(self.drift)} unknown value(s) in {self.threads} threads"]
        for d in self._drift_sorted():
            out.append(f"  {d.kind} {d.value!r}: {d.count}x in {d.threads} thread(s); first:")
            out.append(f"    {d.example}")
            if d.first[0]:
                out.append(f"    {capture_command(*d.first)}")
        return out


# ------------------------------------------------------------------ one thread


def _check_doc(check: ThreadCheck, doc: dict[str, Any] | None, name: str) -> None:
    """Which thread thread.json names (for the drift report), and whether it is this
    directory's."""
    web_uuid = doc.get("web_uuid") if doc is not None else None
    if not isinstance(web_uuid, str) or not web_uuid:
        return
    if not name.endswith("_" + uuid8(web_uuid)):
        check.add("thread_json", f"thread.json names thread {web_uuid}, not this directory's")
    check.uuid, check.url = web_uuid, str(doc.get("url") or "") if doc else ""


def _check_manifest(check: ThreadCheck, directory: Path) -> None:
    manifest, stat = read_manifest(directory)
    if manifest is None:
        if stat is not None:
            check.add("manifest", f"{MANIFEST} does not parse")
        return
    for f in manifest.get("files") or []:
        for v in (f.get("versions") or []) if isinstance(f, dict) else []:
            if not isinstance(v, dict) or v.get("asset_expired"):
                continue
            recorded = str(v.get("downloaded_to") or "")
            if not recorded:
                continue
            name = Path(recorded).name
            path = directory / FILES_DIR / name
            if not path.is_file():
                check.add("manifest", f"{recorded} is listed but missing")
                continue
            size, digest = v.get("size"), v.get("sha256")
            if isinstance(size, int) and path.stat().st_size != size:
                check.add("manifest", f"{recorded}: size {path.stat().st_size}, recorded {size}")
            elif isinstance(digest, str) and digest:
                actual = hashlib.sha256(path.read_bytes()).hexdigest()
                if actual != digest:
                    check.add("manifest", f"{recorded}: sha256 differs from the manifest")


def _check_debris(check: ThreadCheck, directory: Path) -> None:
    for dirpath, _dirs, files in os.walk(directory):
        for name in files:
            if name.startswith(TEMP_PREFIX):
                where = os.path.relpath(os.path.join(dirpath, name), directory.parent.parent.parent)
                check.add("debris", "temp file left by an interrupted run", where)


# What pplx-export writes at the top of a thread directory (archive/writer.py and friends).
_OURS_TOP = frozenset(
    {
        "thread.json",
        "conversation.md",
        "sources.md",
        "sources.json",
        "report.md",
        "assets",
        "turns",
        "history",
    }
)
_OUR_TURN = re.compile(r"turn_\d{4,}\.md")


def _check_not_ours(check: ThreadCheck, directory: Path) -> None:
    """List what someone else put in the directory: the writer never removes it."""
    try:
        top = sorted(os.listdir(directory))
    except OSError:
        return
    for name in top:
        if name in _OURS_TOP or name.startswith(("raw", TEMP_PREFIX, TRASH_PREFIX)):
            continue
        check.not_ours.append(f"{check.rel}/{name}")
    try:
        turns = sorted(os.listdir(directory / "turns"))
    except OSError:
        turns = []
    for name in turns:
        if not _OUR_TURN.fullmatch(name) and not name.startswith(TEMP_PREFIX):
            check.not_ours.append(f"{check.rel}/turns/{name}")


def check_thread(root: Path, rel: str, lang: str, flavor: str = "github") -> ThreadCheck:
    """Every per-thread check of one directory. Never raises for a bad thread."""
    check = ThreadCheck(rel)
    try:
        _check_thread(check, Path(root), rel, lang, flavor)
    except (ArchiveError, SchemaError, OSError) as exc:
        check.add("stale", f"cannot be rendered: {exc}")
    except Exception as exc:
        log.debug("verify of %s crashed", rel, exc_info=True)
        check.add("stale", f"cannot be rendered: {type(exc).__name__}: {exc}")
    return check


def _check_thread(check: ThreadCheck, root: Path, rel: str, lang: str, flavor: str) -> None:
    directory = root / rel
    _account_folder, _mode_folder, name = rel.split("/", 2)
    _check_debris(check, directory)
    _check_not_ours(check, directory)
    _check_manifest(check, directory)
    engine = default_engine(flavor)
    try:
        thread = read_thread(root, rel)
    except ThreadUnreadable as exc:
        _check_doc(check, exc.doc, name)
        check.add("thread_json" if exc.file == THREAD_JSON else "raw", str(exc))
        return
    thread.release()
    _check_doc(check, thread.doc, name)
    from pplx_export.parse.losses import loss_line

    conv = parse_read(thread, engine.parse)
    check.drift = dict(conv.drift.counts)
    for n, loss in conv.losses:
        # Not fixable here: the raw files hold it, this version cannot read it (§9.1).
        check.add("loss", f"turn {n}: {loss_line(loss)}")
    result = rewrite_conversation(root, rel, conv, engine, lang, redact=True, dry_run=True)
    if result.written or result.removed:
        files = sorted(result.written) + [f"{f} (extra)" for f in sorted(result.removed)]
        check.add("stale", "differs from a fresh render: " + ", ".join(files))


# ------------------------------------------------------------------ the archive


def _archive_debris(root: Path) -> list[Problem]:
    problems: list[Problem] = []
    index_dir = root / "index"
    if index_dir.is_dir():
        for entry in os.scandir(index_dir):
            if entry.name.startswith(TEMP_PREFIX):
                problems.append(
                    Problem("debris", f"index/{entry.name}", "temp file left by an interrupted run")
                )
    for account in sorted(os.scandir(root), key=lambda e: e.name):
        if not account.is_dir() or account.name in RESERVED_TOP or account.name.startswith("."):
            continue
        for mode in os.scandir(account.path):
            if not mode.is_dir():
                continue
            for d in os.scandir(mode.path):
                if d.name.startswith((TRASH_PREFIX, TEMP_PREFIX)):
                    problems.append(
                        Problem(
                            "debris",
                            f"{account.name}/{mode.name}/{d.name}",
                            "left by an interrupted merge or write",
                        )
                    )
    return problems


def _state_problems(root: Path) -> list[Problem]:
    state = BatchState.load(root, repair=False)
    check = check_state_vs_dirs(root, state.threads)
    out: list[Problem] = []
    if not state.path.exists() and check.untracked:
        # One line, not one per thread: an archive copied without its state, say.
        where = state.path.relative_to(root).as_posix()
        n = len(check.untracked)
        return [Problem("state", where, f"missing, and {n} thread directories are on disk")]
    for uuid in check.ok_without_dir:
        where = str((state.threads.get(uuid) or {}).get("dir") or uuid)
        out.append(Problem("state", where, f"state says ok for {uuid}, but no directory has it"))
    for uuid in check.untracked:
        out.append(Problem("state", uuid, "a directory holds this thread, no state record does"))
    for uuid in check.stale:
        out.append(Problem("state", uuid, "state lastUpdated differs from the directory's"))
    for uuid in check.duplicates:
        out.append(Problem("state", uuid, "several directories hold this thread"))
    return out


def _index_problems(root: Path, rels: list[str]) -> list[Problem]:
    try:
        cover = search_index.coverage(root, rels)
    except FileNotFoundError:
        return [Problem("index", "index/search.sqlite", "missing")]
    except search_index.IndexDamaged as exc:
        return [Problem("index", "index/search.sqlite", f"unusable: {exc}")]
    return [
        Problem(
            "index",
            rel,
            "not in the search index" if how == "missing" else "changed since it was indexed",
        )
        for rel, how in cover.items()
        if how != "ok"
    ]


def _check(root: Path, rel: str, lang: str, flavor: str) -> ThreadCheck:
    return check_thread(root, rel, lang, flavor)


def _checks(
    root: Path, rels: list[str], lang: str, flavor: str, jobs: int
) -> Iterator[ThreadCheck]:
    if jobs == 0:
        jobs = auto_jobs(len(rels), most=MAX_JOBS, share=MIN_SHARE)
    if min(jobs, len(rels)) > 1:
        preload_engine()  # before the fork, so no worker imports them again
    check = partial(_check, root, lang=lang, flavor=flavor)
    yield from ordered_map(check, rels, len(rels), jobs=jobs, init=preload_engine)


def verify(
    root: Path,
    *,
    lang: str = "en",
    flavor: str = "github",
    limit: int | None = None,
    jobs: int = 0,
    on_total: Callable[[int], None] | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> VerifyReport:
    """Check the archive at `root`; nothing is written."""
    started = time.monotonic()
    root = Path(root)
    report = VerifyReport(root=root)
    rels = iter_thread_rels(root)
    if limit is not None:
        rels = rels[:limit]
    report.threads = len(rels)
    if on_total:
        on_total(len(rels))
    for check in _checks(root, rels, lang, flavor, jobs):
        report.problems.extend(check.problems)
        report.not_ours.extend(check.not_ours)
        if check.drift or any(p.kind == "loss" for p in check.problems):
            report.drifted += 1
            if report.first_drift is None:
                report.first_drift = (check.uuid, check.url)
        for key, n in check.drift.items():
            kind, _, value = key.partition(":")
            new = DriftItem(kind, value, example=check.rel, first=(check.uuid, check.url))
            item = report.drift.setdefault(key, new)
            item.count += n
            item.threads += 1
        if on_progress:
            on_progress(check.rel)
    report.problems.extend(_archive_debris(root))
    report.problems.extend(_state_problems(root))
    report.problems.extend(_index_problems(root, rels))
    report.elapsed = time.monotonic() - started
    return report


# ------------------------------------------------------------------ --fix


def fix(report: VerifyReport, *, lang: str = "en", flavor: str = "github") -> None:
    """Repair what can be repaired offline; marks those problems fixed in `report`."""
    from pplx_export.commands.rerender.thread import rerender_thread

    root = report.root
    stale = sorted({p.where for p in report.problems if p.kind == "stale"})
    rendered: set[str] = set()
    for rel in stale:
        outcome = rerender_thread(root, rel, lang=lang, engine=default_engine(flavor))
        if outcome.status == "failed":
            log.error("verify --fix: %s: %s", root / rel, outcome.error)
        else:
            rendered.add(rel)
    if rendered:
        report.fixed.append(f"re-rendered {len(rendered)} thread(s)")
    swept = 0
    for p in report.problems:
        if p.kind != "debris":
            continue
        path = root / p.where
        with contextlib.suppress(FileNotFoundError):
            if path.is_dir():
                import shutil

                shutil.rmtree(path)
            else:
                path.unlink()
        swept += 1
        p.fixed = True
    if swept:
        report.fixed.append(f"removed {swept} leftover(s)")
    index_problems = [p for p in report.problems if p.kind == "index"]
    whole = any(p.where == "index/search.sqlite" for p in index_problems)
    if whole:
        stats = search_index.rebuild(root)
        report.fixed.append(f"rebuilt the search index ({stats.indexed} threads)")
        ok = not stats.failed
    else:
        rels = {p.where for p in index_problems} | rendered
        ok = True
        if rels:
            update = search_index.update_threads(root, sorted(rels))
            if update.indexed:
                report.fixed.append(f"re-indexed {update.indexed} thread(s)")
            ok = not (update.failed or update.error)
    for p in report.problems:
        if p.kind == "stale" and p.where in rendered:
            p.fixed = True
        if p.kind == "index" and ok:
            p.fixed = True


def run_verify_command(
    opts: RunOptions,
    *,
    fix_problems: bool,
    limit: int | None,
    on_total: Callable[[int], None] | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> VerifyReport:
    """The CLI's one call: check (and with `fix_problems`, repair under the archive lock)."""
    if not opts.out.is_dir():
        raise UsageError(f"archive root not found: {opts.out}")
    # A run in progress would show as problems (files written, not yet indexed): verify
    # waits for it; --fix writes and takes the lock itself.
    lock = archive_lock(opts.out) if fix_problems else archive_read_lock(opts.out)
    with lock:
        report = verify(
            opts.out,
            lang=opts.lang,
            flavor=opts.flavor,
            limit=limit,
            on_total=on_total,
            on_progress=on_progress,
        )
        if fix_problems and report.problems:
            fix(report, lang=opts.lang, flavor=opts.flavor)
    return report
