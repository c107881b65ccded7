"""Where the session cookies come from (protocol.md §1.3).

Resolution chain: `--cookies-from-browser BROWSER[+KEYRING][:PROFILE]` (`site/browsers.py`)
-> `--cookies FILE` -> the fresh cache (12 h, in the user cache dir, one file per archive
root; never inside the archive, which users back up, copy and push) -> auto-detected
browsers. An explicit source is the only one tried; otherwise the cache and then each browser
are candidates in turn (the session layer moves on when one fails to authenticate). Cookies
that signed in, from a browser or a file, are cached: a cron job started without `--cookies`
finds them for 12 h.

Only cookies of `perplexity.ai` and its subdomains are kept (suffix match, never substring:
`evilperplexity.ai` is rejected). Messages name sources, browsers, profiles and cookie *names*;
never a cookie value.

Long because the resolution chain is one policy: each source (browser, file, cache,
auto-detect), the domain filter and the cache's trust rule feed `cookie_sources`, and every
message names sources the same way; browser and profile specs are already apart
(site/browsers.py).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from pplx_export.errors import AuthError, ConfigError
from pplx_export.site.browsers import (
    BrowserSpec,
    find_profile_cookies,
    only_keyring,
    parse_browser_spec,
)
from pplx_export.util.atomic import atomic_write_bytes, atomic_write_text

log = logging.getLogger("pplx_export.site")

DOMAIN = "perplexity.ai"
PREFERRED_HOST = "www.perplexity.ai"
SESSION_COOKIE = "__Secure-next-auth.session-token"
ACCOUNT_PREFIX = "__Secure-pplx.session."
APP_NAME = "pplx-export"
# Where versions before 0.2 kept the cache: inside the archive (moved out on first use).
LEGACY_CACHE_NAME = ".cookies.json"
CACHE_MAX_AGE_S = 12 * 3600
AUTO_BROWSERS = ("edge", "chrome", "firefox", "safari", "chromium", "brave", "opera", "vivaldi")


@dataclass(frozen=True)
class RawCookie:
    name: str
    value: str
    domain: str = ""

    def __repr__(self) -> str:  # never show the value, even in a traceback
        return f"RawCookie(name={self.name!r}, domain={self.domain!r})"


@dataclass
class CookieSet:
    """The cookies sent to Perplexity, and the per-account session tokens found among them."""

    cookies: dict[str, str] = field(repr=False)
    source: str  # "browser:chrome", "file:cookies.txt", "cache"
    where: str = ""  # human detail: profile path, file path
    origin: str = ""  # for the cache: the source it was first read from (picks the UA)
    # How to read the same source again: "file:<absolute path>" or "browser:<spec>".
    spec: str = ""

    @property
    def account_tokens(self) -> dict[str, str]:
        """`user_id -> session token` from the `__Secure-pplx.session.<uid>` cookies."""
        return {
            name[len(ACCOUNT_PREFIX) :]: value
            for name, value in self.cookies.items()
            if name.startswith(ACCOUNT_PREFIX) and value
        }

    @property
    def has_session(self) -> bool:
        return bool(self.cookies.get(SESSION_COOKIE)) or bool(self.account_tokens)

    def activate(self, user_id: str) -> None:
        """Make the account `user_id` the active one (what `?pplx_account=<uid>` does)."""
        self.cookies[SESSION_COOKIE] = self.account_tokens[user_id]

    def describe(self) -> str:
        return f"{self.source} ({self.where})" if self.where else self.source


# A shorter value could match ordinary text by chance; real session tokens are long.
SECRET_MIN_LEN = 12


def session_values(cs: CookieSet) -> set[str]:
    """The session token values of `cs`: what must never reach a file the archive shares."""
    values = {cs.cookies.get(SESSION_COOKIE, ""), *cs.account_tokens.values()}
    return {v for v in values if len(v) >= SECRET_MIN_LEN}


def is_cookie_jar(data: bytes) -> bool:
    """True when `data` is a cookie file holding a Perplexity session (JSON in any shape
    `--cookies` reads, or Netscape cookies.txt), judged by content, whatever its name."""
    if b"__Secure-" not in data:
        return False  # both session cookie names start so: most files end here, unparsed
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return False
    stripped = text.lstrip()
    raw: list[RawCookie]
    if stripped.startswith(("{", "[")):
        try:
            raw = parse_json_cookies(json.loads(stripped))
        except ValueError:
            return False
    else:
        raw = parse_netscape(text)
    return any(
        c.value and (c.name == SESSION_COOKIE or c.name.startswith(ACCOUNT_PREFIX)) for c in raw
    )


def domain_ok(domain: str) -> bool:
    """Suffix match on perplexity.ai. An empty domain (a bare name->value dict) is accepted."""
    d = domain.strip().lower().lstrip(".")
    return d == "" or d == DOMAIN or d.endswith("." + DOMAIN)


def _rank(domain: str) -> int:
    d = domain.strip().lower().lstrip(".")
    # www wins (protocol §1.3), then the apex, then a bare dict entry, then other subdomains.
    return {PREFERRED_HOST: 0, DOMAIN: 1, "": 2}.get(d, 3)


def collect(raw: Iterable[RawCookie], source: str, where: str = "") -> CookieSet:
    """Keep perplexity.ai cookies; when a name appears on several domains prefer www."""
    best: dict[str, RawCookie] = {}
    for cookie in raw:
        if not cookie.name or not domain_ok(cookie.domain):
            continue
        held = best.get(cookie.name)
        if held is None or _rank(cookie.domain) < _rank(held.domain):
            best[cookie.name] = cookie
    return CookieSet({c.name: c.value for c in best.values()}, source, where)


def require_session(cs: CookieSet) -> CookieSet:
    if not cs.has_session:
        names = ", ".join(sorted(cs.cookies)) or "none"
        raise AuthError(
            f"no perplexity.ai session cookie in {cs.describe()} "
            f"(expected {SESSION_COOKIE} or {ACCOUNT_PREFIX}<id>; cookie names found: {names})"
        )
    return cs


# -- cookie files -----------------------------------------------------------------------------


def parse_netscape(text: str) -> list[RawCookie]:
    """Netscape/Mozilla cookies.txt. `#HttpOnly_<domain>` lines are cookies, not comments."""
    out: list[RawCookie] = []
    for line in text.splitlines():
        line = line.rstrip("\r\n")
        if line.startswith("#HttpOnly_"):
            line = line[len("#HttpOnly_") :]
        elif not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) < 7:
            continue
        domain, name, value = fields[0], fields[5], "\t".join(fields[6:])
        out.append(RawCookie(name.strip(), value.strip(), domain.strip()))
    return out


def parse_json_cookies(data: Any) -> list[RawCookie]:
    """A name->value dict, a list of {name, value, domain}, or our cache shape."""
    if isinstance(data, dict) and isinstance(data.get("cookies"), dict | list):
        return parse_json_cookies(data["cookies"])
    if isinstance(data, dict):
        return [RawCookie(str(k), str(v)) for k, v in data.items() if isinstance(v, str | int)]
    if isinstance(data, list):
        out: list[RawCookie] = []
        for item in data:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                value = item.get("value")
                domain = item.get("domain") or item.get("host") or ""
                out.append(
                    RawCookie(item["name"], "" if value is None else str(value), str(domain))
                )
        return out
    raise ValueError("expected a JSON object or array")


def load_cookie_file(path: Path) -> CookieSet:
    """Read `--cookies FILE`; raise ConfigError if unreadable, AuthError if it has no session."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read cookie file {path}: {type(exc).__name__}") from None
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            raw = parse_json_cookies(json.loads(stripped))
        except (json.JSONDecodeError, ValueError) as exc:
            raise ConfigError(f"cookie file {path} is not valid cookie JSON: {exc}") from None
    else:
        raw = parse_netscape(text)
    cs = collect(raw, f"file:{path.name}", str(path))
    cs.spec = f"file:{path.absolute()}"
    return require_session(cs)


# -- browsers ---------------------------------------------------------------------------------

BrowserLoader = Callable[[str], tuple[list[RawCookie], str]]


def browser_cookie3_loader(
    browser: str, spec: BrowserSpec | None = None
) -> tuple[list[RawCookie], str]:
    """Read perplexity.ai cookies from an installed browser with browser-cookie3.

    Returns the cookies and where they came from (the cookie database path, best effort).
    `spec` picks a profile and a keyring (`--cookies-from-browser chrome+kwallet:Work`).
    """
    import browser_cookie3  # imported lazily: it probes keyrings and D-Bus at import time

    spec = spec or BrowserSpec(browser)

    classes = {
        "chrome": browser_cookie3.Chrome,
        "chromium": browser_cookie3.Chromium,
        "edge": browser_cookie3.Edge,
        "firefox": browser_cookie3.Firefox,
        "safari": browser_cookie3.Safari,
        "brave": browser_cookie3.Brave,
        "opera": browser_cookie3.Opera,
        "vivaldi": browser_cookie3.Vivaldi,
    }
    cookie_file = str(find_profile_cookies(spec)) if spec.profile else None
    with only_keyring(browser_cookie3, spec.keyring):
        reader = classes[browser](cookie_file=cookie_file, domain_name=DOMAIN)
        where = str(getattr(reader, "cookie_file", "") or "")
        jar = reader.load()
    return [RawCookie(c.name, c.value or "", c.domain) for c in jar], where


def load_browser(browser: str, loader: BrowserLoader | None = None) -> CookieSet:
    """Cookies from one browser (a `BROWSER[+KEYRING][:PROFILE]` spec), or AuthError saying
    what went wrong (never a value). A custom `loader` gets the browser name only."""
    spec_text = browser
    try:
        spec = parse_browser_spec(browser)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    browser = spec.browser
    try:
        if loader is not None:
            raw, where = loader(browser)
        elif spec.profile or spec.keyring:
            raw, where = browser_cookie3_loader(browser, spec)
        else:
            raw, where = browser_cookie3_loader(browser)
    # browser-cookie3 raises whatever its backends raise (sqlite3, keyring, D-Bus, OSError,
    # its own BrowserCookieError); each is reported by type and message, none is swallowed.
    except Exception as exc:
        raise AuthError(f"{browser}: {_describe_backend_error(exc)}") from None
    cs = collect(raw, f"browser:{browser}", f"profile {where}" if where else "")
    cs.spec = f"browser:{spec_text}"
    return require_session(cs)


def _describe_backend_error(exc: Exception) -> str:
    """A browser backend's failure in words a user can act on."""
    if isinstance(exc, KeyError):
        # Chromium-family backends read the keyring over D-Bus and index os.environ: a bare
        # KeyError('DBUS_SESSION_BUS_ADDRESS') means "no desktop session to ask".
        name = str(exc.args[0]) if exc.args else ""
        if name.startswith("DBUS"):
            return "keyring unreachable (no desktop D-Bus session)"
        return f"missing {name or 'value'} ({type(exc).__name__})"
    text = str(exc).splitlines()[0] if str(exc) else ""
    return text or type(exc).__name__


# -- cache ------------------------------------------------------------------------------------


def cache_path(archive_root: Path) -> Path:
    """`<user cache dir>/pplx-export/cookies-<hash of the archive root>.json`.

    The live session cookie must not sit inside the archive: a backup, a copy or a git push
    of the archive would carry the user's Perplexity session with it.
    """
    key = hashlib.sha256(str(Path(archive_root).resolve()).encode("utf-8")).hexdigest()[:16]
    return Path(platformdirs.user_cache_dir(APP_NAME)) / f"cookies-{key}.json"


def _migrate_cache(archive_root: Path) -> None:
    """Move a cache an earlier version kept at `<archive>/index/.cookies.json` out of it."""
    old = Path(archive_root) / "index" / LEGACY_CACHE_NAME
    if not old.is_file():
        return
    new = cache_path(archive_root)
    try:
        if not new.exists():
            new.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(new, old.read_bytes(), durable=True, mode=0o600)
        old.unlink()
        log.info("moved the cookie cache out of the archive: %s -> %s", old, new)
    except OSError as exc:
        log.warning("could not move the cookie cache %s out of the archive: %s", old, exc)


@dataclass
class CacheRecord:
    """The cache file as stored, whatever its age."""

    cookies: CookieSet
    fetched_at: float
    origin_spec: str  # "" for a cache written before the spec was recorded

    def age(self, now: float) -> float:
        return now - self.fetched_at

    def fresh(self, now: float) -> bool:
        return 0 <= self.age(now) < CACHE_MAX_AGE_S


def read_cache_record(archive_root: Path) -> CacheRecord | None:
    """The cache if it exists, parses and holds a session (any age); else None."""
    _migrate_cache(archive_root)
    path = cache_path(archive_root)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        log.warning("ignoring unreadable cookie cache %s (%s)", path, type(exc).__name__)
        return None
    if not isinstance(data, dict) or not isinstance(data.get("cookies"), dict):
        log.warning("ignoring cookie cache %s: unexpected shape", path)
        return None
    fetched = data.get("fetched_at")
    if not isinstance(fetched, int | float) or isinstance(fetched, bool):
        return None
    source = data.get("source")
    origin = source if isinstance(source, str) else ""
    spec = data.get("origin_spec")
    cs = collect(parse_json_cookies(data["cookies"]), "cache", f"{path}, from {origin}")
    cs.origin = origin
    cs.spec = spec if isinstance(spec, str) else ""
    if not cs.has_session:
        return None
    return CacheRecord(cs, float(fetched), cs.spec)


def read_cache(archive_root: Path, now: float) -> CookieSet | None:
    """The cached cookie set if it exists, parses, has a session and is < 12 h old."""
    record = read_cache_record(archive_root)
    return record.cookies if record is not None and record.fresh(now) else None


def write_cache(archive_root: Path, cs: CookieSet, account_email: str, now: float) -> Path:
    """Store the verified cookie set owner-only (0600 from the first byte), atomically."""
    _migrate_cache(archive_root)
    path = cache_path(archive_root)
    doc = {
        "fetched_at": now,
        "source": cs.origin or cs.source,
        "origin_spec": cs.spec,
        "account_email": account_email,
        "cookies": dict(cs.cookies),
    }
    atomic_write_text(
        path, json.dumps(doc, ensure_ascii=False, indent=1) + "\n", durable=True, mode=0o600
    )
    return path


# -- the chain --------------------------------------------------------------------------------


@dataclass
class CookieSource:
    """One candidate in the resolution chain; `load()` raises AuthError/ConfigError."""

    label: str
    load: Callable[[], CookieSet]
    explicit: bool = False
    cacheable: bool = True  # every sign-in renews the cache (see the module doc)


def cookie_sources(
    *,
    archive_root: Path,
    now: float,
    browser: str | None = None,
    cookie_file: Path | None = None,
    loader: BrowserLoader | None = None,
    auto_browsers: Iterable[str] = AUTO_BROWSERS,
) -> Iterator[CookieSource]:
    """The candidates to try, in priority order (explicit sources stand alone)."""
    if browser:
        yield CookieSource(
            f"browser:{browser}", lambda: load_browser(browser, loader), True, cacheable=True
        )
        return
    if cookie_file is not None:
        yield CookieSource(
            f"file:{cookie_file}", lambda: load_cookie_file(cookie_file), True, cacheable=True
        )
        return

    record = read_cache_record(archive_root)

    def cached() -> CookieSet:
        if record is None or not record.fresh(now):
            raise AuthError("no fresh cookie cache")
        return record.cookies

    def from_browser(name: str) -> Callable[[], CookieSet]:
        return lambda: load_browser(name, loader)

    yield CookieSource("cache", cached)
    if record is not None and record.origin_spec:
        origin = origin_source(record.origin_spec, loader)
        if origin is not None:
            yield origin
    if record is not None and not record.fresh(now):
        hours = record.age(now) / 3600
        stale = record.cookies
        stale.where = f"{stale.where}, {hours:.0f} h old"
        yield CookieSource("cache (stale)", lambda: stale)
    for name in auto_browsers:
        yield CookieSource(f"browser:{name}", from_browser(name))


def origin_source(spec: str, loader: BrowserLoader | None = None) -> CookieSource | None:
    """The source a cache's cookies came from, to read again (None for an unknown spec)."""
    kind, _, value = spec.partition(":")

    def load() -> CookieSet:
        try:
            if kind == "file":
                return load_cookie_file(Path(value))
            return load_browser(value, loader)
        except ConfigError as exc:  # a file since moved away: the next source is tried
            raise AuthError(str(exc)) from None

    if kind in ("file", "browser") and value:
        return CookieSource(f"recorded {spec}", load)
    return None
