"""A browser-like User-Agent matching where the cookies came from (protocol.md §1.2).

Cloudflare binds its clearance cookies to what it saw from the browser, so a request carrying
Chrome cookies should look like Chrome. A configured `user_agent` is sent verbatim with no
client hints.
"""

from __future__ import annotations

import sys

CHROMIUM_FAMILY = ("chrome", "chromium", "edge", "brave", "opera", "vivaldi")
FALLBACK_VERSIONS = {"chromium": "126.0.0.0", "firefox": "127.0", "safari": "17.5"}

_PLATFORM_TOKEN = {
    "darwin": ("Macintosh; Intel Mac OS X 10_15_7", '"macOS"'),
    "win32": ("Windows NT 10.0; Win64; x64", '"Windows"'),
    "linux": ("X11; Linux x86_64", '"Linux"'),
}
# Product token appended to the Chrome template, and the brand announced in sec-ch-ua.
_SUFFIX = {"edge": " Edg/{v}", "opera": " OPR/{v}", "vivaldi": " Vivaldi/{v}"}
_BRAND = {
    "chrome": "Google Chrome",
    "edge": "Microsoft Edge",
    "brave": "Brave",
    "opera": "Opera",
    "vivaldi": "Vivaldi",
}


def _platform(platform: str | None) -> tuple[str, str]:
    key = platform or sys.platform
    for prefix, value in _PLATFORM_TOKEN.items():
        if key.startswith(prefix):
            return value
    return _PLATFORM_TOKEN["linux"]


def browser_of(source: str) -> str:
    """`browser:chrome` -> `chrome`; any other source label -> ``."""
    return source.split(":", 1)[1] if source.startswith("browser:") else ""


def user_agent_headers(
    source: str, configured: str = "", platform: str | None = None
) -> dict[str, str]:
    """Headers identifying the client: User-Agent, plus client hints for Chromium cookies."""
    if configured:
        return {"User-Agent": configured}
    browser = browser_of(source)
    token, hint_platform = _platform(platform)
    if browser == "firefox":
        v = FALLBACK_VERSIONS["firefox"]
        return {"User-Agent": f"Mozilla/5.0 ({token}; rv:{v}) Gecko/20100101 Firefox/{v}"}
    if browser == "safari":
        v = FALLBACK_VERSIONS["safari"]
        return {
            "User-Agent": f"Mozilla/5.0 ({_PLATFORM_TOKEN['darwin'][0]}) AppleWebKit/605.1.15 "
            f"(KHTML, like Gecko) Version/{v} Safari/605.1.15"
        }
    v = FALLBACK_VERSIONS["chromium"]
    ua = f"Mozilla/5.0 ({token}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{v} Safari/537.36"
    if browser not in CHROMIUM_FAMILY:
        # File, cache or unknown source: a generic Chrome of this OS, no client hints.
        return {"User-Agent": ua}
    ua += _SUFFIX.get(browser, "").format(v=v)
    major = v.split(".")[0]
    brands = f'"Not/A)Brand";v="8", "Chromium";v="{major}"'
    if browser in _BRAND:
        brands += f', "{_BRAND[browser]}";v="{major}"'
    return {
        "User-Agent": ua,
        "sec-ch-ua": brands,
        "sec-ch-ua-mobile": "?0",
        "sec-ch-ua-platform": hint_platform,
    }
