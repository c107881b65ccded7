"""Cookie sources: file formats, domain filter, browsers, the 0600 cache, the chain."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from pplx_export.errors import AuthError, ConfigError
from pplx_export.site import cookies as ck
from pplx_export.site.cookies import (
    ACCOUNT_PREFIX,
    CACHE_MAX_AGE_S,
    SESSION_COOKIE,
    CookieSet,
    RawCookie,
    cache_path,
    collect,
    cookie_sources,
    domain_ok,
    load_browser,
    load_cookie_file,
    read_cache,
    write_cache,
)
from tests.fsync_support import record_fsyncs

SECRET = "s3cr3t-session-value"

NETSCAPE = f"""# Netscape HTTP Cookie File
# This is a comment line
.perplexity.ai\tTRUE\t/\tTRUE\t2000000000\tcf_clearance\tclear-1
#HttpOnly_www.perplexity.ai\tFALSE\t/\tTRUE\t2000000000\t{SESSION_COOKIE}\t{SECRET}
#HttpOnly_.evilperplexity.ai\tTRUE\t/\tTRUE\t2000000000\tstolen\tx
.example.com\tTRUE\t/\tFALSE\t0\tother\ty

"""


def test_domain_filter_is_suffix_not_substring() -> None:
    assert domain_ok("perplexity.ai")
    assert domain_ok(".perplexity.ai")
    assert domain_ok("www.perplexity.ai")
    assert domain_ok("WWW.Perplexity.AI")
    assert not domain_ok("evilperplexity.ai")
    assert not domain_ok("perplexity.ai.evil.com")
    assert not domain_ok("example.com")


def test_netscape_with_httponly_lines(tmp_path: Path) -> None:
    path = tmp_path / "cookies.txt"
    path.write_text(NETSCAPE)
    cs = load_cookie_file(path)
    assert cs.cookies == {"cf_clearance": "clear-1", SESSION_COOKIE: SECRET}
    assert cs.source == "file:cookies.txt"


def test_json_dict(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({SESSION_COOKIE: SECRET, "cf_clearance": "c"}))
    assert load_cookie_file(path).cookies[SESSION_COOKIE] == SECRET


def test_json_list_with_domains(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(
        json.dumps(
            [
                {"name": SESSION_COOKIE, "value": SECRET, "domain": ".perplexity.ai"},
                {"name": "x", "value": "1", "domain": "evilperplexity.ai"},
                {"name": "y", "value": "2", "domain": "www.perplexity.ai"},
                {"value": "no name"},
            ]
        )
    )
    assert load_cookie_file(path).cookies == {SESSION_COOKIE: SECRET, "y": "2"}


def test_cache_shape_is_accepted_as_a_file(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(
        json.dumps(
            {"fetched_at": 1.0, "source": "browser:chrome", "cookies": {SESSION_COOKIE: SECRET}}
        )
    )
    assert load_cookie_file(path).cookies == {SESSION_COOKIE: SECRET}


def test_file_without_session_names_cookies_not_values(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_text(".perplexity.ai\tTRUE\t/\tTRUE\t0\tcf_clearance\tVALUE-XYZ\n")
    with pytest.raises(AuthError) as info:
        load_cookie_file(path)
    msg = str(info.value)
    assert "cf_clearance" in msg and "VALUE-XYZ" not in msg
    assert "c.txt" in msg


def test_missing_or_bad_file_is_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        load_cookie_file(tmp_path / "nope.txt")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError):
        load_cookie_file(bad)


def test_prefer_www_for_duplicate_names() -> None:
    raw = [
        RawCookie(f"{ACCOUNT_PREFIX}u1", "apex", ".perplexity.ai"),
        RawCookie(f"{ACCOUNT_PREFIX}u1", "www", "www.perplexity.ai"),
        RawCookie(f"{ACCOUNT_PREFIX}u1", "other", "labs.perplexity.ai"),
    ]
    cs = collect(raw, "test")
    assert cs.account_tokens == {"u1": "www"}
    cs = collect(list(reversed(raw)), "test")
    assert cs.account_tokens == {"u1": "www"}


def test_activate_copies_account_token() -> None:
    cs = CookieSet({SESSION_COOKIE: "a", f"{ACCOUNT_PREFIX}u2": "b"}, "test")
    cs.activate("u2")
    assert cs.cookies[SESSION_COOKIE] == "b"
    assert cs.has_session


def test_raw_cookie_and_cookieset_repr_hide_values() -> None:
    assert SECRET not in repr(RawCookie("n", SECRET, "perplexity.ai"))
    assert SECRET not in repr(CookieSet({SESSION_COOKIE: SECRET}, "file:x"))


def test_browser_loader_and_error_messages() -> None:
    def loader(name: str) -> tuple[list[RawCookie], str]:
        if name == "chrome":
            raise RuntimeError("keyring locked")
        if name == "firefox":
            return [
                RawCookie("cf_clearance", SECRET, ".perplexity.ai")
            ], "/home/u/.mozilla/p1/cookies.sqlite"
        return [RawCookie(SESSION_COOKIE, SECRET, "www.perplexity.ai")], "/edge/Cookies"

    with pytest.raises(AuthError) as info:
        load_browser("chrome", loader)
    assert str(info.value) == "chrome: keyring locked"
    with pytest.raises(AuthError) as info:
        load_browser("firefox", loader)
    assert "firefox" in str(info.value) and "p1/cookies.sqlite" in str(info.value)
    assert SECRET not in str(info.value)
    cs = load_browser("edge", loader)
    assert cs.source == "browser:edge" and cs.cookies == {SESSION_COOKIE: SECRET}
    with pytest.raises(ConfigError):
        load_browser("netscape-navigator", loader)


def test_cache_written_0600_atomically_and_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cs = CookieSet({SESSION_COOKIE: SECRET}, "browser:chrome")
    calls = record_fsyncs(monkeypatch)
    path = write_cache(tmp_path, cs, "a@example.com", now=1000.0)
    assert path == cache_path(tmp_path)
    assert calls.durable(str(path.resolve())) is not None  # a power cut keeps a whole file
    assert ".cache" in path.parts and "index" not in path.parts  # outside the archive
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left
    doc = json.loads(path.read_text())
    assert doc == {
        "fetched_at": 1000.0,
        "source": "browser:chrome",
        "origin_spec": "",
        "account_email": "a@example.com",
        "cookies": {SESSION_COOKIE: SECRET},
    }
    back = read_cache(tmp_path, now=1000.0 + 60)
    assert back is not None and back.cookies == cs.cookies
    assert back.source == "cache" and back.origin == "browser:chrome"
    assert read_cache(tmp_path, now=1000.0 + CACHE_MAX_AGE_S + 1) is None  # stale


def test_cache_file_is_0600_from_the_first_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The temp file already has mode 0600 when the cookie bytes are written into it."""
    seen: list[int] = []
    real_write = os.write

    def spy(fd: int, data: bytes) -> int:
        seen.append(stat.S_IMODE(os.fstat(fd).st_mode))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", spy)
    write_cache(tmp_path, CookieSet({SESSION_COOKIE: SECRET}, "browser:chrome"), "", now=1.0)
    assert seen and set(seen) == {0o600}


def test_cache_overwrite_keeps_old_file_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_cache(tmp_path, CookieSet({SESSION_COOKIE: "old"}, "browser:chrome"), "", now=1.0)

    def boom(*a: object, **k: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        write_cache(tmp_path, CookieSet({SESSION_COOKIE: "new"}, "browser:chrome"), "", now=2.0)
    assert json.loads(cache_path(tmp_path).read_text())["cookies"] == {SESSION_COOKIE: "old"}
    assert len(list(cache_path(tmp_path).parent.iterdir())) == 1


def test_corrupt_or_odd_cache_is_ignored(tmp_path: Path) -> None:
    path = cache_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("{torn")
    assert read_cache(tmp_path, now=0) is None
    path.write_text(json.dumps({"fetched_at": "yesterday", "cookies": {SESSION_COOKIE: "x"}}))
    assert read_cache(tmp_path, now=0) is None
    path.write_text(json.dumps({"fetched_at": 0, "cookies": {"cf": "x"}}))  # no session
    assert read_cache(tmp_path, now=1) is None


def test_chain_explicit_sources_stand_alone(tmp_path: Path) -> None:
    labels = [s.label for s in cookie_sources(archive_root=tmp_path, now=0, browser="firefox")]
    assert labels == ["browser:firefox"]
    f = tmp_path / "c.txt"
    labels = [s.label for s in cookie_sources(archive_root=tmp_path, now=0, cookie_file=f)]
    assert labels == [f"file:{f}"]


def test_chain_default_order(tmp_path: Path) -> None:
    sources = list(cookie_sources(archive_root=tmp_path, now=0))
    assert [s.label for s in sources] == ["cache"] + [f"browser:{b}" for b in ck.AUTO_BROWSERS]
    assert ck.AUTO_BROWSERS[:4] == ("edge", "chrome", "firefox", "safari")
    assert all(s.cacheable for s in sources)  # every sign-in renews the cache
    with pytest.raises(AuthError):
        sources[0].load()  # no cache yet


def test_a_keyring_without_dbus_is_explained_not_shown_as_a_key_error() -> None:
    def no_dbus(browser: str) -> Any:
        raise KeyError("DBUS_SESSION_BUS_ADDRESS")

    with pytest.raises(AuthError) as info:
        load_browser("chrome", loader=no_dbus)
    assert str(info.value).startswith("chrome: keyring unreachable (no desktop D-Bus session)")


def test_a_cache_inside_the_archive_is_moved_out_on_first_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "archive"
    old = archive / "index" / ".cookies.json"
    old.parent.mkdir(parents=True)
    doc = {"fetched_at": 1000.0, "source": "browser:chrome", "cookies": {SESSION_COOKIE: SECRET}}
    old.write_text(json.dumps(doc))
    calls = record_fsyncs(monkeypatch)
    back = read_cache(archive, now=1060.0)
    # The copy is on disk before the original goes (a power cut keeps one of the two).
    assert calls.durable(str(cache_path(archive).resolve())) is not None
    assert back is not None and back.cookies == {SESSION_COOKIE: SECRET}
    assert not old.exists()
    assert stat.S_IMODE(cache_path(archive).stat().st_mode) == 0o600
    assert not any(SECRET in p.read_text() for p in archive.rglob("*") if p.is_file())
