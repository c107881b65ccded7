"""Open an authenticated `PerplexityAPI` for the account a command runs as.

`open_session(opts)` walks the cookie chain (`net.cookies.cookie_sources`), builds a client
from `[network]` and `--base-url`, probes `GET /api/auth/session` and, when the session
belongs to someone else, switches between the `__Secure-pplx.session.<uid>` tokens until
the configured email answers. It never proceeds as the wrong account (AuthError). Without a
configured email (degraded mode) any signed-in session is accepted.

One `NetRuntime` (pacer, counters, clock) serves every session of a command: `runtime_for`
keeps it on the invocation's `RunOptions.runtime`, so a second `open_session` for another
account shares the same pacer without any module-level state.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import httpx

from pplx_export.context import RunOptions
from pplx_export.errors import AuthError
from pplx_export.site.api import PerplexityAPI
from pplx_export.site.client import ApiClient, ClientSettings
from pplx_export.site.cookies import (
    SESSION_COOKIE,
    BrowserLoader,
    CookieSet,
    CookieSource,
    cookie_sources,
    session_values,
    write_cache,
)
from pplx_export.site.pacing import Clock, NetRuntime
from pplx_export.site.record import response_writer
from pplx_export.site.useragent import user_agent_headers
from pplx_export.util.lenient import as_dict, as_str

log = logging.getLogger("pplx_export.site")


def runtime_for(opts: RunOptions, *, clock: Clock | None = None) -> NetRuntime:
    """The invocation's shared network runtime, created on first use."""
    if opts.runtime is None:
        runtime = NetRuntime(min_interval=opts.config.network.min_interval, clock=clock)
        if opts.write_responses is not None:
            runtime.recorder = response_writer(opts.write_responses)
        opts.runtime = runtime
    return cast(NetRuntime, opts.runtime)


def session_email(data: Any) -> str:
    return as_str(as_dict(as_dict(data).get("user")).get("email")).strip()


def _probe(api: PerplexityAPI) -> tuple[str, str]:
    """(email, "") for a signed-in session, ("", why) otherwise. Network errors propagate."""
    try:
        email = session_email(api.session())
    except AuthError as exc:
        return "", exc.reason
    return (email, "") if email else ("", "signed out")


def verify_account(api: PerplexityAPI, cs: CookieSet, email: str = "", user_id: str = "") -> str:
    """Make the session belong to `email` (any account when empty); return the session email.

    Tries the active token, then each per-account token (the configured `user_id` first).
    Restores the original token and raises AuthError when none matches.
    """
    wanted = email.strip().lower()
    seen: list[str] = []

    def accept(found: str) -> bool:
        if found and found.lower() not in seen:
            seen.append(found.lower())
        return bool(found) and (not wanted or found.lower() == wanted)

    original = cs.cookies.get(SESSION_COOKIE)
    found, why = _probe(api) if original else ("", "no active session token")
    if accept(found):
        return found
    tokens = cs.account_tokens
    order = sorted(tokens, key=lambda uid: uid != user_id)
    for uid in order:
        if tokens[uid] == original:
            continue  # already probed as the active token
        cs.activate(uid)
        found, why = _probe(api)
        if accept(found):
            log.info("switched the session to account %s (%s)", uid, found)
            return found
    if original is None:
        cs.cookies.pop(SESSION_COOKIE, None)
    else:
        cs.cookies[SESSION_COOKIE] = original
    if not seen:
        raise AuthError(f"no signed-in perplexity.ai session in {cs.describe()} ({why})")
    raise AuthError(
        f"{cs.describe()} is signed in as {', '.join(seen)}, not {email}; "
        "sign in to that account in the browser (or fix the account's email in the config)"
    )


def _api_for(
    opts: RunOptions,
    cs: CookieSet,
    runtime: NetRuntime,
    transport: httpx.BaseTransport | None,
) -> PerplexityAPI:
    headers = user_agent_headers(cs.origin or cs.source, opts.config.user_agent)
    settings = ClientSettings.from_network(
        opts.config.network, base_url=opts.base_url, headers=headers
    )
    client = ApiClient(settings, runtime, cookies=cs.cookies, transport=transport)
    if runtime.recorder is not None:
        runtime.recorder.hold(cs.cookies)  # what the recording must never contain
    return PerplexityAPI(client, cookies=cs)


def _loaded_sources(
    opts: RunOptions, now: float, loader: BrowserLoader | None, failures: list[str]
) -> Iterator[tuple[CookieSource, CookieSet]]:
    """Each cookie source of the chain that loads; failures are noted (explicit: raised)."""
    for source in cookie_sources(
        archive_root=opts.out,
        now=now,
        browser=opts.cookies_from,
        cookie_file=opts.cookies_file,
        loader=loader,
    ):
        try:
            cs = source.load()
        except AuthError as exc:
            if source.explicit:
                raise
            failures.append(exc.reason)
            continue
        yield source, cs


def open_session(
    opts: RunOptions,
    *,
    transport: httpx.BaseTransport | None = None,
    clock: Clock | None = None,
    browser_loader: BrowserLoader | None = None,
) -> PerplexityAPI:
    """Resolve cookies, build the client, verify (and switch) the account; see module doc."""
    runtime = runtime_for(opts, clock=clock)
    now = runtime.clock.time()
    failures: list[str] = []
    for source, cs in _loaded_sources(opts, now, browser_loader, failures):
        api = _api_for(opts, cs, runtime, transport)
        try:
            api.email = verify_account(api, cs, opts.account.email, opts.account.user_id)
        except AuthError as exc:
            api.close()
            if source.explicit:
                raise
            failures.append(f"{source.label}: {exc.reason}")
            continue
        except BaseException:
            api.close()
            raise
        log.info("signed in as %s (cookies from %s)", api.email, cs.describe())
        opts.secrets.update(session_values(cs))
        if source.cacheable:
            try:
                write_cache(opts.out, cs, api.email, now)
            except OSError as exc:
                log.warning("could not write the cookie cache: %s", exc)
        return api
    raise AuthError(
        "no usable perplexity.ai session; tried "
        + "; ".join(failures)
        + ". Sign in to perplexity.ai in a browser, or export its cookies and pass"
        " --cookies FILE (Netscape cookies.txt or JSON)"
    )


@dataclass
class SignedInAccount:
    """An account whose session token sits in the cookie jar (for `init`)."""

    user_id: str  # from `__Secure-pplx.session.<user_id>`; "" if only the active token had it
    email: str
    name: str
    active: bool  # the account the jar was signed in as before probing


def discover_accounts(
    opts: RunOptions,
    *,
    transport: httpx.BaseTransport | None = None,
    clock: Clock | None = None,
    browser_loader: BrowserLoader | None = None,
) -> tuple[list[SignedInAccount], str]:
    """Every signed-in account of the first cookie source that has any, and that source.

    Probes the active token and each per-account token once; the jar's active token is
    restored afterwards. No ownership check (this is how `init` learns the emails).
    """
    runtime = runtime_for(opts, clock=clock)
    failures: list[str] = []
    for source, cs in _loaded_sources(opts, runtime.clock.time(), browser_loader, failures):
        with _api_for(opts, cs, runtime, transport) as api:
            found = _probe_all(api, cs)
        if found:
            return found, cs.describe()
        failures.append(f"{source.label}: no token answered with a signed-in session")
        if source.explicit:
            break
    raise AuthError("no signed-in perplexity.ai account found; tried " + "; ".join(failures))


def _probe_all(api: PerplexityAPI, cs: CookieSet) -> list[SignedInAccount]:
    original = cs.cookies.get(SESSION_COOKIE)
    tokens = cs.account_tokens
    by_email: dict[str, SignedInAccount] = {}

    def record(user_id: str, active: bool) -> None:
        try:
            data = api.session()
        except AuthError:
            return
        email = session_email(data)
        if not email:
            return
        name = as_str(as_dict(data.get("user")).get("name"))
        held = by_email.get(email.lower())
        if held is None:
            by_email[email.lower()] = SignedInAccount(user_id, email, name, active)
        else:
            held.user_id = held.user_id or user_id
            held.active = held.active or active

    try:
        if original:
            active_uid = next((uid for uid, tok in tokens.items() if tok == original), "")
            record(active_uid, True)
        for uid, token in tokens.items():
            if token != original:
                cs.activate(uid)
                record(uid, False)
    finally:
        if original is None:
            cs.cookies.pop(SESSION_COOKIE, None)
        else:
            cs.cookies[SESSION_COOKIE] = original
    return list(by_email.values())
