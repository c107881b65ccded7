"""User-Agent and client hints follow the cookie source; a configured UA wins verbatim."""

from __future__ import annotations

import pytest

from pplx_export.site.useragent import browser_of, user_agent_headers


def test_configured_ua_wins_without_hints() -> None:
    assert user_agent_headers("browser:chrome", "Custom/9") == {"User-Agent": "Custom/9"}


@pytest.mark.parametrize(
    ("browser", "ua_part", "brand"),
    [
        ("chrome", "Chrome/126.0.0.0 Safari/537.36", '"Google Chrome";v="126"'),
        ("edge", "Edg/126.0.0.0", '"Microsoft Edge";v="126"'),
        ("opera", "OPR/126.0.0.0", '"Opera";v="126"'),
        ("vivaldi", "Vivaldi/126.0.0.0", '"Vivaldi";v="126"'),
        ("brave", "Chrome/126.0.0.0", '"Brave";v="126"'),
    ],
)
def test_chromium_family_sends_client_hints(browser: str, ua_part: str, brand: str) -> None:
    h = user_agent_headers(f"browser:{browser}", platform="win32")
    assert ua_part in h["User-Agent"] and "Windows NT 10.0; Win64; x64" in h["User-Agent"]
    assert h["sec-ch-ua"].startswith('"Not/A)Brand";v="8", "Chromium";v="126"')
    assert brand in h["sec-ch-ua"]
    assert h["sec-ch-ua-mobile"] == "?0" and h["sec-ch-ua-platform"] == '"Windows"'


def test_chromium_has_no_extra_brand() -> None:
    h = user_agent_headers("browser:chromium", platform="linux")
    assert h["sec-ch-ua"] == '"Not/A)Brand";v="8", "Chromium";v="126"'
    assert h["sec-ch-ua-platform"] == '"Linux"'


def test_firefox_safari_and_files_send_no_hints() -> None:
    ff = user_agent_headers("browser:firefox", platform="darwin")
    assert list(ff) == ["User-Agent"] and "Firefox/127.0" in ff["User-Agent"]
    assert "Macintosh" in ff["User-Agent"]
    sf = user_agent_headers("browser:safari")
    assert list(sf) == ["User-Agent"] and "Version/17.5 Safari" in sf["User-Agent"]
    generic = user_agent_headers("file:cookies.txt", platform="linux")
    assert list(generic) == ["User-Agent"] and "X11; Linux x86_64" in generic["User-Agent"]
    assert "Chrome/" in generic["User-Agent"]


def test_browser_of() -> None:
    assert browser_of("browser:edge") == "edge"
    assert browser_of("cache") == ""
