"""Every configured account in turn: `sync`, `index` and `batch` without `--account` (issue 32).

A config with several accounts archives all of them: each account runs with its own session
(one shared pacer), one after the other, default account first, then the config's order.
One account failing (signed out, a 403, a server that gave up) is reported and the others
still run; the exit code then says so (`AccountsFailed`: the first failed account's code, so
3 when a session was refused). `--account NAME` narrows the run to one account, and a
config with one account (or none: degraded mode) runs as before, with the same output.

`sync` also records each account's outcome in the `sync_runs` document (status' staleness
warning, `schedule --status`), and runs the deletion check once, after every account's
index is fresh (its candidates are judged against the union of the indexes).
"""

from __future__ import annotations

import dataclasses
import logging
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from pplx_export.commands.export.batch import BatchFilters, BatchSummary
from pplx_export.commands.export.listing import IndexResult
from pplx_export.commands.export.plan import Plan
from pplx_export.config import Account
from pplx_export.context import RunOptions
from pplx_export.errors import (
    AccountsFailed,
    ArchiveBusy,
    ConfigError,
    DiskFull,
    Interrupted,
    PplxError,
    ThreadsFailed,
    UsageError,
)
from pplx_export.models import JSON
from pplx_export.store.sync_runs import record_run

log = logging.getLogger(__name__)

T = TypeVar("T")

# Errors that end the whole run, not one account's part of it.
_RUN_STOPPERS = (ArchiveBusy, ConfigError, DiskFull, Interrupted, UsageError)


def selected_accounts(opts: RunOptions) -> list[Account]:
    """The accounts a run without `--account` walks (see module doc)."""
    cfg = opts.config
    if opts.account_given or not cfg.exists or len(cfg.accounts) < 2:
        return [opts.account]
    first = cfg.accounts.get(cfg.default_account) or next(iter(cfg.accounts.values()))
    return [first, *(acc for acc in cfg.accounts.values() if acc.name != first.name)]


@dataclass
class AccountRun(Generic[T]):
    account: str
    result: T | None = None
    error: str = ""
    exit_code: int = 0


@dataclass
class EveryAccount(Generic[T]):
    """The per-account outcomes of one run, in run order."""

    runs: list[AccountRun[T]] = field(default_factory=list)

    @property
    def single(self) -> bool:
        return len(self.runs) == 1

    @property
    def failed_accounts(self) -> list[AccountRun[T]]:
        return [run for run in self.runs if run.error]

    def results(self) -> list[T]:
        return [run.result for run in self.runs if run.result is not None]

    def raise_for_failed_accounts(self) -> None:
        failed = self.failed_accounts
        if failed:
            names = ", ".join(run.account for run in failed)
            raise AccountsFailed(
                f"{len(failed)} of {len(self.runs)} accounts failed ({names}); the others ran",
                exit_code=failed[0].exit_code,
            )


def for_each_account(
    opts: RunOptions, work: Callable[[RunOptions], T], *, what: str = "run"
) -> EveryAccount[T]:
    """`work` once per selected account; an account's failure is recorded, not raised (a
    single account's is raised: nothing else would run anyway, and the output stays as it
    was before accounts were walked)."""
    accounts = selected_accounts(opts)
    outcome: EveryAccount[T] = EveryAccount()
    for account in accounts:
        # dataclasses.replace shares the held locks and the network runtime: one pacer.
        sub = dataclasses.replace(opts, account=account)
        if len(accounts) == 1:
            outcome.runs.append(AccountRun(account.name, result=work(sub)))
            break
        try:
            result = work(sub)
        except _RUN_STOPPERS:
            raise
        except PplxError as exc:
            log.error("%s %s failed: %s", what, account.name, exc)
            outcome.runs.append(AccountRun(account.name, error=str(exc), exit_code=exc.exit_code))
        else:
            outcome.runs.append(AccountRun(account.name, result=result))
    return outcome


@dataclass
class SyncOutcome:
    """`sync`/`batch` over every selected account: their summaries and the total."""

    accounts: EveryAccount[BatchSummary]
    total: BatchSummary
    deleted_check_error: str = ""

    @property
    def failed(self) -> int:
        return self.total.failed

    def lines(self, width: int = 80) -> list[str]:
        out: list[str] = []
        for run in self.accounts.runs:
            if run.result is not None:
                text = f"{run.account}: {run.result.line(width - len(run.account) - 2)}"
                out.append(text)
            else:
                wrapped = textwrap.wrap(
                    f"{run.account}: failed: {run.error}", width, subsequent_indent="  "
                )
                out.append("\n".join(wrapped))
        n = len(self.accounts.runs)
        bad = len(self.accounts.failed_accounts)
        head = f"total ({n} accounts{f', {bad} failed' if bad else ''}): "
        total = dataclasses.replace(self.total, deleted_check_line="")
        out.append(head + total.line(width - len(head)))
        if self.total.deleted_check_line:
            out.append(self.total.deleted_check_line)
        if self.deleted_check_error:
            out.append(f"deletion check failed: {self.deleted_check_error}")
        return out

    def raise_for_failures(self) -> None:
        self.accounts.raise_for_failed_accounts()
        if self.deleted_check_error:
            raise PplxError(f"the deletion check failed: {self.deleted_check_error}")
        if self.total.failed:
            raise ThreadsFailed(f"{self.total.failed} thread(s) failed; rerun to retry them")

    def to_json(self) -> JSON:
        accounts: list[Any] = []
        for run in self.accounts.runs:
            if run.result is not None:
                accounts.append({"account": run.account, **run.result.to_json()})
            else:
                accounts.append(
                    {"account": run.account, "error": run.error, "exit_code": run.exit_code}
                )
        doc: JSON = {"accounts": accounts, "total": self.total.to_json()}
        if self.deleted_check_error:
            doc["deleted_check_error"] = self.deleted_check_error
        return doc


def add_up(results: list[BatchSummary]) -> BatchSummary:
    total = BatchSummary()
    for one in results:
        for name in (
            "ok",
            "skipped",
            "failed",
            "expired",
            "deleted",
            "early_stopped",
            "variant_hits",
            "requests",
            "elapsed",
        ):
            setattr(total, name, getattr(total, name) + getattr(one, name))
        total.failures += one.failures
    return total


def run_sync_accounts(
    opts: RunOptions,
    *,
    full: bool = False,
    check_deleted: bool = False,
    refresh_spaces: bool = False,
    now: Callable[[], datetime] | None = None,
) -> SyncOutcome:
    """`sync` for every selected account (see module doc)."""
    from pplx_export.commands.export.batch import run_sync

    clock = now or (lambda: datetime.now(UTC))
    accounts = selected_accounts(opts)
    first = accounts[0].name
    last = accounts[-1].name

    def one(sub: RunOptions) -> BatchSummary:
        name = sub.account.name
        try:
            result = run_sync(
                sub,
                full=full,
                # The deletion check judges against every account's index: after the last.
                check_deleted=(check_deleted or full) and name == last,
                # Spaces are fetched once (other accounts are asked for denied spaces).
                refresh_spaces=(refresh_spaces or full) and name == first,
            )
        except _RUN_STOPPERS:
            raise
        except PplxError as exc:
            if sub.out.is_dir():  # a failed sign-in never creates the archive
                record_run(sub.out, name, now=clock(), result=f"error: {exc}"[:300])
            raise
        assert isinstance(result, BatchSummary)
        verdict = "ok" if not result.failed else f"{result.failed} thread(s) failed"
        record_run(sub.out, name, now=clock(), result=verdict)
        return result

    every = for_each_account(opts, one, what="sync")
    if every.single:
        total = every.runs[0].result or BatchSummary()
        return SyncOutcome(every, total)
    total = add_up(every.results())
    checked = [r for r in every.results() if r.deleted_check is not None]
    if checked:
        total.deleted_check = checked[-1].deleted_check
        total.deleted_check_line = checked[-1].deleted_check_line
    outcome = SyncOutcome(every, total)
    if (check_deleted or full) and every.runs[-1].error:
        # The last account failed before its deletion check: run it on its own.
        outcome.deleted_check_error = _deleted_check(opts, total)
    return outcome


def _deleted_check(opts: RunOptions, total: BatchSummary) -> str:
    from pplx_export.commands.export.deleted import run_sync_deleted

    try:
        checked = run_sync_deleted(opts, online=True)
    except _RUN_STOPPERS:
        raise
    except PplxError as exc:
        return str(exc)
    total.note_deleted_check(checked)
    return ""


def run_batch_accounts(opts: RunOptions, work: Callable[[RunOptions], Any]) -> SyncOutcome:
    """`batch` (not a dry run) for every selected account."""
    every: EveryAccount[BatchSummary] = for_each_account(opts, work, what="batch")
    total = every.runs[0].result if every.single else add_up(every.results())
    return SyncOutcome(every, total or BatchSummary())


@dataclass
class IndexReport:
    """`index` over every selected account."""

    accounts: EveryAccount[IndexResult]

    @property
    def single(self) -> bool:
        return self.accounts.single

    def total_line(self) -> str:
        results = self.accounts.results()
        bad = len(self.accounts.failed_accounts)
        return (
            f"index total ({len(self.accounts.runs)} accounts"
            f"{f', {bad} failed' if bad else ''}): "
            f"{sum(r.new for r in results)} new, {sum(r.updated for r in results)} updated; "
            f"{sum(len(r.rows) for r in results)} rows"
        )

    def to_json(self) -> JSON:
        if self.single:
            only = self.accounts.runs[0].result
            return only.to_json() if only is not None else {}
        return {
            "accounts": [
                run.result.to_json()
                if run.result is not None
                else {"account": run.account, "error": run.error, "exit_code": run.exit_code}
                for run in self.accounts.runs
            ]
        }

    def raise_for_failed_accounts(self) -> None:
        self.accounts.raise_for_failed_accounts()


def run_index_accounts(opts: RunOptions, *, full: bool) -> IndexReport:
    from pplx_export.commands.export.batch import run_index

    return IndexReport(for_each_account(opts, lambda sub: run_index(sub, full=full), what="index"))


@dataclass
class AccountPlans:
    """`batch --dry-run` over every selected account: one plan each."""

    plans: list[tuple[str, Plan]]

    @property
    def single(self) -> bool:
        return len(self.plans) == 1

    @property
    def only(self) -> Plan:
        return self.plans[0][1]

    def lines(self) -> list[str]:
        out: list[str] = []
        for account, plan in self.plans:
            first, *rest = plan.lines()
            out += [f"{account}: {first}", *rest]
        return out

    def to_json(self) -> JSON:
        return {"accounts": [{"account": a, **plan.to_json()} for a, plan in self.plans]}


def plan_accounts(opts: RunOptions, filters: BatchFilters) -> AccountPlans:
    """Each selected account's plan (no request; a plan cannot fail per account)."""
    from pplx_export.commands.export.batch import plan_batch

    plans = []
    for account in selected_accounts(opts):
        plan, _state = plan_batch(dataclasses.replace(opts, account=account), filters)
        plans.append((account.name, plan))
    return AccountPlans(plans)
