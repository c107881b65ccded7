"""Issue 32: the schedule archives every account and keeps signing in night after night;
`schedule --account/--lang/--flavor/--on-failure/--healthcheck-url` reach the job;
`--status`, `--uninstall`, `--check`; names unique per archive and account set. A fake
crontab and systemctl on PATH: the real ones are never touched."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pplx_export.cli.export import main
from pplx_export.commands.setup.schedule import cron_marker, unit_name
from pplx_export.commands.setup.schedule_manage import next_run
from pplx_export.emulator import DEFAULT_EMAIL, RunningEmulator, run_emulator
from pplx_export.site.cookies import cache_path
from pplx_export.store.batch_state import BatchState
from pplx_export.store.library_index import load_index
from tests.test_schedule import FAKE_CRONTAB

BOB_TOKEN = "emulator-session-token-bob"
BOB_EMAIL = "bob@example.com"


@pytest.fixture
def fakebin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake crontab (table in $FAKE_CRONTAB_FILE) and a fake systemctl that logs calls."""
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    (bindir / "crontab").write_text(FAKE_CRONTAB, encoding="utf-8")
    calls = tmp_path / "systemctl.txt"
    (bindir / "systemctl").write_text(
        f'#!/bin/sh\necho "$*" >> {shlex.quote(str(calls))}\n', encoding="utf-8"
    )
    for tool in ("crontab", "systemctl"):
        (bindir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_CRONTAB_FILE", str(tmp_path / "crontab.txt"))
    return tmp_path / "crontab.txt"


@pytest.fixture
def emu() -> Iterator[RunningEmulator]:
    with run_emulator(extra_accounts={BOB_TOKEN: (BOB_EMAIL, "Bob Rivera")}) as running:
        yield running


def _config(tmp_path: Path) -> Path:
    config = tmp_path / "config.toml"
    config.write_text(
        'default_account = "alice"\n\n[network]\nmin_interval = 0\nbackoff_cap = 0\n\n'
        f'[accounts.alice]\nemail = "{DEFAULT_EMAIL}"\n\n[accounts.bob]\nemail = "{BOB_EMAIL}"\n',
        encoding="utf-8",
    )
    return config


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _command_of(cron_line: str) -> str:
    return cron_line.split(" ", 5)[5].replace("\\%", "%")


def test_the_cron_line_archives_both_accounts_on_day_two_under_env_i(
    emu: RunningEmulator, tmp_path: Path
) -> None:
    """Day one: a sync from a cookie file (fills the cache, recording the file). Day two,
    13 h later: the cron line, with no cookie option, under `env -i HOME PATH`."""
    config, out = _config(tmp_path), tmp_path / "archive"
    cookies = tmp_path / "cookies.json"
    cookies.write_text(json.dumps(emu.account_cookies()), encoding="utf-8")
    base = ["--config", str(config), "--out", str(out), "--base-url", emu.base_url]
    day_one = _cli("sync", "--account", "alice", "--cookies", str(cookies), *base)
    assert day_one.exit_code == 0, day_one.output
    assert not (out / "index" / "library_bob.json").exists()
    made = _cli("schedule", *base, "--json")
    assert made.exit_code == 0, made.output
    line = json.loads(made.stdout)["cron_line"]
    assert "--account" not in line and "--cookies" not in line  # every account, the cache
    # Day two: the cache is 13 h old.
    cache = cache_path(out)
    doc = json.loads(cache.read_text("utf-8"))
    doc["fetched_at"] = time.time() - 13 * 3600
    cache.write_text(json.dumps(doc), encoding="utf-8")
    home = os.environ["HOME"]  # the autouse fixture's; the cache lives under it
    done = subprocess.run(
        ["env", "-i", f"HOME={home}", "PATH=/usr/bin:/bin", "sh", "-c", _command_of(line)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    state = BatchState.load(out).threads
    for account in ("alice", "bob"):
        rows = load_index(out, account).threads
        assert rows and all(r["entryUUID"] in state for r in rows), account
    log = (out / "index" / "logs" / "sync.log").read_text("utf-8")
    assert "signed in as alice@example.com" in log and "signed in as bob@example.com" in log
    assert "OS " in log and "archive root" in log  # the -v header starts the run's log
    renewed = json.loads(cache.read_text("utf-8"))["fetched_at"]
    assert time.time() - renewed < 600  # renewed by the cached run
    assert json.loads(cache.read_text("utf-8"))["origin_spec"] == f"file:{cookies}"


def test_schedule_writes_the_options_it_is_given(tmp_path: Path) -> None:
    config, out = _config(tmp_path), tmp_path / "archive"
    base = ["--config", str(config), "--out", str(out)]
    plain = json.loads(_cli("schedule", *base, "--json").stdout)
    result = _cli(
        "schedule", *base, "--account", "bob", "--lang", "zh", "--flavor", "obsidian",
        "--on-failure", "notify-send pplx \"$PPLX_EXPORT_ERROR\"",
        "--healthcheck-url", "https://hc.example/ping/x", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    words = shlex.split(_command_of(doc["cron_line"]))
    assert words[words.index("--account") + 1] == "bob"
    assert words[words.index("--lang") + 1] == "zh"
    assert words[words.index("--flavor") + 1] == "obsidian"
    assert words[words.index("--on-failure") + 1] == 'notify-send pplx "$PPLX_EXPORT_ERROR"'
    assert words[words.index("--healthcheck-url") + 1] == "https://hc.example/ping/x"
    snippet = (out / "index" / "cron_snippet.txt").read_text("utf-8")
    assert cron_marker(out, ["bob"]) + "\n" in snippet
    assert plain["cron_line"] != doc["cron_line"] and "--account" not in plain["cron_line"]
    assert unit_name(out, ["bob"]) != unit_name(out) != unit_name(tmp_path / "other")
    refused = _cli("schedule", *base, "--log-file", str(tmp_path / "x.log"))
    assert refused.exit_code == 2 and "--log-file cannot be passed on" in refused.stderr
    both = _cli("schedule", *base, "--install", "--uninstall")
    assert both.exit_code == 2


def test_status_uninstall_and_the_both_kinds_warning(fakebin: Path, tmp_path: Path) -> None:
    config, out = _config(tmp_path), tmp_path / "archive"
    base = ["--config", str(config), "--out", str(out)]
    assert _cli("schedule", *base, "--install").exit_code == 0
    assert (
        _cli("schedule", *base, "--install", "--account", "bob", "--time", "04:10").exit_code == 0
    )
    table = fakebin.read_text("utf-8")
    assert table.count(" sync ") == 2 and cron_marker(out, ["bob"]) in table
    timer = _cli("schedule", *base, "--install", "--systemd", "--time", "02:00")
    assert timer.exit_code == 0, timer.output
    assert "a crontab entry also runs sync for this archive" in timer.stdout
    units = Path(os.environ["XDG_CONFIG_HOME"]) / "systemd" / "user"
    assert (units / f"{unit_name(out)}.timer").is_file()

    status = _cli("schedule", *base, "--status", "--json")
    assert status.exit_code == 0, status.output
    doc = json.loads(status.stdout)
    assert [e["time"] for e in doc["cron"]] == ["03:30", "04:10"]
    assert [u["time"] for u in doc["systemd"]] == ["02:00"]
    assert doc["next_run"] is not None
    assert "both a crontab entry and a systemd timer" in doc["warnings"][0]
    text = _cli("schedule", *base, "--status").stdout
    assert "crontab: every day at 04:10 (bob)" in text and "next run: " in text

    gone = _cli("schedule", *base, "--uninstall", "--account", "bob")
    assert gone.exit_code == 0, gone.output
    assert fakebin.read_text("utf-8").count(" sync ") == 1  # bob's entry only
    rest = _cli("schedule", *base, "--uninstall")
    assert rest.exit_code == 0 and "systemd timer" in rest.stdout
    assert " sync " not in fakebin.read_text("utf-8")
    assert not list(units.glob("pplx-export-sync*"))
    none = _cli("schedule", *base, "--status")
    assert "nothing scheduled" in none.stdout


def test_check_runs_the_sign_in_in_crons_environment(emu: RunningEmulator, tmp_path: Path) -> None:
    config, out = _config(tmp_path), tmp_path / "archive"
    cookies = tmp_path / "cookies.json"
    cookies.write_text(json.dumps(emu.account_cookies()), encoding="utf-8")
    base = ["--config", str(config), "--out", str(out), "--base-url", emu.base_url]
    good = _cli("schedule", "--check", "--cookies", str(cookies), *base)
    assert good.exit_code == 0, good.output
    assert "as cron runs it: signs in" in good.stdout
    assert "bob: signed in as bob@example.com" in good.stdout
    cookies.write_text(json.dumps({"__Secure-next-auth.session-token": "stale"}), "utf-8")
    bad = _cli("schedule", "--check", "--cookies", str(cookies), *base, "--json")
    assert bad.exit_code == 3
    assert json.loads(bad.stdout)["ok"] is False


def test_schedule_and_init_say_which_cookie_source_works_unattended(tmp_path: Path) -> None:
    config, out = _config(tmp_path), tmp_path / "archive"
    base = ["--config", str(config), "--out", str(out)]

    def said(*args: str) -> str:
        result = _cli("schedule", *base, *args)
        assert result.exit_code == 0, result.output
        # Prose is wrapped at 80 columns (lines with a path or the cron line stay whole).
        assert all(len(line) <= 80 for line in result.stdout.splitlines() if "/" not in line)
        return " ".join(result.stdout.split())

    assert "keyring, which cron cannot reach" in said("--cookies-from-browser", "chrome")
    assert "needs no keyring" in said("--cookies-from-browser", "firefox")
    jar = tmp_path / "c.txt"
    jar.write_text("", encoding="utf-8")
    assert "works unattended" in said("--cookies", str(jar))


def test_next_run_is_the_nearest_time_to_come() -> None:
    from datetime import datetime

    now = datetime(2026, 12, 5, 3, 40)
    assert next_run(["03:30", "04:10"], now) == datetime(2026, 12, 5, 4, 10)
    assert next_run(["03:30"], now) == datetime(2026, 12, 6, 3, 30)
    assert next_run([], now) is None
