"""Conventions of the ecosystem (issue 16, point 9): `--cookies-from-browser` with yt-dlp's
syntax, `--until`, `re-render --dry-run -v`, and the status footer at 80 columns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import browser_cookie3
import pytest
from click.testing import CliRunner

from pplx_export.cli.export import main
from pplx_export.commands.export.plan import make_plan
from pplx_export.site.browsers import BrowserSpec, find_profile_cookies, parse_browser_spec
from pplx_export.site.cookies import SESSION_COOKIE, browser_cookie3_loader


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("chrome", BrowserSpec("chrome")),
        ("Chrome:Profile 2", BrowserSpec("chrome", "", "Profile 2")),
        ("chromium+kwallet", BrowserSpec("chromium", "kwallet")),
        ("brave+basictext:/p/Default", BrowserSpec("brave", "basictext", "/p/Default")),
        ("firefox:default-release", BrowserSpec("firefox", "", "default-release")),
    ],
)
def test_browser_specs(text: str, spec: BrowserSpec) -> None:
    assert parse_browser_spec(text) == spec


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("netscape", "unknown browser"),
        ("chrome+vault", "unknown keyring"),
        ("firefox+kwallet", "Chromium-based browsers only"),
    ],
)
def test_bad_browser_specs_are_usage_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_browser_spec(text)
    result = CliRunner().invoke(main, ["batch", "--dry-run", "--cookies-from-browser", text])
    assert result.exit_code == 2 and message in result.output


def test_cookies_from_is_an_alias() -> None:
    for flag in ("--cookies-from", "--cookies-from-browser"):
        result = CliRunner().invoke(main, ["batch", "--dry-run", flag, "chrome:Profile 1"])
        assert result.exit_code == 0, result.output


def test_profiles_are_found_by_name_or_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    chrome = tmp_path / "config" / "google-chrome" / "Profile 2" / "Network"
    chrome.mkdir(parents=True)
    (chrome / "Cookies").write_bytes(b"")
    firefox = tmp_path / "home" / ".mozilla" / "firefox" / "x1y2.work"
    firefox.mkdir(parents=True)
    (firefox / "cookies.sqlite").write_bytes(b"")
    assert find_profile_cookies(BrowserSpec("chrome", "", "Profile 2")) == chrome / "Cookies"
    assert find_profile_cookies(BrowserSpec("firefox", "", "work")) == firefox / "cookies.sqlite"
    assert find_profile_cookies(BrowserSpec("firefox", "", str(firefox))) == (
        firefox / "cookies.sqlite"
    )
    with pytest.raises(ValueError, match=r"no chrome profile 'Work'.*google-chrome"):
        find_profile_cookies(BrowserSpec("chrome", "", "Work"))


def test_the_loader_reads_the_profile_with_the_chosen_keyring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """browser-cookie3 gets the profile's database, and reads the key from that keyring."""
    db = tmp_path / "Cookies"
    db.write_bytes(b"")
    seen: dict[str, Any] = {}

    class FakeChrome:
        def __init__(self, cookie_file: str | None = None, domain_name: str = "") -> None:
            seen["cookie_file"] = cookie_file
            self.cookie_file = cookie_file

        def load(self) -> list[Any]:
            manager = browser_cookie3._LinuxPasswordManager(use_dbus=False)
            seen["password"] = manager.get_password("chrome")
            cookie = type("C", (), {"name": SESSION_COOKIE, "value": "v", "domain": ".x"})
            return [cookie]

    original = browser_cookie3._LinuxPasswordManager.get_password
    monkeypatch.setattr(browser_cookie3, "Chrome", FakeChrome)
    raw, where = browser_cookie3_loader("chrome", parse_browser_spec(f"chrome+basictext:{db}"))
    assert seen == {"cookie_file": str(db), "password": b"peanuts"}
    assert where == str(db) and raw[0].name == SESSION_COOKIE
    assert browser_cookie3._LinuxPasswordManager.get_password is original


def test_until_keeps_rows_up_to_the_end_of_that_day() -> None:
    rows = [
        {"entryUUID": "a", "lastUpdated": "2026-03-01T10:00:00Z"},
        {"entryUUID": "b", "lastUpdated": "2026-03-02T23:59:00Z"},
        {"entryUUID": "c", "lastUpdated": "2026-03-03T00:00:00Z"},
    ]
    plan = make_plan(rows, {}, until="2026-03-02")
    assert [i.uuid for i in plan.todo] == ["b", "a"] and plan.filtered_out == 1
    plan = make_plan(rows, {}, since="2026-03-02", until="2026-03-02")
    assert [i.uuid for i in plan.todo] == ["b"]
    plan = make_plan(rows, {}, until="2026-03-01T10:00:00Z")
    assert [i.uuid for i in plan.todo] == ["a"]


def test_until_before_since_is_a_usage_error() -> None:
    argv = ["batch", "--dry-run", "--since", "2026-03-02", "--until", "2026-03-01"]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2 and "--until" in result.output


def test_rerender_dry_run_verbose_names_the_files(tmp_path: Path) -> None:
    fixtures = Path(__file__).resolve().parent / "fixtures" / "archive"
    import shutil

    root = tmp_path / "archive"
    shutil.copytree(fixtures, root)
    (root / "index").mkdir(exist_ok=True)
    first = CliRunner().invoke(main, ["re-render", "--out", str(root), "--jobs", "1", "-q"])
    assert first.exit_code == 0, first.output
    turn = next(root.glob("*/*/*/turns/turn_0001.md"))
    turn.write_text("stale\n", encoding="utf-8")
    argv = ["re-render", "--out", str(root), "--dry-run", "-v", "--jobs", "1"]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    rel = turn.relative_to(root).as_posix()
    assert f"  would write  {rel}" in result.stdout.splitlines()
    assert turn.read_text(encoding="utf-8") == "stale\n"
    doc = json.loads(CliRunner().invoke(main, [*argv[:-3], "--dry-run", "--json"]).stdout)
    assert {"path": rel, "action": "write"} in doc["would_change"]


def test_batch_summary_fits_80_columns() -> None:
    from pplx_export.commands.export.batch import BatchSummary

    big = BatchSummary(1234, 56, 78, 90, 12, 3456, 78, 98765, 12345.6)
    lines = big.line().splitlines()
    assert len(lines) == 2 and all(len(line) <= 80 for line in lines)
    assert BatchSummary(ok=9, expired=1, requests=25, elapsed=0.2).line() == (
        "batch: 9 ok, 1 expired; 25 requests, 0.2s"
    )


def test_status_fits_80_columns(tmp_path: Path) -> None:
    import io
    import shutil
    from datetime import UTC, datetime

    from rich.console import Console

    from pplx_export.commands.inspect.status import collect_status, print_status
    from pplx_export.config import Config

    root = tmp_path / "archive"
    shutil.copytree(Path(__file__).resolve().parent / "fixtures" / "archive", root)
    (root / "index").mkdir(exist_ok=True)
    doc = collect_status(root, Config(path=tmp_path / "c.toml"), now=datetime.now(UTC))
    buf = io.StringIO()
    print_status(doc, Console(file=buf, force_terminal=True, width=80, color_system=None))
    lines = buf.getvalue().splitlines()
    # The archive's own path is printed whole on its line (a path cut in two cannot be
    # pasted); its length is the test runner's (pytest-xdist's tmp paths are longer), not ours.
    assert lines[0] == f"Archive {root}"
    rest = lines[1:]
    assert rest and all(len(line) <= 80 for line in rest), max(rest, key=len)
