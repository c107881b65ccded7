"""The online commands' orchestration: index, export, batch, sync (product.md §4).

Failure policy (product.md §6, protocol App. A): PermissionDenied / NotFound and any other
per-thread error are recorded on the thread and the run goes on; EntryDeleted / EntryExpired
become terminal states; three AuthErrors in a row stop the run (state is saved after every
thread anyway) with exit 3; Ctrl-C stops with exit 130; a run that lost threads exits 4.

Long because index, export, batch and sync are one orchestration sharing one failure policy
(`_export_item`, `Streaks`, `_record_failure`), the archive lock and the front door; sync is
index plus batch plus the steps around them, and splitting the commands would spread that
policy over several modules.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pplx_export.archive.paths import INDEX_DIR
from pplx_export.archive.scan import ThreadDirs
from pplx_export.archive.sweep import sweep_archive, sweep_temp_files
from pplx_export.commands.export.listing import (
    IndexResult,
    full_sweep_due,
    read_index_state,
    update_library_index,
)
from pplx_export.commands.export.plan import (
    Plan,
    PlanItem,
    make_plan,
    parse_since,
    parse_thread_ref,
    parse_until,
    unchanged_since_export,
)
from pplx_export.commands.spaces.space_index import space_rows
from pplx_export.context import RunOptions
from pplx_export.errors import (
    ApiError,
    ArchiveError,
    AuthError,
    CommitFailed,
    DiskFull,
    EntryDeleted,
    EntryExpired,
    Interrupted,
    RateLimited,
    SchemaError,
    UsageError,
)
from pplx_export.models import JSON
from pplx_export.pipeline.capture_hint import drift_json, hint_lines
from pplx_export.progress import Reporter, progress_reporter
from pplx_export.site.api import PerplexityAPI
from pplx_export.site.library import ListingRun, listing_order
from pplx_export.site.session import open_session
from pplx_export.store.batch_state import ERROR_MAX, BatchState
from pplx_export.store.library_index import load_index
from pplx_export.store.lock import archive_lock
from pplx_export.store.raw_check import find_damaged
from pplx_export.util.jsonobj import attrs_json, pairs_json

if TYPE_CHECKING:
    from pplx_export.commands.export.deleted import DeletedResult
    from pplx_export.commands.export.thread import Exporter
    from pplx_export.pipeline.autocommit import CommitResult

log = logging.getLogger(__name__)

AUTH_FAIL_FAST = 3
RATE_LIMIT_FAIL_FAST = 3


@dataclass
class BatchSummary:
    ok: int = 0
    skipped: int = 0
    failed: int = 0
    expired: int = 0
    deleted: int = 0
    early_stopped: int = 0
    variant_hits: int = 0
    requests: int = 0
    elapsed: float = 0.0
    failures: list[tuple[str, str]] = field(default_factory=list)  # (uuid, reason)
    # Threads with content not read (losses) and with unknown shapes (schema drift); the
    # first of either, (uuid, url), is named with the capture hint.
    lossy: int = 0
    unknown: int = 0
    first_drift: tuple[str, str] | None = None
    # `sync --check-deleted`: the deletion check's document and summary line.
    deleted_check: JSON | None = None
    deleted_check_line: str = ""
    # `sync`: what the API said of the threads recovered from the data export (`import`).
    official_line: str = ""

    def to_json(self) -> JSON:
        doc = attrs_json(
            self,
            "ok skipped failed expired deleted early_stopped answer_variant_hits requests"
            " elapsed_s failures",
            answer_variant_hits=self.variant_hits,
            elapsed_s=round(self.elapsed, 3),
            failures=pairs_json(self.failures, "uuid", "reason"),
        )
        if self.deleted_check is not None:
            doc["deleted_check"] = self.deleted_check
        if self.first_drift is not None:
            doc["drift"] = drift_json(self.lossy, self.unknown, *self.first_drift)
        return doc

    def note_deleted_check(self, checked: DeletedResult) -> None:
        """`--check-deleted`: the check's document and line; what it left is a failure."""
        self.deleted_check = checked.to_json()
        self.deleted_check_line = checked.line()
        self.failed += checked.failed
        self.failures += checked.left

    def note_drift(self, drifted: list[tuple[str, str, bool, bool]]) -> None:
        """Count an exporter's threads with losses or unknown shapes; keep the first."""
        for uuid, url, lossy, unknown in drifted:
            self.lossy += lossy
            self.unknown += unknown
            if self.first_drift is None:
                self.first_drift = (uuid, url)

    def drift_lines(self, width: int = 80) -> list[str]:
        if self.first_drift is None:
            return []
        parts = [f"{self.lossy} with content not read"] if self.lossy else []
        parts += [f"{self.unknown} with unknown shapes"] if self.unknown else []
        what = "threads: " + ", ".join(parts)
        return hint_lines(what, *self.first_drift, width=width)

    def line(self, width: int = 80) -> str:
        """The summary, non-zero counts only, wrapped to `width` columns (then the deletion
        check's own line, when `sync` ran one)."""
        import textwrap

        counts = [
            (self.ok, "ok"),
            (self.skipped, "skipped"),
            (self.failed, "failed"),
            (self.expired, "expired"),
            (self.deleted, "deleted"),
            (self.early_stopped, "early-stopped"),
            (self.variant_hits, "answer-variant hits"),
        ]
        parts = [f"{n} {label}" for n, label in counts if n] or ["nothing to do"]
        text = f"batch: {', '.join(parts)}; {self.requests} requests, {self.elapsed:.1f}s"
        lines = textwrap.wrap(text, width, subsequent_indent="  ") + self.drift_lines(width)
        if self.deleted_check_line:
            lines.append(self.deleted_check_line)
        if self.official_line:
            lines.append(self.official_line)
        return "\n".join(lines)


def _sweep_index(opts: RunOptions) -> None:
    # A run killed while saving the state or the index leaves its temp file in index/.
    sweep_temp_files(opts.out / INDEX_DIR, recursive=False)


def _exporter(opts: RunOptions, api: PerplexityAPI, state: BatchState) -> Exporter:
    # Imported here: the exporter (parse, render, writer, search) is most of what a batch
    # imports, and a no-op `sync` (nothing to fetch) never builds one.
    from pplx_export.commands.export.thread import Exporter

    _sweep_index(opts)
    return Exporter.for_run(opts, api, state)


def _now() -> datetime:
    return datetime.now(UTC)


def run_index(opts: RunOptions, *, full: bool, api: PerplexityAPI | None = None) -> IndexResult:
    """Refresh `index/library_<account>.json` from the library listing.

    The listing can take minutes (one paced request per page), so it shows a row counter
    on a terminal and periodic lines elsewhere; a full listing estimates its end from the
    size of the last index.
    """
    own = api is None
    api = api or open_session(opts)
    try:
        with _locked(opts):
            _sweep_index(opts)
            known = len(load_index(opts.out, opts.account.name, repair=False).threads)
            listing = ListingRun(order=listing_order_for(opts))
            with progress_reporter(
                "index",
                quiet=opts.quiet,
                enabled=opts.progress,
                unit="rows",
                expected=known if full and known else None,
            ) as bar:
                result = update_library_index(
                    opts.out,
                    opts.account.name,
                    _counted(api.iter_library(listing), bar),
                    full=full,
                    now=_now(),
                    config=opts.config,
                    listing=lambda: listing.used,
                )
    finally:
        if own:
            api.close()
    return result


def listing_order_for(opts: RunOptions) -> tuple[str, ...]:
    """`[network] listing`, with what answered last time for `auto` (`[index_state]`)."""
    remembered = read_index_state(opts.out, opts.account.name, opts.config).listing
    return listing_order(opts.config.network.listing, remembered)


def _counted(rows: Iterator[JSON], bar: Reporter) -> Iterator[JSON]:
    """The listing's rows, each one advancing the progress reporter as it arrives."""
    for row in rows:
        bar.advance()
        yield row


@dataclass
class Streaks:
    """Consecutive threads that failed the same run-stopping way (reset by any other outcome)."""

    auth: int = 0
    rate_limited: int = 0

    def record(self, exc: BaseException | None) -> None:
        self.auth = self.auth + 1 if isinstance(exc, AuthError) else 0
        self.rate_limited = self.rate_limited + 1 if isinstance(exc, RateLimited) else 0


def _export_item(
    exporter: Exporter,
    item: PlanItem,
    summary: BatchSummary,
    streaks: Streaks,
    url: str = "",
) -> None:
    """Export one planned thread and record its outcome; raise only to stop the run."""
    uuid = item.uuid
    state = exporter.state
    failure: BaseException | None = None
    try:
        directory = exporter.export(uuid, item.row, url)
    except EntryExpired as exc:  # EntryDeleted is one too
        deleted = isinstance(exc, EntryDeleted)
        state.mark_gone(
            "deleted" if deleted else "expired",
            uuid,
            note=exc.reason[:ERROR_MAX],
            last_updated=item.last_updated,
            title=item.title,
        )
        if deleted:
            summary.deleted += 1
        else:
            summary.expired += 1
        what = "was deleted" if deleted else "expired"
        log.warning("thread %s (%s) %s on Perplexity", uuid, item.title, what)
    except (ApiError, SchemaError, ArchiveError, OSError) as exc:
        full = DiskFull.of(exc)
        if full is not None:
            raise full from exc  # every later write (the state too) would fail the same way
        failure = exc
    except Exception as exc:
        # A bug in parse/render on one odd payload must not cost the user the rest of the
        # batch: record it on the thread (with the traceback in the debug log) and go on.
        log.debug("thread %s: unexpected error", uuid, exc_info=True)
        failure = exc
    else:
        summary.ok += 1
        log.debug("exported %s -> %s", uuid, directory)
    streaks.record(failure)
    if failure is None:
        return
    _record_failure(exporter, item, summary, failure)
    if isinstance(failure, AuthError) and streaks.auth >= AUTH_FAIL_FAST:
        raise AuthError(
            f"{AUTH_FAIL_FAST} authentication failures in a row; state saved ({failure.reason})",
            endpoint=failure.endpoint,
        ) from failure
    if isinstance(failure, RateLimited) and streaks.rate_limited >= RATE_LIMIT_FAIL_FAST:
        # Every retry of these threads was spent already: going on would only add requests
        # to a throttled session. The state is saved; the next run picks up from here.
        raise RateLimited(
            f"rate limited on {RATE_LIMIT_FAIL_FAST} threads in a row; state saved, rerun later",
            endpoint=failure.endpoint,
        ) from failure


def _record_failure(
    exporter: Exporter, item: PlanItem, summary: BatchSummary, exc: BaseException
) -> None:
    reason = f"{type(exc).__name__}: {exc}"[:ERROR_MAX]
    exporter.state.mark_error(
        item.uuid, error=reason, last_updated=item.last_updated, title=item.title
    )
    summary.failed += 1
    summary.failures.append((item.uuid, reason))
    log.error("thread %s (%s) failed: %s", item.uuid, item.title, reason)


@dataclass(frozen=True)
class BatchFilters:
    """Which index rows a batch considers (`batch` flags; protocol App. A)."""

    full: bool = False
    force: bool = False
    limit: int | None = None
    mode: str | None = None
    since: str | None = None
    space: str | None = None  # plan over this space's listing instead of the library
    until: str | None = None


def plan_batch(opts: RunOptions, filters: BatchFilters) -> tuple[Plan, BatchState]:
    if filters.space is not None:
        rows = space_rows(opts.out, filters.space)
    else:
        index = load_index(opts.out, opts.account.name)
        rows = index.threads
        if not rows:
            log.warning(
                "the index of %s is empty: run `pplx-export index` first", opts.account.name
            )
    state = BatchState.load(opts.out)
    try:
        since = parse_since(filters.since) if filters.since else None
    except ValueError as exc:
        raise UsageError(f"--since: {exc}") from None
    try:
        until = parse_until(filters.until) if filters.until else None
    except ValueError as exc:
        raise UsageError(f"--until: {exc}") from None
    if since is not None and until is not None and until <= since:
        raise UsageError(f"--until {filters.until} is before --since {filters.since}")
    damaged = find_damaged(opts.out, state.threads)
    for uuid, (rel, reason) in damaged.items():
        log.warning("thread %s (%s): %s; fetching it again", uuid, rel, reason)
    plan = make_plan(
        rows,
        state.threads,
        damaged=damaged,
        full=filters.full,
        force=filters.force,
        limit=filters.limit,
        mode=filters.mode,
        since=since,
        until=filters.until,
    )
    return plan, state


def run_batch(
    opts: RunOptions,
    filters: BatchFilters | None = None,
    *,
    dry_run: bool = False,
    api: PerplexityAPI | None = None,
    commit: bool = True,
) -> BatchSummary | Plan:
    """Export what the plan says (or, with `dry_run`, return the plan); see the module doc
    for the failure policy. The caller reports the summary and maps failures to exit 4.
    `commit`: git-commit the archive afterwards when `auto_commit` is on (sync commits once
    itself)."""
    filters = filters or BatchFilters()
    if dry_run:
        plan, _state = plan_batch(opts, filters)
        return plan
    with _locked(opts):
        dirs = ThreadDirs(opts.out)
        sweep_archive(opts.out, dirs)  # the run's one walk of the archive: it lists `dirs` too
        plan, state = plan_batch(opts, filters)
        summary = BatchSummary(early_stopped=len(plan.early_stopped))
        summary.skipped = sum(1 for item in plan.items if item.kind not in ("new", "updated"))
        if plan.todo:
            work = [(item, "") for item in plan.todo]
            _run_items(opts, api, state, work, summary, dirs=dirs)
            front_door(opts, dirs)
        else:
            log.info("batch: nothing to do (%s)", plan.counts_text())
        _repair_index(opts, state)
        if commit:
            auto_commit(opts, "batch")
    return summary


def _run_items(
    opts: RunOptions,
    api: PerplexityAPI | None,
    state: BatchState,
    work: list[tuple[PlanItem, str]],
    summary: BatchSummary,
    *,
    dirs: ThreadDirs | None = None,
) -> None:
    """Export `work` ((item, url) pairs) with one session; fill `summary`. `dirs`: the
    archive's directories, when the caller listed them (else the first export does)."""
    own = api is None
    started = time.monotonic()
    api = api or open_session(opts)
    before = api.requests_made
    exporter = _exporter(opts, api, state)
    exporter.dirs = dirs
    streaks = Streaks()
    try:
        with progress_reporter("batch", quiet=opts.quiet, enabled=opts.progress) as bar:
            bar.set_total(len(work))
            for item, url in work:
                _export_item(exporter, item, summary, streaks, url)
                bar.advance(item.title)
    except KeyboardInterrupt:
        # Every change was committed when it was made: nothing to save.
        raise Interrupted("interrupted; state saved, rerun to continue") from None
    except OSError as exc:  # e.g. recording a failure when the disk filled up meanwhile
        full = DiskFull.of(exc)
        if full is None:
            raise
        raise full from exc
    finally:
        summary.requests = api.requests_made - before
        summary.elapsed = time.monotonic() - started
        summary.variant_hits = exporter.variant_hits
        summary.note_drift(exporter.drifted)
        if own:
            api.close()


def front_door(opts: RunOptions, dirs: ThreadDirs | None = None) -> None:
    """Rewrite spaces/ and the archive's index.md after threads were written (every page
    links them). A failure is one warning: the threads are archived all the same."""
    from pplx_export.commands.spaces.index_page import write_front_door

    try:
        rels = dirs.rels() if dirs is not None else None  # listed by the run's sweep
        write_front_door(opts.out, opts.lang, opts.flavor, rels)
    except OSError as exc:
        full = DiskFull.of(exc)
        if full is not None:
            raise full from exc
        log.warning("index.md not written: %s", exc)


@contextlib.contextmanager
def _locked(opts: RunOptions) -> Iterator[None]:
    """The archive lock, re-entrant across the calls of one command (sync = index + batch)."""
    with archive_lock(opts.out, opts.held_locks):
        yield


def run_export(
    opts: RunOptions, refs: list[str], *, force: bool = False, api: PerplexityAPI | None = None
) -> BatchSummary:
    """Export the given threads (URLs or UUIDs); unchanged ones are skipped unless forced."""
    # One thread named twice (its UUID and its title-slug URL, say) is exported once, with
    # the first URL given.
    firsts: dict[str, tuple[str, str]] = {}
    for uuid, url in map(parse_thread_ref, refs):
        firsts.setdefault(uuid, (uuid, url))
    targets = list(firsts.values())
    rows: dict[str, Any] = {
        str(r.get("entryUUID")): r for r in load_index(opts.out, opts.account.name).threads
    }
    summary = BatchSummary()
    # Sign in before taking the lock: a session that fails leaves a new archive untouched.
    own = api is None
    api = api or open_session(opts)
    try:
        with _locked(opts):
            _export_refs(opts, api, targets, rows, force, summary)
            front_door(opts)
            auto_commit(opts, "export")
    finally:
        if own:
            api.close()
    return summary


def _export_refs(
    opts: RunOptions,
    api: PerplexityAPI,
    targets: list[tuple[str, str]],
    rows: dict[str, Any],
    force: bool,
    summary: BatchSummary,
) -> None:
    state = BatchState.load(opts.out)
    damaged = {} if force else find_damaged(opts.out, _records(state, targets))
    work: list[tuple[PlanItem, str]] = []
    for uuid, url in targets:
        row = rows.get(uuid)
        if uuid in damaged:
            log.warning("thread %s: %s; fetching it again", uuid, damaged[uuid][1])
        elif not force and unchanged_since_export(state, uuid, row):
            summary.skipped += 1
            log.info("thread %s unchanged since its export (use --force)", uuid)
            continue
        title = str((row or {}).get("title") or "")
        last_updated = str((row or {}).get("lastUpdated") or "")
        work.append((PlanItem(uuid, title, last_updated, "new", "", row or {}), url))
    if work:
        _run_items(opts, api, state, work, summary)


def _records(state: BatchState, targets: list[tuple[str, str]]) -> dict[str, Any]:
    """The state records of the threads named on the command line."""
    return {uuid: record for uuid, _url in targets if (record := state.get(uuid)) is not None}


def run_sync(
    opts: RunOptions,
    *,
    full: bool = False,
    check_deleted: bool | None = None,
    refresh_spaces: bool | None = None,
) -> BatchSummary | Plan:
    """`index` then `batch` over one session (one pacer, one sign-in); with `refresh_spaces`
    (default: `full`), then `spaces --fetch-meta` and `sync-space`; with `check_deleted`
    (default: `full`), then `sync-deleted --online` (its candidates that could not be checked
    count as failures of the run). The index is a full sweep with `full`, and also when the
    last one is older than `full_index_days` (upkeep the schedule does by itself)."""
    refresh_spaces = full if refresh_spaces is None else refresh_spaces
    check_deleted = full if check_deleted is None else check_deleted
    with open_session(opts) as api, _locked(opts):
        sweep = full or full_sweep_due(opts.out, opts.config, opts.account.name, _now())
        if sweep and not full:
            log.info(
                "index %s: the last full sweep is older than %g days; sweeping the whole "
                "listing (full_index_days)",
                opts.account.name,
                opts.config.full_index_days,
            )
        run_index(opts, full=sweep, api=api)
        result = run_batch(opts, BatchFilters(full=full), api=api, commit=False)
        _fetch_recovered(opts, api, result)
        if refresh_spaces:
            from pplx_export.commands.spaces.refresh import refresh_spaces as refresh

            refresh(opts, api)
        if check_deleted and isinstance(result, BatchSummary):
            _check_deleted(opts, result)
        auto_commit(opts, "sync")
        return result


def _fetch_recovered(opts: RunOptions, api: PerplexityAPI, result: BatchSummary | Plan) -> None:
    """Threads recovered from Perplexity's data export (`import`) that no listing shows:
    ask the API for them, so a thread it still serves is exported in full."""
    if not isinstance(result, BatchSummary):
        return  # a dry run fetches nothing
    from pplx_export.commands.export.official_import import fetch_recovered

    fetched = fetch_recovered(opts, api)
    if fetched.asked:
        result.official_line = fetched.line()
        result.failed += len(fetched.failures)
        result.failures += fetched.failures


def _check_deleted(opts: RunOptions, summary: BatchSummary) -> None:
    from pplx_export.commands.export.deleted import run_sync_deleted

    summary.note_deleted_check(run_sync_deleted(opts, online=True))


def _repair_index(opts: RunOptions, state: BatchState) -> None:
    """Index every thread marked done that the search index lacks (a kill or a full disk
    between its export and its indexing): a done thread is always searchable."""
    from pplx_export.search.index import repair_missing

    done = [
        str(r["dir"])
        for r in state.threads.values()
        if r.get("status") == "ok" and isinstance(r.get("dir"), str) and r["dir"]
    ]
    repair_missing(opts.out, done)


def auto_commit(opts: RunOptions, command: str) -> CommitResult | None:
    """One git commit of the archive when `auto_commit` is on (a failure is only a warning)."""
    if not opts.config.auto_commit:
        return None
    # Imported here: runs without auto_commit (most) never load git support.
    from pplx_export.pipeline.autocommit import commit_archive

    result = commit_archive(
        opts.out,
        command,
        push=opts.config.auto_push,
        secrets=opts.secrets,
        exclude=(opts.cookies_file, opts.log_file),
    )
    if result.failed:
        # The export is on disk; the commit that should record it is not: the run fails.
        raise CommitFailed(result.warning)
    return result
