"""`pplx-export re-render`: rebuild every derived file from raw files, with zero network.

Each thread goes through the same assembly path as an online export (pipeline/assemble.py) and
is written in place by `archive.writer.write_thread`; directories are never moved here. The
work is in three modules: one thread (`commands/rerender/thread.py`: read, parse, render, write,
never raise for a bad thread), the worker pool (`commands/rerender/pool.py`: `--jobs`), and this
one, the command: which threads to render, the render state, the answer-variant log and the
summary. A thread that fails is reported with its path and counted; the run goes on. The
parent owns every shared file (answer-variant log, render state), so there are no
concurrent writers.

Raw files are left alone, with one exception: a raw file that still holds a thread write
token (archives of the earlier tool) is rewritten once with the token redacted, durably
(product.md §2.5). `--dry-run` computes everything in memory and writes nothing.
"""

from __future__ import annotations

import contextlib
import json
import logging
import textwrap
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from pplx_export.archive.paths import has_thread_files, walk_thread_dirs
from pplx_export.archive.sweep import sweep_archive
from pplx_export.commands.rerender.outcome import ThreadOutcome
from pplx_export.context import RunOptions
from pplx_export.errors import DiskFull, UsageError
from pplx_export.pipeline.assemble import Engine, default_engine, preload_engine
from pplx_export.pipeline.capture_hint import drift_json, hint_lines
from pplx_export.progress import progress_reporter
from pplx_export.store.lock import archive_lock
from pplx_export.store.render_state import RenderState, is_fresh
from pplx_export.util.jsonobj import attrs_json, pairs_json
from pplx_export.util.jsontypes import JSON
from pplx_export.util.tally import RunTally

if TYPE_CHECKING:
    from pplx_export.commands.rerender.pool import Found

log = logging.getLogger(__name__)

STATE_CHECKPOINT = 200  # threads between render state commits (one fsync each)
SKIPPED = ThreadOutcome("", "skipped")  # the progress report of a fresh thread
SPILL_BYTES = 1 << 15  # the work list's lines held before they go to its file


@dataclass
class RerenderSummary(RunTally):
    """Counts by outcome (`failed`, from RunTally, counts the failures: one per thread)."""

    total: int = 0
    written: int = 0
    unchanged: int = 0
    skipped: int = 0
    files_written: int = 0
    files_removed: int = 0
    redacted_tokens: int = 0
    variant_hits: int = 0
    lossy: int = 0  # threads with content the parser did not read (§9.1)
    first_lossy: tuple[str, str] | None = None  # (web uuid, url) of the first of them
    dry_run: bool = False
    # Dry run: (path relative to the archive root, "write" | "remove") per file.
    would_change: list[tuple[str, str]] = field(default_factory=list)

    def add(self, o: ThreadOutcome) -> None:
        self.total += 1
        if o.status == "failed":
            self.failures.append((o.rel, o.error))
        else:
            setattr(self, o.status, getattr(self, o.status) + 1)
        self.files_written += o.files_written
        self.files_removed += o.files_removed
        self.redacted_tokens += o.redacted_tokens
        self.variant_hits += len(o.variant_hits)
        self.lossy += bool(o.losses)
        if self.first_lossy is None and o.lossy_thread is not None:
            self.first_lossy = o.lossy_thread
        self.would_change += [(f"{o.rel}/{name}", "write") for name in o.would_write]
        self.would_change += [(f"{o.rel}/{name}", "remove") for name in o.would_remove]

    def file_lines(self) -> list[str]:
        """`re-render --dry-run -v`: one line per file that would be rewritten or removed."""
        return [f"  would {verb:6} {path}" for path, verb in self.would_change]

    def to_json(self) -> JSON:
        doc = attrs_json(
            self,
            "dry_run threads written unchanged skipped failed files_written files_removed"
            " redacted_tokens answer_variant_hits threads_with_losses elapsed_s failures",
            threads=self.total,
            answer_variant_hits=self.variant_hits,
            threads_with_losses=self.lossy,
            **self.tally_json("dir"),
        )
        if self.dry_run:
            doc["would_change"] = pairs_json(self.would_change, "path", "action")
        if self.first_lossy is not None:
            doc["drift"] = drift_json(self.lossy, 0, *self.first_lossy)
        return doc

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
        if self.lossy:
            parts.append(f"{self.lossy} with content not read (see the warnings)")
        text = "re-render: " + ", ".join(parts) + f" in {self.elapsed:.1f}s"
        lines = textwrap.wrap(text, 80, subsequent_indent="  ")
        if self.first_lossy is not None:
            what = f"{self.lossy} thread(s) with content not read"
            lines += hint_lines(what, *self.first_lossy)
        return "\n".join(lines)


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

    `jobs` worker processes render in parallel; 0 picks `pool.auto_jobs` for the
    work found."""
    started = time.monotonic()
    root = Path(root)
    engine = engine or default_engine()
    summary = RerenderSummary(dry_run=dry_run)
    recorded = RenderState.load(root, readonly=dry_run)
    # The listing and the render state side by side, one directory at a time; the threads
    # to render go to a file (`Todo`), not a list: nothing here grows with the archive.
    # Without a limit, the records of directories no longer there (merged, deleted by
    # hand) are forgotten.
    joined = recorded.join(walk_thread_dirs(root), forget=limit is None)
    threads = ((*item, rec) for item, rec in joined if rec is not None or has_thread_files(item[1]))
    todo = Todo()
    skipped = 0
    try:
        for rel, path, linked, rec in islice(threads, limit):
            if changed_only and is_fresh(rec, path, engine.version, lang, engine.flavor):
                skipped += 1  # counted below: no outcome object per fresh thread
            else:
                todo.add(rel, rec, not linked)
        summary.total += skipped
        summary.skipped += skipped
        if on_total:
            on_total(summary.total + len(todo))
        if on_progress:
            for _ in range(skipped):
                on_progress(SKIPPED)
        _render(root, todo, recorded, summary, lang, dry_run, jobs, engine, on_progress)
    finally:
        todo.close()
        if not dry_run:
            _disk_full_is_one_line(recorded.compact)
        recorded.close()
        summary.elapsed = time.monotonic() - started
    return summary


def _render(
    root: Path,
    todo: Todo,
    recorded: RenderState,
    summary: RerenderSummary,
    lang: str,
    dry_run: bool,
    jobs: int,
    engine: Engine,
    on_progress: Callable[[ThreadOutcome], None] | None,
) -> None:
    """Render the threads of `todo` and take in their outcomes: counts, render state,
    search index, relation facts, answer variants."""
    if not todo:
        return
    # The pool, the search index, the relations journal and the answer-variant log are
    # imported only when there is work: a no-op `--changed-only` run is mostly interpreter
    # start-up, and they are most of its imports.
    from pplx_export.archive.variant_hits import warn_variants
    from pplx_export.commands.rerender.pool import auto_jobs, outcomes
    from pplx_export.pipeline.relation_facts import FactsJournal
    from pplx_export.search.index import IndexUpdater
    from pplx_export.store.variants import append_variant_log

    search_index = IndexUpdater(root, enabled=not dry_run)  # search rows of changed threads
    # What the index holds (asked chunk by chunk), so that workers compute rows only for
    # threads that changed.
    held = search_index.signatures if search_index.usable() else None
    facts = FactsJournal(root)  # relation facts of changed threads, for `relations`
    if jobs == 0:
        jobs = auto_jobs(len(todo))
    if jobs > 1:
        preload_engine()  # before the fork, so no worker imports them again
    rendered = outcomes(
        root, todo, len(todo), lang=lang, dry_run=dry_run, jobs=jobs, engine=engine, signatures=held
    )
    # Threads whose count of content not read changed (rare): the batch state learns it
    # at the end, so `status` lists what a new parser still cannot read, and no longer
    # what it now reads.
    loss_counts: dict[str, int] = {}
    try:
        for o in rendered:
            if o.disk_full:
                # Every later write would fail the same way: stop at once, one line.
                raise DiskFull(o.disk_full)
            summary.add(o)
            search_index.add(o.rel, o.index_rows, fresh=o.index_fresh)
            if o.relation_facts is not None:
                facts.add(o.rel, o.relation_facts)
            if o.status == "failed":
                log.error("re-render failed: %s: %s", root / o.rel, o.error)
                recorded.record(o.rel, None)
            elif o.fingerprint is not None:
                # To the store only: the run never looks at this thread again, so the
                # record is not kept in memory (flat memory whatever the archive's size).
                recorded.record(o.rel, o.fingerprint)
            for line in o.losses:
                log.warning("%s: %s", o.rel, line)
            if o.losses_changed is not None:
                loss_counts[o.losses_changed[0]] = o.losses_changed[1]
            if o.variant_hits and not dry_run:
                warn_variants(o.variant_hits)
                append_variant_log(root, o.variant_hits, source="offline")
            if on_progress:
                on_progress(o)
            if not dry_run and summary.total % STATE_CHECKPOINT == 0:
                _disk_full_is_one_line(recorded.flush)
        search_index.close()
    finally:
        facts.close()
        if loss_counts:
            _record_losses(root, loss_counts)


def _record_losses(root: Path, counts: dict[str, int]) -> None:
    from pplx_export.store.batch_state import BatchState

    state = BatchState.load(root)

    def record() -> None:
        for uuid, n in counts.items():
            state.set_losses(uuid, n)  # one commit each: rare, a new parser's doing

    _disk_full_is_one_line(record)
    state.close()


class Todo:
    """The threads to render, in the listing's order, as lines of an unnamed temporary
    file (`⟨dir as JSON⟩ TAB ⟨0|1: reached without a symlink⟩ TAB ⟨its record⟩`), read
    back as `rerender_pool.Found` items: a full re-render of 50,000 threads would
    otherwise hold 50,000 records (~600 bytes each) in a list. The file is made on the
    first thread, so a run with nothing to render creates (and imports) nothing."""

    def __init__(self) -> None:
        self._file: BinaryIO | None = None
        self._count = 0
        self._buffer: list[bytes] = []
        self._buffered = 0  # bytes in _buffer

    def add(self, rel: str, record: bytes | None, dir_checked: bool) -> None:
        key = json.dumps(rel, ensure_ascii=False).encode("utf-8", "surrogatepass")
        flag = b"1" if dir_checked else b"0"
        line = b"%s\t%s\t%s\n" % (key, flag, record or b"")
        self._buffer.append(line)
        self._buffered += len(line)
        self._count += 1
        if self._buffered >= SPILL_BYTES:
            self._spill()

    def _spill(self) -> None:
        if self._file is None:
            import tempfile

            self._file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self._file.writelines(self._buffer)
        self._buffer.clear()
        self._buffered = 0

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Found]:
        lines: Iterable[bytes] = self._buffer  # a few threads: never written out
        if self._file is not None:
            self._spill()
            self._file.seek(0)
            lines = self._file
        for line in lines:
            key, flag, record = line[:-1].split(b"\t", 2)
            yield json.loads(key), record or None, flag == b"1"

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def run_rerender_command(
    opts: RunOptions, *, limit: int | None, dry_run: bool, changed_only: bool, jobs: int
) -> RerenderSummary:
    """The CLI's one call: the archive lock, the progress bar, the run. The caller reports."""
    if not opts.out.is_dir():
        raise UsageError(f"archive root not found: {opts.out}")
    lock = contextlib.nullcontext() if dry_run else archive_lock(opts.out)
    # No refresh thread: the workers are forked (see progress_reporter).
    with (
        lock,
        _running_marker(opts.out, enabled=not dry_run),
        progress_reporter(
            "re-render", quiet=opts.quiet, enabled=opts.progress, refresh_thread=False
        ) as bar,
    ):
        summary = rerender(
            opts.out,
            lang=opts.lang,
            engine=default_engine(opts.flavor),
            limit=limit,
            dry_run=dry_run,
            changed_only=changed_only,
            jobs=jobs,
            on_total=bar.set_total,
            on_progress=lambda o: bar.advance(o.rel),
        )
        if not dry_run and (summary.written or summary.files_removed or not changed_only):
            # The archive's front door (index.md) and the space pages every thread page
            # links: rebuilt by a full run and when a thread changed, not by a
            # `--changed-only` run that rendered nothing (it imports nothing it need not).
            from pplx_export.commands.spaces.index_page import write_front_door

            _disk_full_is_one_line(lambda: write_front_door(opts.out, opts.lang, opts.flavor))
    return summary


RUNNING_MARKER = "rerender.running"


@contextlib.contextmanager
def _running_marker(root: Path, *, enabled: bool) -> Iterator[None]:
    """`index/rerender.running` while a re-render runs. Found at the start, it says the last
    one was killed: its torn temp files may lie in threads a `--changed-only` run will not
    touch, so the whole archive is swept once (a run that ends removes the marker)."""
    if not enabled:
        yield
        return
    marker = root / "index" / RUNNING_MARKER
    if marker.exists():
        removed = sweep_archive(root)
        log.info("the last re-render was interrupted: %d leftover temp file(s) swept", removed)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    try:
        yield
    finally:
        marker.unlink(missing_ok=True)


def _disk_full_is_one_line(save: Callable[[], None]) -> None:
    """Record the render state; a full disk is the one-line DiskFull (the state is only a
    cache of what is fresh: losing this save costs the next `--changed-only` run some work)."""
    try:
        save()
    except OSError as exc:
        full = DiskFull.of(exc)
        if full is None:
            raise
        raise full from None
