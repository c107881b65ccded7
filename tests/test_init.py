"""`pplx-export init` end to end against the emulator (issue 12): two signed-in accounts from
a cookie file and from a fake browser jar, the BOT space found or created, mode 0600, no
overwrite without --force, comments kept with it, and `sync` running on the result as is."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import tomlkit
from click.testing import CliRunner, Result

from pplx_export.cli.export import main
from pplx_export.commands.setup.init import account_name, assign_names
from pplx_export.emulator import RunningEmulator, run_emulator
from pplx_export.site.cookies import ACCOUNT_PREFIX, SESSION_COOKIE, RawCookie, cache_path

BOB_TOKEN = "emulator-session-token-bob"
BOB = ("Bob.Builder@example.com", "Bob Builder")


@pytest.fixture(autouse=True)
def no_real_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    # A fresh config paces at 3 s a request; the emulator needs none (no wall clock in tests).
    monkeypatch.setattr("pplx_export.site.pacing.SystemClock.sleep", lambda self, s: None)


@pytest.fixture
def emu() -> Iterator[RunningEmulator]:
    with run_emulator(extra_accounts={BOB_TOKEN: BOB}) as running:
        yield running


def _jar(emu: RunningEmulator) -> dict[str, str]:
    return emu.account_cookies()


def _cli(emu: RunningEmulator, *args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--base-url", emu.base_url], catch_exceptions=False)


def _write_cookies(tmp_path: Path, jar: dict[str, str]) -> Path:
    path = tmp_path / "cookies.json"
    path.write_text(json.dumps(jar), encoding="utf-8")
    return path


def test_account_names() -> None:
    assert account_name("Alice.Example+News@x.org") == "alice-example-news"
    assert account_name("___@x") == "___"
    assert account_name("@x") == "account"
    names = assign_names(["al@a.com", "AL@b.com", "al@c.com"])
    assert list(names.values()) == ["al", "al-2", "al-3"]
    kept = assign_names(["al@b.com", "al@a.com"], {"al": "al@a.com"})
    assert kept == {"al@b.com": "al-2", "al@a.com": "al"}


def test_init_from_cookie_file_then_sync_runs_on_it(emu: RunningEmulator, tmp_path: Path) -> None:
    cookies = _write_cookies(tmp_path, _jar(emu))
    config = tmp_path / "cfg" / "config.toml"
    out = tmp_path / "My Archive"
    common = ["--config", str(config), "--cookies", str(cookies), "--out", str(out)]

    result = _cli(emu, "init", *common, "--create-bot-space", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [a["email"] for a in doc["accounts"]] == ["alice@example.com", BOB[0]]
    assert [a["name"] for a in doc["accounts"]] == ["alice", "bob-builder"]
    assert doc["default_account"] == "alice"
    # Which cookie source a scheduled sync can use (issue 32): the cache init just filled.
    (advice,) = doc["unattended_cookies"]
    assert advice.startswith("cookies: the job signs in from the cookie cache (0 h old")
    assert f"file:{cookies}" in advice
    assert doc["bot_space"]["created"] is True and doc["bot_space"]["title"] == "BOT"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    text = config.read_text("utf-8")
    for token in _jar(emu).values():
        assert token not in text and token not in result.output
    saved = tomlkit.parse(text).unwrap()
    assert saved["default_account"] == "alice"
    assert saved["archive_root"] == str(out)
    assert saved["accounts"]["bob-builder"]["email"] == BOB[0]
    assert saved["bot_space"]["uuid"] == doc["bot_space"]["uuid"]
    assert saved["models"]["defaults"]["deep-research"] == "pplx_alpha"
    assert len(saved["models"]["council"]) == 3
    assert (out / ".gitignore").read_text("utf-8").count("index/.cookies.json") == 1

    # A second init finds the space it created, but refuses to overwrite without --force.
    again = _cli(emu, "init", *common)
    assert again.exit_code == 2
    assert "already exists" in again.stderr and "--force" in again.stderr
    assert config.read_text("utf-8") == text

    # The point: sync runs on that config, untouched.
    synced = _cli(emu, "sync", "--config", str(config), "--cookies", str(cookies))
    assert synced.exit_code == 0, synced.output
    # Both accounts init found are archived (issue 32): a line each, then the total.
    lines = synced.stderr.splitlines()
    assert any(line.startswith("bob-builder: batch: ") for line in lines)
    summary = [line for line in lines if line.startswith("total (2 accounts): batch: ")]
    assert summary and "failed" not in summary[-1]  # the summary names non-zero counts only
    assert list(out.glob("Alice Example/*/*/thread.json"))


def test_force_keeps_comments_and_unknown_keys(emu: RunningEmulator, tmp_path: Path) -> None:
    cookies = _write_cookies(tmp_path, _jar(emu))
    config = tmp_path / "config.toml"
    config.write_text(
        "# my own notes: keep me\n"
        'default_account = "work"\n'
        'my_key = "mine"  # unknown to pplx-export\n\n'
        "[accounts.work]\n"
        'display_name = "Work Folder"\n'
        'email = "ALICE@example.com"\n\n'
        "[network]\n"
        "min_interval = 0  # the emulator needs no pacing\n",
        encoding="utf-8",
    )
    common = ["--config", str(config), "--cookies", str(cookies), "--out", str(tmp_path / "a")]
    result = _cli(emu, "init", *common, "--force")
    assert result.exit_code == 0, result.output
    text = config.read_text("utf-8")
    assert "# my own notes: keep me" in text
    assert "# the emulator needs no pacing" in text
    saved = tomlkit.parse(text).unwrap()
    assert saved["my_key"] == "mine"
    # The account already configured for that email keeps its name and folder.
    assert saved["accounts"]["work"]["display_name"] == "Work Folder"
    assert saved["default_account"] == "work"
    assert saved["accounts"]["bob-builder"]["email"] == BOB[0]
    assert saved["bot_space"]["uuid"] == ""  # none titled BOT, none created
    assert "BOT space: none titled 'BOT'" in result.stdout
    assert stat.S_IMODE(config.stat().st_mode) == 0o600


def _fake_browser(jar: dict[str, str], *, only: str = "chrome"):  # type: ignore[no-untyped-def]
    def loader(browser: str) -> tuple[list[RawCookie], str]:
        if browser != only:
            raise OSError(f"{browser} has no cookie store here")
        raw = [RawCookie(k, v, ".perplexity.ai") for k, v in jar.items()]
        raw.append(RawCookie("other", "x", ".example.com"))
        return raw, f"/profiles/{browser}/Cookies"

    return loader


def test_init_from_a_browser_jar(
    emu: RunningEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pplx_export.site.cookies.browser_cookie3_loader", _fake_browser(_jar(emu)))
    config = tmp_path / "config.toml"
    out = tmp_path / "arch"
    # Auto-detect: edge fails (no store), chrome answers.
    result = _cli(emu, "init", "--config", str(config), "--out", str(out), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert {a["name"] for a in doc["accounts"]} == {"alice", "bob-builder"}
    assert "browser:chrome" in doc["cookies_from"]
    # The verified jar went to the 0600 cache (outside the archive), not the config.
    cache = cache_path(out)
    assert out not in cache.parents
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    assert SESSION_COOKIE in json.loads(cache.read_text("utf-8"))["cookies"]
    assert "token" not in config.read_text("utf-8")


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (OSError("unable to open database file"), "unable to open database file"),
        (KeyError("DBUS_SESSION_BUS_ADDRESS"), "keyring unreachable"),
    ],
)
def test_unreadable_browser_store_or_locked_keyring(
    emu: RunningEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    error: Exception,
    expected: str,
) -> None:
    def broken(browser: str) -> tuple[list[RawCookie], str]:
        raise error

    monkeypatch.setattr("pplx_export.site.cookies.browser_cookie3_loader", broken)
    config = tmp_path / "config.toml"
    result = _cli(emu, "init", "--config", str(config), "--cookies-from", "chrome")
    assert result.exit_code == 3
    assert expected in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output
    assert not config.exists()


def test_cookie_file_without_perplexity_cookie(emu: RunningEmulator, tmp_path: Path) -> None:
    cookies = tmp_path / "cookies.txt"
    cookies.write_text(".example.com\tTRUE\t/\tTRUE\t0\tsid\tabc\n", encoding="utf-8")
    config = tmp_path / "config.toml"
    result = _cli(emu, "init", "--config", str(config), "--cookies", str(cookies))
    assert result.exit_code == 3
    assert "no perplexity.ai session cookie" in result.stderr
    assert "abc" not in result.output
    assert not config.exists()


def test_session_probe_answering_html(tmp_path: Path) -> None:
    with run_emulator(faults="challenge=1,session=1") as emu:
        cookies = _write_cookies(tmp_path, emu.cookies)
        config = tmp_path / "config.toml"
        result = _cli(emu, "init", "--config", str(config), "--cookies", str(cookies))
    assert result.exit_code == 3
    # The retries log their warnings on the way; the reason is the one `error:` line.
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "not JSON" in errors[0]
    assert "Traceback" not in result.output
    assert not config.exists()


def test_no_signed_in_account(emu: RunningEmulator, tmp_path: Path) -> None:
    cookies = _write_cookies(tmp_path, {SESSION_COOKIE: "stale", f"{ACCOUNT_PREFIX}u1": "old"})
    config = tmp_path / "config.toml"
    result = _cli(emu, "init", "--config", str(config), "--cookies", str(cookies))
    assert result.exit_code == 3
    assert "no signed-in perplexity.ai account" in result.stderr
    assert not config.exists()


def test_default_is_the_active_session_and_git_on_request(
    emu: RunningEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": "/dev/null",
    }.items():
        monkeypatch.setenv(key, value)
    jar = {**_jar(emu), SESSION_COOKIE: BOB_TOKEN}  # the browser is on Bob's account
    cookies = _write_cookies(tmp_path, jar)
    config = tmp_path / "config.toml"
    out = tmp_path / "arch"
    common = ["--config", str(config), "--cookies", str(cookies), "--out", str(out)]
    result = _cli(emu, "init", *common, "--create-bot-space", "Agent Inbox", "--git")
    assert result.exit_code == 0, result.output
    saved = tomlkit.parse(config.read_text("utf-8")).unwrap()
    assert saved["default_account"] == "bob-builder"
    assert saved["auto_commit"] is True
    assert saved["bot_space"]["title"] == "Agent Inbox"
    assert (out / ".git").is_dir()
    assert "git repository created" in result.stdout
    assert "next: pplx-export sync" in result.stdout
    # No session token is ever written to the config.
    assert BOB_TOKEN not in config.read_text("utf-8")
    # Found by title, case-insensitively, on a second run.
    again = _cli(emu, "init", *common, "--force", "--bot-title", "agent INBOX", "--json")
    assert again.exit_code == 0, again.output
    space = json.loads(again.stdout)["bot_space"]
    assert space["created"] is False and space["uuid"] == saved["bot_space"]["uuid"]


def test_no_browser_has_cookies_says_what_was_tried(
    emu: RunningEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def nothing(browser: str) -> tuple[list[RawCookie], str]:
        raise OSError(f"no {browser} profile")

    monkeypatch.setattr("pplx_export.site.cookies.browser_cookie3_loader", nothing)
    config = tmp_path / "config.toml"
    result = _cli(emu, "init", "--config", str(config), "--out", str(tmp_path / "a"))
    assert result.exit_code == 3
    assert "no fresh cookie cache" in result.stderr
    for browser in ("edge", "chrome", "firefox", "safari"):
        assert f"no {browser} profile" in result.stderr
    assert not config.exists()


def test_force_keeps_a_configured_bot_space_it_cannot_see(
    emu: RunningEmulator, tmp_path: Path
) -> None:
    cookies = _write_cookies(tmp_path, _jar(emu))
    config = tmp_path / "config.toml"
    config.write_text(
        '[bot_space]\nuuid = "u-1"\nslug = "my-bots"\ntitle = "Robots"\n', encoding="utf-8"
    )
    result = _cli(emu, "init", "--config", str(config), "--cookies", str(cookies), "--force")
    assert result.exit_code == 0, result.output
    saved = tomlkit.parse(config.read_text("utf-8")).unwrap()
    assert saved["bot_space"] == {"uuid": "u-1", "slug": "my-bots", "title": "Robots"}
    assert "kept the configured BOT space my-bots" in result.stdout
