"""open_session: cookie chain, session probe, account switching, cache, shared runtime."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import httpx
import pytest

from pplx_export.config import Account, Config, NetworkSettings
from pplx_export.context import RunOptions
from pplx_export.errors import AuthError, ServerError
from pplx_export.site import constants as C
from pplx_export.site.cookies import (
    ACCOUNT_PREFIX,
    SESSION_COOKIE,
    CookieSet,
    RawCookie,
    cache_path,
    write_cache,
)
from pplx_export.site.session import open_session, runtime_for
from tests.net_fakes import BASE, FakeClock, router

TOKENS = {"tok-alice": "alice@example.com", "tok-bob": "bob@example.com"}


def _session_handler(request: httpx.Request) -> httpx.Response:
    cookie = request.headers.get("Cookie", "")
    jar = dict(part.split("=", 1) for part in cookie.split("; ") if "=" in part)
    email = TOKENS.get(jar.get(SESSION_COOKIE, ""))
    if jar.get(SESSION_COOKIE) == "tok-dead":
        return httpx.Response(401, json={"detail": "expired"})
    return httpx.Response(200, json={"user": {"email": email, "name": "N"}} if email else {})


def _router() -> Any:
    r = router()
    r.get(C.SESSION_PATH).mock(side_effect=_session_handler)
    return r


def _opts(
    tmp_path: Path,
    email: str = "",
    *,
    cookies_file: Path | None = None,
    cookies_from: str | None = None,
    user_id: str = "",
    ua: str = "",
) -> RunOptions:
    cfg = Config(
        path=tmp_path / "config.toml",
        exists=bool(email),
        user_agent=ua,
        network=NetworkSettings(min_interval=0.0, max_retries=2, backoff_cap=0),
    )
    return RunOptions(
        config=cfg,
        account=Account(name="alice", email=email, user_id=user_id),
        out=tmp_path / "archive",
        lang="en",
        base_url=BASE,
        cookies_file=cookies_file,
        cookies_from=cookies_from,
    )


def _cookie_file(tmp_path: Path, cookies: dict[str, str]) -> Path:
    path = tmp_path / "cookies.json"
    path.write_text(
        json.dumps(
            [{"name": k, "value": v, "domain": "www.perplexity.ai"} for k, v in cookies.items()]
        )
    )
    return path


def _open(opts: RunOptions, r: Any, **kw: Any) -> Any:
    return open_session(opts, transport=httpx.MockTransport(r.handler), clock=FakeClock(), **kw)


def test_matching_account_first_try(tmp_path: Path) -> None:
    f = _cookie_file(tmp_path, {SESSION_COOKIE: "tok-alice"})
    r = _router()
    api = _open(_opts(tmp_path, "Alice@Example.com", cookies_file=f), r)
    assert api.email == "alice@example.com"
    assert r.routes[0].call_count == 1
    # Cookies from a file are cached like a browser's: cron finds them without --cookies.
    assert cache_path(tmp_path / "archive").exists()


def test_switches_to_the_configured_account(tmp_path: Path) -> None:
    f = _cookie_file(
        tmp_path,
        {
            SESSION_COOKIE: "tok-bob",
            f"{ACCOUNT_PREFIX}u-bob": "tok-bob",
            f"{ACCOUNT_PREFIX}u-dead": "tok-dead",
            f"{ACCOUNT_PREFIX}u-alice": "tok-alice",
        },
    )
    r = _router()
    api = _open(_opts(tmp_path, "alice@example.com", cookies_file=f), r)
    assert api.email == "alice@example.com"
    assert api.client.cookies[SESSION_COOKIE] == "tok-alice"
    # bob (active) -> dead -> alice; bob's own per-account token is not probed twice
    assert r.routes[0].call_count == 3


def test_configured_user_id_is_tried_first(tmp_path: Path) -> None:
    f = _cookie_file(
        tmp_path,
        {
            SESSION_COOKIE: "tok-bob",
            f"{ACCOUNT_PREFIX}u-dead": "tok-dead",
            f"{ACCOUNT_PREFIX}u-alice": "tok-alice",
        },
    )
    r = _router()
    _open(_opts(tmp_path, "alice@example.com", cookies_file=f, user_id="u-alice"), r)
    assert r.routes[0].call_count == 2


def test_refuses_to_run_as_the_wrong_account(tmp_path: Path) -> None:
    f = _cookie_file(tmp_path, {SESSION_COOKIE: "tok-bob", f"{ACCOUNT_PREFIX}u-b": "tok-bob"})
    with pytest.raises(AuthError) as info:
        _open(_opts(tmp_path, "alice@example.com", cookies_file=f), _router())
    msg = str(info.value)
    assert "bob@example.com" in msg and "alice@example.com" in msg
    assert "tok-bob" not in msg
    assert info.value.exit_code == 3


def test_degraded_mode_accepts_any_signed_in_account(tmp_path: Path) -> None:
    f = _cookie_file(tmp_path, {SESSION_COOKIE: "tok-dead", f"{ACCOUNT_PREFIX}u-b": "tok-bob"})
    api = _open(_opts(tmp_path, "", cookies_file=f), _router())
    assert api.email == "bob@example.com"


def test_signed_out_session_is_auth_error(tmp_path: Path) -> None:
    f = _cookie_file(tmp_path, {SESSION_COOKIE: "tok-unknown"})
    with pytest.raises(AuthError) as info:
        _open(_opts(tmp_path, "", cookies_file=f), _router())
    assert "signed out" in str(info.value)


def test_server_error_on_probe_propagates(tmp_path: Path) -> None:
    f = _cookie_file(tmp_path, {SESSION_COOKIE: "tok-alice"})
    r = router()
    r.get(C.SESSION_PATH).mock(return_value=httpx.Response(503))
    with pytest.raises(ServerError):
        _open(_opts(tmp_path, "alice@example.com", cookies_file=f), r)


def test_browser_source_is_cached_0600_then_cache_is_used(tmp_path: Path) -> None:
    calls: list[str] = []

    def loader(name: str) -> tuple[list[RawCookie], str]:
        calls.append(name)
        if name != "firefox":
            raise RuntimeError(f"{name} not installed")
        return [
            RawCookie(SESSION_COOKIE, "tok-alice", ".perplexity.ai"),
            RawCookie("junk", "x", "evilperplexity.ai"),
        ], "/ff/profile"

    opts = _opts(tmp_path, "alice@example.com")
    api = _open(opts, _router(), browser_loader=loader)
    assert api.email == "alice@example.com"
    assert calls == ["edge", "chrome", "firefox"]  # auto-detect order
    cache = cache_path(tmp_path / "archive")
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    doc = json.loads(cache.read_text())
    assert doc["source"] == "browser:firefox" and doc["account_email"] == "alice@example.com"
    assert doc["cookies"] == {SESSION_COOKIE: "tok-alice"}
    # Second run: the fresh cache answers, no browser is read.
    calls.clear()
    fresh = _opts(tmp_path, "alice@example.com")
    clock = FakeClock(start=doc["fetched_at"] + 60)
    api2 = open_session(
        fresh, transport=httpx.MockTransport(_router().handler), clock=clock, browser_loader=loader
    )
    assert api2.email == "alice@example.com" and calls == []
    assert "Firefox" in api2.client.settings.headers["User-Agent"]  # UA follows the origin


def test_dead_cache_falls_through_to_browsers(tmp_path: Path) -> None:
    clock = FakeClock()
    write_cache(
        tmp_path / "archive", CookieSet({SESSION_COOKIE: "tok-dead"}, "browser:edge"), "", clock.now
    )

    def loader(name: str) -> tuple[list[RawCookie], str]:
        return [RawCookie(SESSION_COOKIE, "tok-alice", "www.perplexity.ai")], ""

    api = open_session(
        _opts(tmp_path, "alice@example.com"),
        transport=httpx.MockTransport(_router().handler),
        clock=clock,
        browser_loader=loader,
    )
    assert api.email == "alice@example.com"


def test_nothing_works_names_every_source_tried(tmp_path: Path) -> None:
    def loader(name: str) -> tuple[list[RawCookie], str]:
        if name == "firefox":
            return [RawCookie("cf_clearance", "VALUE", ".perplexity.ai")], "/ff/p1"
        raise RuntimeError("keyring locked")

    with pytest.raises(AuthError) as info:
        _open(_opts(tmp_path, "alice@example.com"), _router(), browser_loader=loader)
    msg = str(info.value)
    assert "chrome: keyring locked" in msg
    assert "no perplexity.ai session cookie in browser:firefox (profile /ff/p1)" in msg
    assert "no fresh cookie cache" in msg
    assert "VALUE" not in msg


def test_explicit_browser_failure_is_not_followed_by_others(tmp_path: Path) -> None:
    tried: list[str] = []

    def loader(name: str) -> tuple[list[RawCookie], str]:
        tried.append(name)
        raise RuntimeError("locked")

    with pytest.raises(AuthError):
        _open(_opts(tmp_path, "a@x", cookies_from="chrome"), _router(), browser_loader=loader)
    assert tried == ["chrome"]


def test_user_agent_and_client_hints(tmp_path: Path) -> None:
    def loader(name: str) -> tuple[list[RawCookie], str]:
        return [RawCookie(SESSION_COOKIE, "tok-alice", "www.perplexity.ai")], ""

    api = _open(
        _opts(tmp_path, "alice@example.com", cookies_from="edge"), _router(), browser_loader=loader
    )
    h = api.client.settings.headers
    assert "Edg/" in h["User-Agent"] and '"Microsoft Edge"' in h["sec-ch-ua"]
    api = _open(
        _opts(tmp_path, "alice@example.com", cookies_from="edge", ua="MyUA/1"),
        _router(),
        browser_loader=loader,
    )
    assert dict(api.client.settings.headers) == {"User-Agent": "MyUA/1"}


def test_runtime_shared_across_sessions_of_one_invocation(tmp_path: Path) -> None:
    f = _cookie_file(tmp_path, {SESSION_COOKIE: "tok-alice"})
    opts = _opts(tmp_path, "alice@example.com", cookies_file=f)
    a = _open(opts, _router())
    b = _open(opts, _router())
    assert a.client.runtime is b.client.runtime is runtime_for(opts)
    assert a.requests_made == 2
    other = _opts(tmp_path, "alice@example.com", cookies_file=f)
    assert runtime_for(other) is not runtime_for(opts)


def test_discover_accounts_probes_every_token_and_restores(tmp_path: Path) -> None:
    from pplx_export.site.session import discover_accounts

    f = _cookie_file(
        tmp_path,
        {
            SESSION_COOKIE: "tok-bob",
            f"{ACCOUNT_PREFIX}u-bob": "tok-bob",
            f"{ACCOUNT_PREFIX}u-dead": "tok-dead",
            f"{ACCOUNT_PREFIX}u-alice": "tok-alice",
        },
    )
    r = _router()
    found, where = discover_accounts(
        _opts(tmp_path, "", cookies_file=f),
        transport=httpx.MockTransport(r.handler),
        clock=FakeClock(),
    )
    assert [(a.user_id, a.email, a.active) for a in found] == [
        ("u-bob", "bob@example.com", True),
        ("u-alice", "alice@example.com", False),
    ]
    assert "cookies.json" in where
    assert r.routes[0].call_count == 3


def test_discover_accounts_none_signed_in(tmp_path: Path) -> None:
    from pplx_export.site.session import discover_accounts

    f = _cookie_file(tmp_path, {SESSION_COOKIE: "tok-dead"})
    with pytest.raises(AuthError):
        discover_accounts(
            _opts(tmp_path, "", cookies_file=f),
            transport=httpx.MockTransport(_router().handler),
            clock=FakeClock(),
        )


def test_a_13_hour_old_cache_is_renewed_by_a_cached_run(tmp_path: Path) -> None:
    """Issue 32: the browser's keyring is unreachable (cron), the recorded source fails, the
    stale cache still signs in, and the sign-in renews it for the next night."""
    clock = FakeClock()
    archive = tmp_path / "archive"
    cs = CookieSet({SESSION_COOKIE: "tok-alice"}, "browser:chrome", spec="browser:chrome")
    write_cache(archive, cs, "alice@example.com", clock.now - 13 * 3600)
    tried: list[str] = []

    def no_keyring(name: str) -> tuple[list[RawCookie], str]:
        tried.append(name)
        raise KeyError("DBUS_SESSION_BUS_ADDRESS")

    api = open_session(
        _opts(tmp_path, "alice@example.com"),
        transport=httpx.MockTransport(_router().handler),
        clock=clock,
        browser_loader=no_keyring,
    )
    assert api.email == "alice@example.com"
    assert tried == ["chrome"]  # the recorded source first, then the stale cache answered
    doc = json.loads(cache_path(archive).read_text())
    assert doc["fetched_at"] == clock.now  # renewed
    assert doc["source"] == "browser:chrome" and doc["origin_spec"] == "browser:chrome"


def test_a_stale_cache_rereads_its_recorded_cookie_file(tmp_path: Path) -> None:
    clock = FakeClock()
    archive = tmp_path / "archive"
    jar = tmp_path / "cookies.json"
    jar.write_text(json.dumps({SESSION_COOKIE: "tok-alice"}))
    old = CookieSet({SESSION_COOKIE: "tok-dead"}, "file:cookies.json", spec=f"file:{jar}")
    write_cache(archive, old, "alice@example.com", clock.now - 20 * 3600)
    api = open_session(
        _opts(tmp_path, "alice@example.com"),
        transport=httpx.MockTransport(_router().handler),
        clock=clock,
        browser_loader=lambda name: ([], ""),
    )
    assert api.email == "alice@example.com"
    doc = json.loads(cache_path(archive).read_text())
    assert doc["cookies"] == {SESSION_COOKIE: "tok-alice"} and doc["fetched_at"] == clock.now
    assert doc["origin_spec"] == f"file:{jar}"
