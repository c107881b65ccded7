"""`pplx-export re-render`: rebuild every derived file from raw files, with zero network.

Each thread goes through the same assembly path as an online export (sync/assemble.py) and
is written in place by `archive.writer.write_thread`; directories are never moved here.
A thread that fails (unreadable raw, SchemaError, a parser bug) is reported with its path
and counted; the run goes on. Worker processes (`--jobs`) each hold one thread at a time;
the parent owns every shared file (answer-variant log, render state), so there are no
concurrent writers.

Raw files are left alone, with one exception: a raw file that still holds a thread write
token (archives of the earlier tool) is rewritten once with the token redacted, durably
(product.md §2.5). `--dry-run` computes everything in memory and writes nothing.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import logging
import multiprocessing
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from pplx_export.archive.lock import archive_lock
from pplx_export.archive.paths import iter_thread_rels
from pplx_export.archive.raw import RAW_BLOCKS, RAW_ENTRIES, has_live_token
from pplx_export.archive.render_state import (
    fingerprint,
    is_fresh,
    load_state,
    recorded_file,
    save_state,
)
from pplx_export.archive.report_body import load_report_body
from pplx_export.archive.sweep import sweep_temp_files
from pplx_export.archive.thread_json import THREAD_JSON
from pplx_export.archive.variants import append_variant_log, warn_variants
from pplx_export.archive.writer import write_thread
from pplx_export.context import RunOptions
from pplx_export.errors import ArchiveError, SchemaError, UsageError
from pplx_export.models import JSON
from pplx_export.search.index import IndexUpdater
from pplx_export.sync.assemble import (
    Engine,
    default_engine,
    preload_engine,
    render_files,
)
from pplx_export.sync.progress import progress_reporter
from pplx_export.util.atomic import read_with_stat
from pplx_export.util.jsontext import loads

log = logging.getLogger(__name__)

T = TypeVar("T")
# (directory relative to root, its render_state record, reached without a symlink)
WorkItem = tuple[str, "JSON | None", bool]
STATE_CHECKPOINT = 200  # threads between render_state.json saves
# `--jobs 0` (the default) runs one worker per available CPU, at most MAX_AUTO_JOBS (past
# that the disk, not the CPU, is the limit, and every worker holds its own ~30 MiB), and
# only when each worker gets at least MIN_AUTO_SHARE threads: starting a worker costs about
# what rendering a few dozen threads does.
MAX_AUTO_JOBS = 8
MIN_AUTO_SHARE = 64


def auto_jobs(todo: int) -> int:
    """Workers for `--jobs 0`: one per CPU this process may run on, each with a fair share."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_AUTO_JOBS, todo // MIN_AUTO_SHARE))


@dataclass
class ThreadOutcome:
    rel: str
    status: str  # "written" | "unchanged" | "skipped" | "failed"
    files_written: int = 0
    files_removed: int = 0
    redacted_tokens: int = 0
    error: str = ""
    variant_hits: list[JSON] = field(default_factory=list)
    fingerprint: JSON | None = None  # the new render_state record, when it changed


@dataclass
class RerenderSummary:
    total: int = 0
    written: int = 0
    unchanged: int = 0
    skipped: int = 0
    failed: int = 0
    files_written: int = 0
    files_removed: int = 0
    redacted_tokens: int = 0
    variant_hits: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)
    elapsed: float = 0.0
    dry_run: bool = False

    def add(self, o: ThreadOutcome) -> None:
        self.total += 1
        setattr(self, o.status, getattr(self, o.status) + 1)
        self.files_written += o.files_written
        self.files_removed += o.files_removed
        self.redacted_tokens += o.redacted_tokens
        self.variant_hits += len(o.variant_hits)
        if o.status == "failed":
            self.failures.append((o.rel, o.error))

    def line(self) -> str:
        verb = "would rewrite" if self.dry_run else "rewritten"
        parts = [
            f"{self.total} threads",
            f"{self.written} {verb} ({self.files_written} files, {self.files_removed} removed)",
            f"{self.unchanged} unchanged",
            f"{self.skipped} skipped (no change since last render)",
            f"{self.failed} failed",
        ]
        if self.redacted_tokens:
            parts.append(f"{self.redacted_tokens} write tokens redacted")
        if self.variant_hits:
            parts.append(f"{self.variant_hits} answer-variant hits")
        return "re-render: " + ", ".join(parts) + f" in {self.elapsed:.1f}s"


def _read(base: str, name: str, *, optional: bool = False) -> tuple[bytes, tuple[int, int]]:
    """The bytes of `base + name` and the (size, mtime_ns) of what was read (for the
    fingerprint). A missing file raises FileNotFoundError when `optional`, else ArchiveError.
    Strings, not pathlib: three reads per thread."""
    try:
        return read_with_stat(base + name)
    except FileNotFoundError as exc:
        if optional:
            raise
        raise ArchiveError(f"{name} missing") from exc
    except OSError as exc:
        raise ArchiveError(f"{name} unreadable: {exc}") from exc


def _decode(name: str, data: bytes) -> Any:
    try:
        return loads(data)
    except ValueError as exc:
        raise ArchiveError(f"{name} unreadable: {exc}") from exc


def rerender_thread(
    root: Path,
    rel: str,
    *,
    lang: str,
    dry_run: bool = False,
    engine: Engine | None = None,
    recorded: JSON | None = None,
    dir_checked: bool = False,
) -> ThreadOutcome:
    """Re-render one thread directory (`rel` to root). Never raises for a bad thread.

    `recorded` is the directory's render_state entry from the last run, if any: its digests
    spare reading derived files that have not changed since. `dir_checked` says the listing
    found no symlink on the way to the directory (see `iter_thread_rels`).
    """
    try:
        return _rerender_thread(
            root,
            rel,
            lang=lang,
            dry_run=dry_run,
            engine=engine,
            recorded=recorded,
            dir_checked=dir_checked,
        )
    except (ArchiveError, SchemaError, OSError) as exc:
        return ThreadOutcome(rel, "failed", error=str(exc))
    except Exception as exc:
        # A parser or renderer bug on one thread must not cost the other thousands; it is
        # reported with its type so it can be fixed, and counted as a failure (exit 4).
        log.debug("re-render of %s crashed", rel, exc_info=True)
        return ThreadOutcome(rel, "failed", error=f"{type(exc).__name__}: {exc}")
    except BaseException:
        # Ctrl-C can land between a temp file's creation and the write that cleans it up
        # on failure: take this thread's debris along before going.
        sweep_temp_files(root / rel)
        raise


def _rerender_thread(
    root: Path,
    rel: str,
    *,
    lang: str,
    dry_run: bool,
    engine: Engine | None,
    recorded: JSON | None = None,
    dir_checked: bool = False,
) -> ThreadOutcome:
    engine = engine or default_engine()
    directory = root / rel
    account_folder, mode_folder, _ = rel.split("/", 2)
    base = f"{root}{os.sep}{rel}{os.sep}"
    doc_bytes, doc_stat = _read(base, THREAD_JSON)
    doc = _decode(THREAD_JSON, doc_bytes)
    if not isinstance(doc, dict) or not isinstance(doc.get("web_uuid"), str):
        raise ArchiveError("thread.json has no web_uuid")
    plain_bytes, plain_stat = _read(base, RAW_ENTRIES)
    plain = _decode(RAW_ENTRIES, plain_bytes)
    if not isinstance(plain, dict):
        raise ArchiveError(f"{RAW_ENTRIES} is not a JSON object")
    stats = {RAW_ENTRIES: plain_stat}
    blocks_bytes: bytes | None = None
    with contextlib.suppress(FileNotFoundError):  # search threads have no blocks file
        blocks_bytes, stats[RAW_BLOCKS] = _read(base, RAW_BLOCKS, optional=True)
    blocks = None if blocks_bytes is None else _decode(RAW_BLOCKS, blocks_bytes)
    if blocks_bytes is not None and not isinstance(blocks, dict):
        raise ArchiveError(f"{RAW_BLOCKS} is not a JSON object")
    # Walking the parsed tree for tokens costs as much as parsing it; a byte scan tells
    # whether there is anything to redact at all (almost never, after the first run).
    # A raw file whose size and mtime are still those recorded after the last render is
    # the file that render left (tokens redacted then): its recorded digest stands, and
    # there is nothing to scan (the size+mtime trust of `--changed-only`).
    redact = False
    known: dict[str, str] = {}
    for name, data in ((RAW_ENTRIES, plain_bytes), (RAW_BLOCKS, blocks_bytes)):
        if data is None:
            continue
        rec = recorded_file(recorded, name)
        if rec is not None and rec[:2] == stats[name]:
            known[name] = rec[2]
        else:
            known[name] = hashlib.sha256(data).hexdigest()
            redact = redact or has_live_token(data)
    del plain_bytes, blocks_bytes
    # Imported here: a --changed-only no-op run never parses, and the parser is not free to import.
    from pplx_export.parse.thread import row_from_thread_json

    web_uuid: str = doc["web_uuid"]
    conv = engine.parse(
        plain,
        blocks,
        row_from_thread_json(doc, mode_folder),
        web_uuid=web_uuid,
        url=str(doc.get("url") or ""),
        export_via=str(doc.get("export_via") or ""),
        exported_at=str(doc.get("exported_at") or ""),
    )
    if conv.web_uuid != web_uuid:
        raise ArchiveError(f"parsed web_uuid {conv.web_uuid!r} differs from thread.json")
    if not conv.raw_plain:
        conv.raw_plain = plain
    if conv.raw_blocks is None and blocks is not None:
        conv.raw_blocks = blocks
    report_body = load_report_body(directory, conv)
    rendered = render_files(engine, conv, lang, report_body)
    result = write_thread(
        root,
        conv,
        rendered,
        account_folder=account_folder,
        source="offline",
        dest=directory,
        dest_checked=dir_checked,
        redact=redact,
        log_variants=False,
        dry_run=dry_run,
        existing_doc=doc,
        existing_stat=doc_stat,
        recorded=recorded,
    )
    # A raw file the writer rewrote (token redaction) has its new stat in result.stats.
    stats.update(result.stats)
    record = None
    if not dry_run:
        record = fingerprint(
            directory,
            engine.version,
            lang,
            {**known, **result.digests},
            stats=stats,
            outputs=result.outputs_stamp,
            absent=result.absent,
        )
    return ThreadOutcome(
        rel,
        "written" if result.changed else "unchanged",
        files_written=len(result.written),
        files_removed=len(result.removed),
        redacted_tokens=result.redacted_tokens,
        variant_hits=result.variant_hits,
        # Only a record that changed travels back (a worker's outcome is pickled).
        fingerprint=None if record == recorded else record,
    )


def _outcomes(
    root: Path,
    todo: list[WorkItem],
    *,
    lang: str,
    dry_run: bool,
    jobs: int,
    engine: Engine | None,
) -> Iterator[ThreadOutcome]:
    work = partial(_work, root, lang=lang, dry_run=dry_run, engine=engine)
    jobs = min(jobs, len(todo))
    if jobs <= 1:
        yield from map(work, todo)
        return
    # Frozen objects are left out of the workers' garbage collections, which would otherwise
    # touch (and so copy) every page they inherited from the parent.
    gc.freeze()
    pool = ProcessPoolExecutor(
        max_workers=jobs, mp_context=_pool_context(), initializer=_init_worker
    )
    try:
        futures = deque(pool.submit(_run_chunk, work, c) for c in guided_chunks(todo, jobs))
        while futures:  # popped as consumed: a finished chunk's outcomes are not kept
            yield from futures.popleft().result()
    finally:
        # On an error or Ctrl-C the chunks no worker has started are dropped, not rendered.
        pool.shutdown(wait=True, cancel_futures=True)
        gc.unfreeze()


def guided_chunks(items: list[T], jobs: int, *, cap: int = 64, least: int = 4) -> list[list[T]]:
    """`items` cut into chunks that shrink towards the end ("guided" scheduling).

    Every chunk is a round trip through the parent, which shares the CPUs with the workers:
    so chunks are big (up to `cap`) while there is plenty left, then shrink with what
    remains (down to `least`), so the workers finish within a few threads of each other.
    """
    chunks: list[list[T]] = []
    i = 0
    while i < len(items):
        size = max(least, min(cap, (len(items) - i) // (jobs * 2)))
        chunks.append(items[i : i + size])
        i += size
    return chunks


def _run_chunk(
    work: Callable[[WorkItem], ThreadOutcome], items: list[WorkItem]
) -> list[ThreadOutcome]:
    return [work(item) for item in items]


def _init_worker() -> None:
    # Ctrl-C reaches the whole process group. The parent handles it: it drops the chunks
    # not started and waits for the running ones, so no worker dies mid-write.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    preload_engine()


def _pool_context() -> Any:
    """Fork where it is safe (Linux): the workers start at once with the parser and renderer
    the parent has already imported. Elsewhere the platform's default (spawn), where
    `preload_engine` imports them once per worker instead of on its first thread."""
    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def _work(root: Path, item: WorkItem, **options: Any) -> ThreadOutcome:
    """`rerender_thread` for one work item; `options` are lang, dry_run and engine."""
    rel, recorded, dir_checked = item
    return rerender_thread(root, rel, recorded=recorded, dir_checked=dir_checked, **options)


def rerender(
    root: Path,
    *,
    lang: str = "en",
    limit: int | None = None,
    dry_run: bool = False,
    changed_only: bool = False,
    jobs: int = 0,
    engine: Engine | None = None,
    on_progress: Callable[[ThreadOutcome], None] | None = None,
    on_total: Callable[[int], None] | None = None,
) -> RerenderSummary:
    """Re-render every thread under `root` and return the counts (never raises per thread).

    `jobs` worker processes render in parallel; 0 picks `auto_jobs` for the work found."""
    started = time.monotonic()
    root = Path(root)
    engine = engine or default_engine()
    summary = RerenderSummary(dry_run=dry_run)
    state = load_state(root)
    before = len(state)
    symlinked: set[str] = set()
    rels = iter_thread_rels(root, symlinked=symlinked, known=state)
    if limit is not None:
        rels = rels[:limit]
    if limit is None:
        # Forget directories that no longer exist (merged, deleted by hand).
        present = set(rels)
        state = {k: v for k, v in state.items() if k in present}
    if on_total:
        on_total(len(rels))
    todo: list[WorkItem] = []
    dirty = len(state) != before
    prefix = str(root) + os.sep
    for rel in rels:
        if changed_only and is_fresh(state.get(rel), prefix + rel, engine.version, lang):
            o = ThreadOutcome(rel, "skipped")
            summary.add(o)
            if on_progress:
                on_progress(o)
            continue
        todo.append((rel, state.get(rel), rel not in symlinked))
    if jobs == 0:
        jobs = auto_jobs(len(todo))
    if jobs > 1 and todo:
        preload_engine()  # before the fork, so no worker imports them again
    search_index = IndexUpdater(root, enabled=not dry_run)  # search rows of changed threads
    try:
        for o in _outcomes(root, todo, lang=lang, dry_run=dry_run, jobs=jobs, engine=engine):
            summary.add(o)
            search_index.add(o.rel)
            if o.status == "failed":
                log.error("re-render failed: %s: %s", root / o.rel, o.error)
                dirty = state.pop(o.rel, None) is not None or dirty
            elif o.fingerprint is not None:
                state[o.rel] = o.fingerprint
                dirty = True
            if o.variant_hits and not dry_run:
                warn_variants(o.variant_hits)
                append_variant_log(root, o.variant_hits, source="offline")
            if on_progress:
                on_progress(o)
            if dirty and not dry_run and summary.total % STATE_CHECKPOINT == 0:
                save_state(root, state)
                dirty = False
        search_index.close()
    finally:
        if not dry_run and dirty:
            save_state(root, state)
        summary.elapsed = time.monotonic() - started
    return summary


def run_rerender_command(
    opts: RunOptions, *, limit: int | None, dry_run: bool, changed_only: bool, jobs: int
) -> RerenderSummary:
    """The CLI's one call: the archive lock, the progress bar, the run. The caller reports."""
    if not opts.out.is_dir():
        raise UsageError(f"archive root not found: {opts.out}")
    lock = contextlib.nullcontext() if dry_run else archive_lock(opts.out)
    # No refresh thread: the workers are forked (see progress_reporter).
    with lock, progress_reporter("re-render", quiet=opts.quiet, refresh_thread=False) as bar:
        summary = rerender(
            opts.out,
            lang=opts.lang,
            limit=limit,
            dry_run=dry_run,
            changed_only=changed_only,
            jobs=jobs,
            on_total=bar.set_total,
            on_progress=lambda o: bar.advance(o.rel),
        )
    return summary
