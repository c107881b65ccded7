"""`usage-backfill`: credit usage per exported thread into the state store (`credit_usage`).

protocol.md §2.10: `GET /rest/billing/credits/thread-usage?thread_id=<context uuid>`. Every
exported thread (not tombstoned or purged) is asked about once, with the session of the
account that exported it (`thread.json.export_via`), by its **context** UUID
(`thread.json.psc_uuid`; the web UUID would answer 403). Records are keyed by web UUID.

A 403 `thread_usage_forbidden` (another account's thread) is recorded as such and never asked
again; any other failure is not recorded, so the next run retries it. Idempotent and
resumable: threads with a final record are skipped. The files are saved every 25 threads,
at the end, and on the way out of Ctrl-C or an auth stop; a killed run loses at most the
last 24 answers, which the next run fetches again.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pplx_export.archive.paths import INDEX_DIR
from pplx_export.archive.sweep import sweep_temp_files
from pplx_export.archive.thread_docs import ArchivedThread, archived_threads
from pplx_export.commands.upkeep.accounts import AccountSessions, AuthStreak, OpenApi, account_for
from pplx_export.commands.upkeep.resumable import resumable
from pplx_export.commands.upkeep.tally import BackfillTally
from pplx_export.config import Account
from pplx_export.context import RunOptions
from pplx_export.errors import ApiError, AuthError, PermissionDenied, SchemaError
from pplx_export.models import JSON
from pplx_export.progress import progress_reporter
from pplx_export.store.batch_state import ERROR_MAX, BatchState
from pplx_export.store.credit_usage import (
    forbidden_record,
    is_final,
    load_usage,
    save_usage,
    usage_record,
)
from pplx_export.store.lock import archive_lock
from pplx_export.util.jsonobj import attrs_json
from pplx_export.util.timefmt import format_utc, parse_time

log = logging.getLogger(__name__)

CHECKPOINT_EVERY = 25
FORBIDDEN_CODE = "thread_usage_forbidden"


@dataclass
class UsageResult(BackfillTally):
    fetched: int = 0
    forbidden: int = 0
    already: int = 0  # final records from an earlier run
    no_context: int = 0  # thread.json without psc_uuid: nothing to ask with
    no_account: int = 0  # exported by an account the config does not know
    accounts: list[str] = field(default_factory=list)

    def to_json(self) -> JSON:
        return attrs_json(
            self,
            "fetched forbidden already no_context_uuid no_account failed accounts requests"
            " elapsed_s failures",
            no_context_uuid=self.no_context,
            **self.tally_json("uuid"),
        )

    def line(self) -> str:
        return (
            f"usage-backfill: {self.fetched} fetched, {self.forbidden} forbidden, "
            f"{self.already} already known, {self.failed} failed, "
            f"{self.no_context + self.no_account} skipped, {self.requests} requests, "
            f"{self.elapsed:.1f}s"
        )


@dataclass
class _Files:
    """The usage files of every account touched, loaded once, saved when dirty."""

    root: Path
    records: dict[str, dict[str, JSON]] = field(default_factory=dict)
    dirty: set[str] = field(default_factory=set)

    def of(self, account: str) -> dict[str, JSON]:
        if account not in self.records:
            self.records[account] = load_usage(self.root, account)
        return self.records[account]

    def put(self, account: str, uuid: str, record: JSON) -> None:
        self.of(account)[uuid] = record
        self.dirty.add(account)

    def save(self) -> None:
        for account in sorted(self.dirty):
            save_usage(self.root, account, self.records[account])
        self.dirty.clear()


def _plan(
    opts: RunOptions, files: _Files, result: UsageResult
) -> list[tuple[Account, ArchivedThread]]:
    state = BatchState.load(opts.out)
    work: list[tuple[Account, ArchivedThread]] = []
    for uuid, thread in archived_threads(opts.out).items():
        if state.status(uuid) in ("deleted", "expired"):
            continue  # the API no longer knows it
        account = account_for(opts, thread.get("export_via"))
        if account is None:
            result.no_account += 1
            continue
        if not thread.get("psc_uuid"):
            result.no_context += 1
            continue
        if is_final(files.of(account.name).get(uuid)):
            result.already += 1
            continue
        work.append((account, thread))
    floor = datetime.min.replace(tzinfo=UTC)
    work.sort(key=lambda w: parse_time(w[1].get("lastUpdated")) or floor, reverse=True)
    return work


def run_usage_backfill(
    opts: RunOptions, *, limit: int | None = None, open_api: OpenApi | None = None
) -> UsageResult:
    """Fetch the usage of every thread without a final record (see module doc)."""
    started = time.monotonic()
    result = UsageResult()
    files = _Files(opts.out)
    with archive_lock(opts.out, opts.held_locks):
        sweep_temp_files(opts.out / INDEX_DIR, recursive=False)
        work = _plan(opts, files, result)
        if limit is not None:
            work = work[:limit]
        result.accounts = sorted({account.name for account, _ in work})
        if not work:
            result.elapsed = time.monotonic() - started
            return result
        with AccountSessions(opts, open_api, counts=result) as sessions, resumable(result, started):
            try:
                _fetch_all(opts, sessions, files, work, result)
            finally:
                files.save()
    return result


def _fetch_all(
    opts: RunOptions,
    sessions: AccountSessions,
    files: _Files,
    work: list[tuple[Account, ArchivedThread]],
    result: UsageResult,
) -> None:
    streak = AuthStreak()
    with progress_reporter("usage-backfill", quiet=opts.quiet) as bar:
        bar.set_total(len(work))
        for done, (account, thread) in enumerate(work, start=1):
            _fetch_one(sessions, files, account, thread, result, streak)
            bar.advance(thread.get("title"))
            if done % CHECKPOINT_EVERY == 0:
                files.save()


def _fetch_one(
    sessions: AccountSessions,
    files: _Files,
    account: Account,
    thread: ArchivedThread,
    result: UsageResult,
    streak: AuthStreak,
) -> None:
    psc, mode, title = thread.get("psc_uuid"), thread.mode, thread.get("title")
    now = format_utc(datetime.now(UTC))
    try:
        data = sessions.api(account).credit_usage(psc)
    except PermissionDenied as exc:
        streak.ok()
        if exc.code != FORBIDDEN_CODE:
            _failed(result, thread, exc)
            return
        files.put(account.name, thread.uuid, forbidden_record(psc, mode=mode, fetched_at=now))
        result.forbidden += 1
        log.info(
            "thread %s: usage forbidden for %s (another account's thread)",
            thread.uuid,
            account.name,
        )
        return
    except AuthError as exc:
        _failed(result, thread, exc)
        streak.failed(exc)
        return
    except (ApiError, SchemaError) as exc:
        streak.ok()
        _failed(result, thread, exc)
        return
    streak.ok()
    files.put(
        account.name,
        thread.uuid,
        usage_record(psc, data, mode=mode, title=title, fetched_at=now),
    )
    result.fetched += 1


def _failed(result: UsageResult, thread: ArchivedThread, exc: Exception) -> None:
    reason = f"{type(exc).__name__}: {exc}"[:ERROR_MAX]
    result.failures.append((thread.uuid, reason))
    log.warning("thread %s: usage not fetched (retried next run): %s", thread.uuid, reason)
