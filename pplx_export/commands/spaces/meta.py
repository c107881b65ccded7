"""`spaces --fetch-meta`: each space's metadata into the state store (protocol §2.6).

A space this account may not view answers `200 status: failed` (`*_NOT_ALLOWED`), which the
client raises as PermissionDenied; a 404 is what a private space looks like to an outsider.
Either way the space is asked again with each other configured account, in name order,
signing each in once and only when needed. A space nobody can see is recorded with its
error, never dropped. Other API errors (after the client's retries) are recorded on the
space and the run goes on; an authentication failure of the running account stops it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field, replace

from pplx_export.context import RunOptions
from pplx_export.errors import ApiError, AuthError, NotFound, PermissionDenied
from pplx_export.models import JSON
from pplx_export.site.api import PerplexityAPI
from pplx_export.store.space_files import error_record, meta_record

log = logging.getLogger(__name__)

Opener = Callable[[RunOptions], PerplexityAPI]


@dataclass
class MetaOutcome:
    records: dict[str, JSON] = field(default_factory=dict)  # slug -> space_meta record
    fetched: int = 0
    via_other: int = 0  # seen only through another account
    failed: int = 0
    requests: int = 0


class AccountPool:
    """One signed-in API per account, opened on first use and closed together."""

    def __init__(self, opts: RunOptions, opener: Opener, first: PerplexityAPI | None) -> None:
        self.opts = opts
        self.opener = opener
        self.stack = ExitStack()
        self.apis: dict[str, PerplexityAPI | None] = {}
        # A session handed in (sync's) has made requests already: count only ours.
        self.before = first.requests_made if first is not None else 0
        if first is not None:
            self.apis[opts.account.name] = first

    def names(self) -> list[str]:
        """The running account first, then every other configured account by name."""
        others = sorted(n for n in self.opts.config.accounts if n != self.opts.account.name)
        return [self.opts.account.name, *others]

    def api(self, name: str) -> PerplexityAPI | None:
        if name in self.apis:
            return self.apis[name]
        account = self.opts.account if name == self.opts.account.name else None
        account = account or self.opts.config.accounts[name]
        try:
            api: PerplexityAPI | None = self.stack.enter_context(
                self.opener(replace(self.opts, account=account))
            )
        except AuthError as exc:
            if name == self.opts.account.name:
                raise
            log.warning("account %s cannot sign in (%s); not asked about spaces", name, exc)
            api = None
        self.apis[name] = api
        return api

    def requests(self) -> int:
        return sum(a.requests_made for a in self.apis.values() if a is not None) - self.before

    def close(self) -> None:
        self.stack.close()


def _denied_reason(exc: ApiError) -> str:
    return exc.code or type(exc).__name__


def fetch_one(pool: AccountPool, slug: str) -> tuple[JSON, str]:
    """(record, the account that saw it or "") for one space."""
    denied: list[str] = []
    reasons: list[str] = []
    for name in pool.names():
        api = pool.api(name)
        if api is None:
            continue
        try:
            collection = api.get_collection(slug)
        except (PermissionDenied, NotFound) as exc:
            denied.append(name)
            reasons.append(f"{name}: {_denied_reason(exc)}")
            log.info("space %s: not visible to %s (%s)", slug, name, _denied_reason(exc))
            continue
        except AuthError:
            raise
        except ApiError as exc:
            reasons.append(f"{name}: {exc.reason}")
            log.warning("space %s: %s", slug, exc)
            break  # network trouble after the client's retries: not a visibility answer
        return meta_record(collection, name), name
    error = "; ".join(reasons) or "no account could be asked"
    return error_record(slug, error, denied), ""


def iter_unique(slugs: list[str]) -> Iterator[str]:
    seen: set[str] = set()
    for slug in slugs:
        if slug and slug not in seen:
            seen.add(slug)
            yield slug


def fetch_space_meta(
    opts: RunOptions, slugs: list[str], opener: Opener, api: PerplexityAPI | None = None
) -> MetaOutcome:
    """Fetch every slug's metadata (see the module doc); returns the records to store."""
    out = MetaOutcome()
    pool = AccountPool(opts, opener, api)
    try:
        for slug in iter_unique(slugs):
            record, via = fetch_one(pool, slug)
            out.records[slug] = record
            if not via:
                out.failed += 1
                log.warning("space %s: metadata unavailable (%s)", slug, record["error"])
            else:
                out.fetched += 1
                out.via_other += via != opts.account.name
        out.requests = pool.requests()
    finally:
        pool.close()  # the sessions it opened; the caller's `api` stays open
    return out
