"""`sync-deleted`: find exported threads gone from the library, confirm, tombstone (§2.11).

Offline (the default) it only lists candidates: threads whose state is `ok` but whose UUID is
in none of the `index/library_*.json` files. The union of every account's index matters: a
thread exported through a space shared by another account is in that account's listing,
not in ours. A thread exported from a space listing (`space-index`, other members' threads
included) is judged against that space: while its `index/space_<slug>.json` lists it, it is
no candidate (the library of none of our accounts ever lists another member's thread, so
it would otherwise be a candidate forever). When no index with rows can be read, nothing is
a candidate (an empty or missing listing says nothing about deletions) and the reason is
given.

`--online` asks the API about each candidate with the session of the account that exported
it (`thread.json.export_via`): `ENTRY_DELETED`, `ENTRY_EXPIRED` or a 404 confirm the
deletion; the thread.json of every directory of the thread gets `"remote_deleted": "<UTC
ISO>"` (never overwritten; no file deleted or moved) and then the state becomes `deleted`
with a note. The order makes a killed run harmless: a tombstoned thread whose state still
says `ok` is simply confirmed again next time. A thread that is still there was a false
positive and nothing changes; 5xx, network and permission errors leave the candidate for the
next run; three authentication failures in a row stop the run (exit 3).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pplx_export.archive.paths import INDEX_DIR
from pplx_export.archive.sweep import sweep_temp_files
from pplx_export.archive.thread_docs import ArchivedThread, add_remote_deleted, archived_threads
from pplx_export.commands.upkeep.accounts import AccountSessions, AuthStreak, OpenApi, account_for
from pplx_export.commands.upkeep.resumable import resumable
from pplx_export.context import RunOptions
from pplx_export.errors import (
    ApiError,
    AuthError,
    EntryDeleted,
    EntryExpired,
    NotFound,
)
from pplx_export.models import JSON
from pplx_export.progress import progress_reporter
from pplx_export.store.batch_state import ERROR_MAX, BatchState
from pplx_export.store.library_index import indexed_accounts, load_index
from pplx_export.store.lock import archive_lock
from pplx_export.store.space_files import iter_listings
from pplx_export.util.lenient import as_str
from pplx_export.util.timefmt import format_utc, parse_time

log = logging.getLogger(__name__)

NO_INDEX = "no readable library index (run `pplx-export index` first): nothing is a candidate"


@dataclass
class Candidate:
    uuid: str
    title: str
    last_updated: str
    account: str  # thread.json export_via ("" when the thread has no directory)
    dirs: list[Path] = field(default_factory=list)

    def to_json(self, root: Path) -> JSON:
        return {
            "uuid": self.uuid,
            "title": self.title,
            "lastUpdated": self.last_updated,
            "account": self.account,
            "dirs": [d.relative_to(root).as_posix() for d in self.dirs],
        }


@dataclass
class DeletedResult:
    root: Path
    online: bool
    candidates: list[Candidate] = field(default_factory=list)
    reason: str = ""  # why nothing could be a candidate
    indexes: list[str] = field(default_factory=list)  # accounts whose index was used
    confirmed: list[tuple[str, str]] = field(default_factory=list)  # (uuid, note)
    still_there: list[str] = field(default_factory=list)
    left: list[tuple[str, str]] = field(default_factory=list)  # (uuid, why): next run
    requests: int = 0
    elapsed: float = 0.0

    @property
    def failed(self) -> int:
        return len(self.left)

    def to_json(self) -> JSON:
        doc: JSON = {
            "online": self.online,
            "indexes": self.indexes,
            "candidates": [c.to_json(self.root) for c in self.candidates],
        }
        if self.reason:
            doc["reason"] = self.reason
        if self.online:
            doc.update(
                {
                    "confirmed": [{"uuid": u, "note": n} for u, n in self.confirmed],
                    "still_there": self.still_there,
                    "left_for_next_run": [{"uuid": u, "reason": r} for u, r in self.left],
                    "requests": self.requests,
                    "elapsed_s": round(self.elapsed, 3),
                }
            )
        return doc

    def line(self) -> str:
        if self.reason:
            return f"sync-deleted: {self.reason}"
        head = f"sync-deleted: {len(self.candidates)} candidate(s)"
        if not self.online:
            return f"{head} (offline; --online confirms and tombstones them)"
        return (
            f"{head}: {len(self.confirmed)} deleted, {len(self.still_there)} still there, "
            f"{len(self.left)} left for the next run, {self.requests} requests, "
            f"{self.elapsed:.1f}s"
        )

    def lines(self) -> list[str]:
        """The candidate list (stdout): newest first, with the account that exported each."""
        return [
            f"{c.last_updated[:19] or '-':19}  {c.account or '-':12}  {c.uuid}  {c.title}"
            for c in self.candidates
        ]


def find_candidates(
    root: Path, state: BatchState, *, limit: int | None = None
) -> tuple[list[Candidate], list[str], str]:
    """(candidates newest first, accounts whose index was read, reason when none can be).

    Read-only: a corrupt index counts as unreadable and is left where it is.
    """
    indexed: set[str] = set()
    used: list[str] = []
    for account in indexed_accounts(root):
        index = load_index(root, account, repair=False)
        if index.threads:
            used.append(account)
            indexed.update(as_str(row.get("entryUUID")) for row in index.threads)
    if not used:
        return [], [], NO_INDEX
    listings, _problems = iter_listings(root)  # unreadable ones: `spaces` reports them
    for listing in listings:
        indexed.update(as_str(row.get("entryUUID")) for row in listing.threads)
    on_disk = archived_threads(root)
    found: list[Candidate] = []
    for uuid, record in state.threads.items():
        if as_str(record.get("status")) != "ok" or uuid in indexed:
            continue
        thread: ArchivedThread | None = on_disk.get(uuid)
        found.append(
            Candidate(
                uuid=uuid,
                title=(thread.get("title") if thread else "") or as_str(record.get("title")),
                last_updated=(thread.get("lastUpdated") if thread else "")
                or as_str(record.get("lastUpdated")),
                account=thread.get("export_via") if thread else "",
                dirs=list(thread.dirs) if thread else [],
            )
        )
    floor = datetime.min.replace(tzinfo=UTC)
    found.sort(key=lambda c: (parse_time(c.last_updated) or floor, c.uuid), reverse=True)
    return (found[:limit] if limit is not None else found), used, ""


def run_sync_deleted(
    opts: RunOptions,
    *,
    online: bool = False,
    limit: int | None = None,
    open_api: OpenApi | None = None,
) -> DeletedResult:
    """List the candidates; with `online`, confirm each and tombstone (see module doc)."""
    started = time.monotonic()
    result = DeletedResult(root=opts.out, online=online)
    with archive_lock(opts.out, opts.held_locks):
        if online:
            # A run killed while saving the state left its temp file in index/ (perhaps
            # after its last tombstone, so this run may find no candidate: swept first).
            sweep_temp_files(opts.out / INDEX_DIR, recursive=False)
        state = BatchState.load(opts.out, repair=online)  # offline: read-only
        result.candidates, result.indexes, result.reason = find_candidates(
            opts.out, state, limit=limit
        )
        if not online or not result.candidates:
            return result
        # Each tombstone is committed when it is made: nothing to save on the way out.
        with AccountSessions(opts, open_api, counts=result) as sessions, resumable(result, started):
            _confirm_all(opts, sessions, state, result)
    return result


def _confirm_all(
    opts: RunOptions, sessions: AccountSessions, state: BatchState, result: DeletedResult
) -> None:
    streak = AuthStreak()
    with progress_reporter("sync-deleted", quiet=opts.quiet) as bar:
        bar.set_total(len(result.candidates))
        for cand in result.candidates:
            _confirm_one(opts, sessions, state, result, cand, streak)
            bar.advance(cand.title)


def _confirm_one(
    opts: RunOptions,
    sessions: AccountSessions,
    state: BatchState,
    result: DeletedResult,
    cand: Candidate,
    streak: AuthStreak,
) -> None:
    for directory in cand.dirs:
        # A run killed mid-tombstone left its temp file next to thread.json; this candidate
        # is the one it was writing (its state still says ok), and the lock is ours.
        sweep_temp_files(directory, recursive=False)
    account = account_for(opts, cand.account)
    if account is None:
        why = f"exported by account {cand.account!r}, which is not in the config"
        result.left.append((cand.uuid, why))
        log.warning("thread %s: %s", cand.uuid, why)
        return
    try:
        sessions.api(account).thread(cand.uuid, max_pages=1)
    except EntryDeleted as exc:
        note = f"ENTRY_DELETED ({exc.reason})"
    except EntryExpired as exc:
        note = f"ENTRY_EXPIRED ({exc.reason})"
    except NotFound as exc:
        note = f"404 ({exc.reason})"
    except AuthError as exc:
        result.left.append((cand.uuid, f"AuthError: {exc.reason}"))
        log.error("thread %s: authentication failed: %s", cand.uuid, exc.reason)
        streak.failed(exc)
        return
    except ApiError as exc:
        streak.ok()
        result.left.append((cand.uuid, f"{type(exc).__name__}: {exc.reason}"[:ERROR_MAX]))
        log.warning("thread %s: left for the next run: %s", cand.uuid, exc.reason)
        return
    else:
        streak.ok()
        result.still_there.append(cand.uuid)
        log.info(
            "thread %s (%s) is still there: not in any index, but not deleted",
            cand.uuid,
            cand.title,
        )
        return
    streak.ok()
    stamp = format_utc(datetime.now(UTC))
    for directory in cand.dirs:
        if add_remote_deleted(directory, stamp):
            log.debug("tombstoned %s", directory)
    note = f"confirmed by sync-deleted: {note}"[:ERROR_MAX]
    state.mark_gone(
        "deleted", cand.uuid, note=note, last_updated=cand.last_updated, title=cand.title
    )
    result.confirmed.append((cand.uuid, note))
    log.warning("thread %s (%s) was deleted on Perplexity: tombstoned", cand.uuid, cand.title)
