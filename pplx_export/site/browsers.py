"""`--cookies-from-browser BROWSER[+KEYRING][:PROFILE]` (yt-dlp's syntax), for browser-cookie3.

PROFILE is a profile directory name (`Default`, `Profile 2`; for Firefox the part after the
dot of `abcd1234.default-release` also matches) or a path to a profile directory or cookie
database. KEYRING (Linux, Chromium family) names where the key that encrypts the cookies
lives: `gnomekeyring` (Secret Service), `kwallet`, or `basictext` (no keyring: the built-in
password). Without it browser-cookie3 tries Secret Service, then KWallet, then the built-in
password, as Chromium does.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

BROWSERS = ("chrome", "chromium", "edge", "firefox", "safari", "brave", "opera", "vivaldi")
CHROMIUM_FAMILY = frozenset({"chrome", "chromium", "edge", "brave", "opera", "vivaldi"})
KEYRINGS = ("basictext", "gnomekeyring", "kwallet")


class BrowserSpec(NamedTuple):
    # A NamedTuple, not a dataclass: the CLI imports this module for `--help`.
    browser: str
    keyring: str = ""
    profile: str = ""

    def __str__(self) -> str:
        text = self.browser + (f"+{self.keyring}" if self.keyring else "")
        return text + (f":{self.profile}" if self.profile else "")


def parse_browser_spec(text: str) -> BrowserSpec:
    """`chrome`, `chrome:Profile 1`, `chromium+kwallet`, `firefox:/path/to/profile`.

    ValueError with a message fit for the user when the spec cannot be used.
    """
    head, _, profile = text.partition(":")
    browser, _, keyring = head.partition("+")
    browser, keyring = browser.strip().lower(), keyring.strip().lower()
    if browser not in BROWSERS:
        raise ValueError(f"unknown browser {browser!r} (known: {', '.join(BROWSERS)})")
    if keyring and keyring not in KEYRINGS:
        raise ValueError(f"unknown keyring {keyring!r} (known: {', '.join(KEYRINGS)})")
    if keyring and browser not in CHROMIUM_FAMILY:
        raise ValueError(f"a keyring applies to Chromium-based browsers only, not {browser}")
    return BrowserSpec(browser, keyring, profile.strip())


# -- profiles ---------------------------------------------------------------------------------


def _user_data_dirs(browser: str) -> list[Path]:
    """Where the browser keeps its profiles on this OS (best effort, as browser-cookie3)."""
    home = Path.home()
    if sys.platform == "darwin":
        base = home / "Library" / "Application Support"
        table = {
            "chrome": [base / "Google" / "Chrome"],
            "chromium": [base / "Chromium"],
            "edge": [base / "Microsoft Edge"],
            "brave": [base / "BraveSoftware" / "Brave-Browser"],
            "opera": [base / "com.operasoftware.Opera"],
            "vivaldi": [base / "Vivaldi"],
            "firefox": [base / "Firefox" / "Profiles"],
        }
    elif sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        local = Path(os.environ.get("LOCALAPPDATA", home / "AppData" / "Local"))
        roaming = Path(os.environ.get("APPDATA", home / "AppData" / "Roaming"))
        table = {
            "chrome": [local / "Google" / "Chrome" / "User Data"],
            "chromium": [local / "Chromium" / "User Data"],
            "edge": [local / "Microsoft" / "Edge" / "User Data"],
            "brave": [local / "BraveSoftware" / "Brave-Browser" / "User Data"],
            "opera": [roaming / "Opera Software" / "Opera Stable"],
            "vivaldi": [local / "Vivaldi" / "User Data"],
            "firefox": [roaming / "Mozilla" / "Firefox" / "Profiles"],
        }
    else:
        config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
        table = {
            "chrome": [config / "google-chrome", config / "google-chrome-beta"],
            "chromium": [config / "chromium"],
            "edge": [config / "microsoft-edge", config / "microsoft-edge-beta"],
            "brave": [config / "BraveSoftware" / "Brave-Browser"],
            "opera": [config / "opera"],
            "vivaldi": [config / "vivaldi"],
            "firefox": [
                home / ".mozilla" / "firefox",
                home / "snap/firefox/common/.mozilla/firefox",
            ],
        }
    return table.get(browser, [])


def _cookie_db(profile_dir: Path, browser: str) -> Path | None:
    names = ["cookies.sqlite"] if browser == "firefox" else ["Network/Cookies", "Cookies"]
    for name in names:
        candidate = profile_dir / name
        if candidate.is_file():
            return candidate
    return None


def find_profile_cookies(spec: BrowserSpec) -> Path:
    """The cookie database of `spec.profile`; ValueError naming where it looked."""
    given = Path(spec.profile).expanduser()
    if given.is_file():
        return given
    if given.is_dir():
        found = _cookie_db(given, spec.browser)
        if found is not None:
            return found
        raise ValueError(f"no cookie database in profile directory {given}")
    looked: list[str] = []
    for base in _user_data_dirs(spec.browser):
        looked.append(str(base))
        if not base.is_dir():
            continue
        candidates = [base / spec.profile]
        if spec.browser == "firefox":
            candidates += sorted(base.glob(f"*.{spec.profile}"))
        for directory in candidates:
            if directory.is_dir():
                found = _cookie_db(directory, spec.browser)
                if found is not None:
                    return found
    raise ValueError(
        f"no {spec.browser} profile {spec.profile!r} with a cookie database "
        f"(looked in {', '.join(looked) or 'nowhere known on this system'})"
    )


# -- keyrings ---------------------------------------------------------------------------------


@contextlib.contextmanager
def only_keyring(module: Any, keyring: str) -> Iterator[None]:
    """Make browser-cookie3 read the cookie key from `keyring` only (Linux).

    browser-cookie3 has no switch for this: its `_LinuxPasswordManager.get_password` tries
    every store in turn. This swaps that one method for the duration of a read and fails
    clearly if a browser-cookie3 release no longer has it.
    """
    if not keyring:
        yield
        return
    manager = getattr(module, "_LinuxPasswordManager", None)
    original = getattr(manager, "get_password", None)
    default_password = getattr(module, "CHROMIUM_DEFAULT_PASSWORD", b"peanuts")
    if manager is None or original is None:
        raise RuntimeError("this browser-cookie3 version cannot choose a keyring")

    def get_password(self: Any, os_crypt_name: str) -> Any:
        if keyring == "basictext":
            return default_password
        if keyring == "gnomekeyring":
            return self._LinuxPasswordManager__get_secretstorage_password(os_crypt_name)
        return self._LinuxPasswordManager__methods_map["kwallet"](os_crypt_name)

    manager.get_password = get_password
    try:
        yield
    finally:
        manager.get_password = original
