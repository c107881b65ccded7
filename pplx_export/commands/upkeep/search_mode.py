"""`search-mode-backfill`: fill `search_mode` into index rows (protocol.md §4.4).

The listing never carries `search_mode`, yet `batch --mode` is exact only with it. For every
row of every `index/library_<account>.json` without one: the exported thread's raw files
first (`raw_entries.json`, `raw_blocks.json`: the raw platform value of the most specific
mode among all entries wins), with zero requests; a row whose thread has no raw file yet is
asked online (plain thread GET, with the session of the index's account) unless `--offline`.
A thread whose raw files name no mode is left as it is: the API would answer the same.

The index is saved every 25 rows filled, at the end, and on the way out of Ctrl-C or an auth
stop; `index` keeps the enrichment on later refreshes.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from pplx_export.archive.paths import INDEX_DIR
from pplx_export.archive.raw import RAW_BLOCKS, RAW_ENTRIES
from pplx_export.archive.sweep import sweep_temp_files
from pplx_export.archive.thread_docs import ArchivedThread, archived_threads
from pplx_export.commands.upkeep.accounts import AccountSessions, AuthStreak, OpenApi, account_for
from pplx_export.commands.upkeep.resumable import resumable
from pplx_export.commands.upkeep.tally import BackfillTally
from pplx_export.context import RunOptions
from pplx_export.errors import ApiError, AuthError, EntryExpired, SchemaError
from pplx_export.models import JSON
from pplx_export.parse.mode import aggregate_search_mode
from pplx_export.progress import progress_reporter
from pplx_export.store.batch_state import ERROR_MAX
from pplx_export.store.library_index import indexed_accounts, load_index, save_index
from pplx_export.store.lock import archive_lock
from pplx_export.util.jsonobj import attrs_json
from pplx_export.util.jsontext import loads
from pplx_export.util.lenient import as_dict, as_list, as_str

log = logging.getLogger(__name__)

CHECKPOINT_EVERY = 25
KEY = "search_mode"


@dataclass
class SearchModeResult(BackfillTally):
    offline: bool
    filled_local: int = 0
    filled_online: int = 0
    unknown: int = 0  # raw files (or the API) name no search_mode
    not_exported: int = 0  # rows left for an online run (offline only)
    already: int = 0
    gone: int = 0  # deleted or purged on the platform

    def to_json(self) -> JSON:
        keys = "offline filled_local filled_online unknown not_exported already gone"
        return attrs_json(
            self,
            keys + " failed requests elapsed_s failures",
            **self.tally_json("uuid"),
        )

    def line(self) -> str:
        line = (
            f"search-mode-backfill: {self.filled_local} filled from raw files, "
            f"{self.filled_online} online, {self.unknown} unknown, {self.already} already set, "
            f"{self.failed} failed"
        )
        if self.offline:
            return f"{line}, {self.not_exported} not exported (run without --offline)"
        return f"{line}, {self.gone} gone, {self.requests} requests, {self.elapsed:.1f}s"


def local_search_mode(thread: ArchivedThread) -> str | None:
    """The most specific raw `search_mode` in the thread's raw files; None without any."""
    entries: list[Any] = []
    found = False
    for name in (RAW_ENTRIES, RAW_BLOCKS):
        try:
            doc = as_dict(loads((thread.dir / name).read_bytes()))
        except (OSError, ValueError, RecursionError):
            continue
        found = found or name == RAW_ENTRIES
        entries += as_list(doc.get("entries")) + as_list(doc.get("background_entries"))
    return aggregate_search_mode(entries) if found else None


@dataclass
class _Index:
    account: str
    rows: list[dict[str, Any]]
    dirty: int = 0  # rows filled since the last save


def run_search_mode_backfill(
    opts: RunOptions,
    *,
    offline: bool = False,
    limit: int | None = None,
    open_api: OpenApi | None = None,
) -> SearchModeResult:
    """Fill `search_mode` into index rows (see module doc)."""
    started = time.monotonic()
    result = SearchModeResult(offline=offline)
    with archive_lock(opts.out, opts.held_locks):
        sweep_temp_files(opts.out / INDEX_DIR, recursive=False)
        on_disk = archived_threads(opts.out)
        indexes = [
            _Index(name, load_index(opts.out, name).threads) for name in indexed_accounts(opts.out)
        ]
        online: list[tuple[_Index, dict[str, Any]]] = []
        budget = limit
        with resumable(result, started):
            try:
                for index in indexes:
                    for row in index.rows:
                        if as_str(row.get(KEY)):
                            result.already += 1
                            continue
                        if budget is not None:
                            if budget <= 0:
                                break
                            budget -= 1
                        thread = on_disk.get(as_str(row.get("entryUUID")))
                        value = local_search_mode(thread) if thread is not None else None
                        if value is None:
                            online.append((index, row))
                        elif value:
                            _fill(opts, index, row, value)
                            result.filled_local += 1
                        else:
                            result.unknown += 1
                if offline:
                    result.not_exported = len(online)
                elif online:
                    _fill_online(opts, open_api, online, result)
            finally:
                for index in indexes:
                    if index.dirty:
                        save_index(opts.out, index.account, index.rows)
    return result


def _fill(opts: RunOptions, index: _Index, row: dict[str, Any], value: str) -> None:
    row[KEY] = value
    index.dirty += 1
    if index.dirty % CHECKPOINT_EVERY == 0:
        save_index(opts.out, index.account, index.rows)


def _fill_online(
    opts: RunOptions,
    open_api: OpenApi | None,
    work: list[tuple[_Index, dict[str, Any]]],
    result: SearchModeResult,
) -> None:
    streak = AuthStreak()
    with (
        AccountSessions(opts, open_api, counts=result) as sessions,
        progress_reporter("search-mode-backfill", quiet=opts.quiet) as bar,
    ):
        bar.set_total(len(work))
        for index, row in work:
            _fill_one(opts, sessions, index, row, result, streak)
            bar.advance(as_str(row.get("title")))


def _fill_one(
    opts: RunOptions,
    sessions: AccountSessions,
    index: _Index,
    row: dict[str, Any],
    result: SearchModeResult,
    streak: AuthStreak,
) -> None:
    uuid = as_str(row.get("entryUUID"))
    account = account_for(opts, index.account)
    if account is None:
        result.failures.append((uuid, f"index account {index.account!r} is not in the config"))
        return
    try:
        plain = sessions.api(account).thread(uuid)
    except EntryExpired as exc:  # ENTRY_DELETED too: nothing left to ask
        streak.ok()
        result.gone += 1
        log.info("thread %s: %s", uuid, exc.reason)
        return
    except AuthError as exc:
        result.failures.append((uuid, f"AuthError: {exc.reason}"[:ERROR_MAX]))
        streak.failed(exc)
        return
    except (ApiError, SchemaError) as exc:
        streak.ok()
        result.failures.append((uuid, f"{type(exc).__name__}: {exc}"[:ERROR_MAX]))
        log.warning("thread %s: search_mode not fetched: %s", uuid, exc)
        return
    streak.ok()
    value = aggregate_search_mode(
        as_list(plain.get("entries")) + as_list(plain.get("background_entries"))
    )
    if value:
        _fill(opts, index, row, value)
        result.filled_online += 1
    else:
        result.unknown += 1
