"""Incremental refresh of the library index (protocol.md §2.2, product.md `index`).

The network layer yields listing rows newest-first, page by page, from a generator; this
module decides how many of them to consume. Incremental mode stops after
`STOP_RUN` consecutive rows that are already known with an identical `lastUpdated`: a
continued thread moves to the top of the listing, so once a run of untouched rows is seen,
everything below it is untouched too. The fetched head is merged with the stored tail.
`--full` consumes everything and replaces the index by exactly the fetched set, which is how
deletions and space moves of older threads are noticed. An incremental walk that reached the
end of the listing without its early stop saw everything too, so it does the same (and counts
as a full sweep): a small library needs no `--full` for `sync --check-deleted` to work. An
empty listing never empties a stored index (it says nothing about deletions). `sync` sweeps
the whole listing itself when the last full sweep is older than `full_index_days`
(`full_sweep_due`); the count of incremental runs is kept for `status`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pplx_export.config import Config
from pplx_export.parse.last_updated import same_last_updated
from pplx_export.store.docs import load_bytes, save_bytes
from pplx_export.store.library_index import (
    SEARCH_MODE_KEY,
    load_index,
    normalize_row,
    save_index,
)
from pplx_export.util.jsonobj import attrs_json
from pplx_export.util.lenient import as_dict, as_str, lenient_int
from pplx_export.util.timefmt import format_utc, parse_time

log = logging.getLogger(__name__)

STOP_RUN = 25  # consecutive known-unchanged rows that end an incremental refresh
FULL_REMINDER_RUNS = 10  # incremental runs without a full sweep: `status` says so
FULL_INDEX_DAYS = 7.0  # default `full_index_days`


@dataclass
class IndexResult:
    rows: list[dict[str, Any]]  # the new index, newest first
    fetched: int = 0  # rows consumed from the listing (duplicates included)
    new: int = 0  # UUIDs not in the old index
    updated: int = 0  # known UUIDs whose lastUpdated changed
    removed: int = 0  # complete walks only: old UUIDs absent from the listing
    early_stopped: bool = False
    full: bool = False
    complete: bool = False  # the whole listing was seen (full, or no early stop)
    written: bool = False  # set by update_library_index when the file changed
    full_reminder: bool = False  # set by update_library_index (see record_index_run)
    account: str = ""  # set by update_library_index
    listing: str = ""  # the library listing that answered ("rest" | "graphql")

    def line(self) -> str:
        """The one-line report (also logged when the refresh ends)."""
        return (
            f"index {self.account}: {self.fetched} rows fetched, {self.new} new, "
            f"{self.updated} updated{', early stop' if self.early_stopped else ''}"
            f"{f', {self.removed} gone' if self.full or self.removed else ''}"
            f"; {len(self.rows)} threads"
        )

    def to_json(self) -> dict[str, Any]:
        keys = "account full fetched new updated removed early_stopped complete threads written"
        keys += " full_index_due listing"
        return attrs_json(self, keys, threads=len(self.rows), full_index_due=self.full_reminder)


def refresh_index(
    rows: Iterable[dict[str, Any]],
    old: list[dict[str, Any]],
    *,
    full: bool,
    stop_run: int = STOP_RUN,
) -> IndexResult:
    """Merge freshly listed rows (newest first, lazily fetched) into the old index.

    Consumption stops right after the `stop_run`-th consecutive known-unchanged row, so a
    lazy iterator is never asked for the next row (and the network for the next page).
    Rows repeated in the listing (pagination shifted while new threads arrived) keep their
    first, newest, occurrence. A row without `entryUUID` is kept but cannot be "known".
    """
    old_rows = [normalize_row(r) for r in old]
    old_by_uuid = {r["entryUUID"]: r for r in old_rows if r["entryUUID"]}
    result = IndexResult(rows=[], full=full)
    head: list[dict[str, Any]] = []
    seen: set[str] = set()
    run = 0
    for raw in rows:
        result.fetched += 1
        row = normalize_row(raw)
        uuid = row["entryUUID"]
        if _fetched_again(row, seen, head):
            continue
        if uuid:
            seen.add(uuid)
        known = old_by_uuid.get(uuid) if uuid else None
        if known is not None:
            _carry_over(row, known)
        head.append(row)
        if known is None:
            result.new += 1 if uuid else 0
            run = 0
        elif same_last_updated(known["lastUpdated"], row["lastUpdated"]):
            run += 1
        else:
            result.updated += 1
            run = 0
        if not full and run >= stop_run:
            result.early_stopped = True
            break
    # Not early-stopped: the generator ran dry, so the listing was walked to its end.
    if full or (not result.early_stopped and result.fetched > 0):
        result.complete = True
        result.removed = sum(1 for uuid in old_by_uuid if uuid not in seen)
        result.rows = head
        return result
    # Incremental: the head wins; the old tail keeps its order (it is already newest-first
    # relative to itself, and nothing in it changed, or it would have been in the head).
    # Rows without a UUID cannot be matched; an identical copy fetched again must not pile up.
    tail = [r for r in old_rows if not _fetched_again(r, seen, head)]
    result.rows = head + tail
    return result


def _carry_over(row: dict[str, Any], known: dict[str, Any]) -> None:
    """Keep what the stored row knows and this listing does not say.

    `search_mode` is never in a listing (§2.2: the archive enriches rows with it), and
    GraphQL rows carry no `context_uuid` (REST rows do, §9.3; it never changes and is what
    usage, read receipts and space moves are asked by). The result is re-normalised so the
    key order stays the stored one.
    """
    for key in (SEARCH_MODE_KEY, "context_uuid"):
        if key not in row and known.get(key):
            row[key] = known[key]
    row.update(normalize_row(row))


def _fetched_again(row: dict[str, Any], seen: set[str], head: list[dict[str, Any]]) -> bool:
    """Already in the head: same UUID, or (UUID-less rows cannot be matched) an identical row."""
    uuid = row["entryUUID"]
    return uuid in seen if uuid else row in head


# ------------------------------------------- the index_state document (index_state.json before)

# The run counters of each account live in the archive, not in the user's config file: an
# `index` run rewrote the config (comments and layout kept, but still the user's file) only
# to store counters. Archives of earlier versions have them in the config's
# `[index_state.<account>]`: read there until the archive has the account. Kept in the state
# store (store/docs.py; `index/index_state.json` before).
INDEX_STATE = "index_state"


@dataclass
class IndexState:
    extracted_at: str = ""
    last_full_index_at: str = ""
    incremental_runs_since_full: int = 0
    listing: str = ""  # the library listing that answered last ("rest" | "graphql")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _load_states(root: Path) -> dict[str, Any]:
    try:
        data = load_bytes(root, INDEX_STATE)
        return as_dict(json.loads(data)) if data is not None else {}
    except (OSError, ValueError) as exc:
        log.warning("%s unreadable (%s); the run counters start again", INDEX_STATE, exc)
        return {}


def _of(table: Any) -> IndexState:
    table = as_dict(table)
    return IndexState(
        extracted_at=as_str(table.get("extracted_at")),
        last_full_index_at=as_str(table.get("last_full_index_at")),
        incremental_runs_since_full=lenient_int(table.get("incremental_runs_since_full")),
        listing=as_str(table.get("listing")),
    )


def read_index_state(root: Path, account: str, config: Config | None = None) -> IndexState:
    """The bookkeeping of one account: from the archive, else (an archive of an earlier
    version) from the config's `[index_state.<account>]`. Creates nothing."""
    states = _load_states(root)
    if account in states:
        return _of(states[account])
    if config is not None:
        return _of(as_dict(config.doc.unwrap().get("index_state")).get(account))
    return IndexState()


def record_index_run(
    root: Path,
    account: str,
    *,
    full: bool,
    now: datetime,
    listing: str = "",
    config: Config | None = None,
) -> bool:
    """Stamp the account's counters in the archive's state store after a successful refresh;
    True when a full sweep is due. The config file is never written."""
    state = read_index_state(root, account, config)
    stamp = format_utc(now)
    state.incremental_runs_since_full = 0 if full else state.incremental_runs_since_full + 1
    state.extracted_at = stamp
    if full:
        state.last_full_index_at = stamp
    if listing:
        # What `[network] listing = "auto"` tries first next time.
        state.listing = listing
    states = _load_states(root)
    states[account] = state.to_json()
    save_bytes(root, INDEX_STATE, json.dumps(states, ensure_ascii=False, indent=1) + "\n")
    return state.incremental_runs_since_full >= FULL_REMINDER_RUNS


def update_library_index(
    root: Path,
    account: str,
    fetched: Iterable[dict[str, Any]],
    *,
    full: bool,
    now: datetime,
    config: Config | None = None,
    listing: Callable[[], str] | None = None,
) -> IndexResult:
    """Load, refresh from `fetched`, save (only when the bytes change), stamp the run
    counters (the state store's `index_state`; `config`: where an earlier version kept them).

    `fetched` is the network layer's lazy listing; the caller wires it. The counters are only
    stamped after the listing was consumed without an exception, so a failed refresh never
    counts as a run; `listing` then says which library listing answered (remembered for
    `listing = "auto"`).
    """
    old = load_index(root, account)
    result = refresh_index(fetched, old.threads, full=full)
    result.written = save_index(root, account, result.rows)
    result.account = account
    log.info("%s", result.line())
    used = listing() if listing is not None else ""
    result.full_reminder = record_index_run(
        root, account, full=result.complete, now=now, listing=used, config=config
    )
    if listing is not None:
        result.listing = listing()
    return result


def full_sweep_due(root: Path, config: Config, account: str, now: datetime) -> bool:
    """`sync`'s own full sweep: the last one is older than `full_index_days` (or there was
    none yet, on an account that has been indexed before). 0 days: never."""
    days = config.full_index_days
    if days <= 0:
        return False
    state = read_index_state(root, account, config)
    if not state.extracted_at:
        return False  # the first index walks everything anyway
    last = parse_time(state.last_full_index_at)
    return last is None or (now - last).total_seconds() > days * 86400
