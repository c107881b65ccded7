"""Per-account sessions and the auth fail-fast rule, for commands that walk the whole archive.

The backfills (`sync-deleted --online`, `usage-backfill`, `assets-backfill`,
`search-mode-backfill`) ask about each thread with the session of the account that exported
it (`thread.json.export_via`): another account's thread answers 403. `AccountSessions` opens
one `PerplexityAPI` per account on first use, all sharing the invocation's pacer
(`RunOptions.runtime`), and closes them at the end. `AuthStreak` is the batch rule: three
authentication failures in a row stop the run (exit 3), everything done so far saved.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from pplx_export.config import Account
from pplx_export.context import RunOptions
from pplx_export.errors import AuthError
from pplx_export.site.api import PerplexityAPI
from pplx_export.site.session import open_session, runtime_for
from pplx_export.util.closing import Closing

log = logging.getLogger(__name__)

AUTH_FAIL_FAST = 3

OpenApi = Callable[[RunOptions], PerplexityAPI]


def account_for(opts: RunOptions, name: str) -> Account | None:
    """The configured account called `name` (the command's own for an empty name, and in
    degraded mode, where no account is configured); None when the config does not know it."""
    if not name or name == opts.account.name:
        return opts.account
    known = opts.config.accounts.get(name)
    if known is not None:
        return known
    return None if opts.config.accounts else opts.account


class CountsRequests(Protocol):
    """A run's result that reports the requests the run made."""

    requests: int


@dataclass
class AccountSessions(Closing):
    """One signed-in session per account, opened on first use (see module doc); `counts`
    gets the requests made from creation to close, however the block ends."""

    opts: RunOptions
    open_api: OpenApi | None = None  # tests substitute a fake; default open_session
    counts: CountsRequests | None = None
    _apis: dict[str, PerplexityAPI] = field(default_factory=dict, init=False)
    _failed: dict[str, AuthError] = field(default_factory=dict, init=False)
    _before: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.counts is not None:
            self._before = self.requests_made

    def api(self, account: Account) -> PerplexityAPI:
        """The account's session; an account that could not sign in raises the same
        AuthError again without another attempt."""
        if account.name in self._failed:
            raise self._failed[account.name]
        api = self._apis.get(account.name)
        if api is None:
            runtime_for(self.opts)  # created here, so every account's copy shares it
            try:
                opener = self.open_api or open_session
                api = opener(dataclasses.replace(self.opts, account=account))
            except AuthError as exc:
                self._failed[account.name] = exc
                raise
            self._apis[account.name] = api
        return api

    @property
    def requests_made(self) -> int:
        return runtime_for(self.opts).stats.total

    def close(self) -> None:
        if self.counts is not None:
            self.counts.requests = self.requests_made - self._before
        for api in self._apis.values():
            api.close()
        self._apis.clear()


@dataclass
class AuthStreak:
    """Consecutive authentication failures; the third stops the run."""

    limit: int = AUTH_FAIL_FAST
    count: int = 0

    def ok(self) -> None:
        self.count = 0

    def failed(self, exc: AuthError) -> None:
        """Count one failure; raise the run-stopping AuthError at the limit."""
        self.count += 1
        if self.count >= self.limit:
            raise AuthError(
                f"{self.limit} authentication failures in a row; stopped, progress saved "
                f"({exc.reason})",
                endpoint=exc.endpoint,
            ) from exc
