"""`pplx-export schedule` (issue 12): quoting that survives `sh -c`, a cron line that really
runs `sync` against the emulator, systemd units that verify, `--install` idempotent (with a
fake crontab on PATH: the real one is never touched)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pplx_export.cli.export import main
from pplx_export.commands.setup.schedule import (
    Installer,
    merge_crontab,
    run_schedule,
    systemd_quote,
    unit_name,
)
from pplx_export.emulator import DEFAULT_EMAIL, run_emulator

REPO = Path(__file__).resolve().parent.parent
FAKE_CRONTAB = """#!/bin/sh
# A stand-in for crontab(1): the table lives in $FAKE_CRONTAB_FILE.
if [ "$1" = "-l" ]; then
  if [ -f "$FAKE_CRONTAB_FILE" ]; then cat "$FAKE_CRONTAB_FILE"; exit 0; fi
  echo "no crontab for $(id -un)" >&2; exit 1
fi
if [ "$1" = "-" ]; then cat > "$FAKE_CRONTAB_FILE"; exit 0; fi
echo "fake crontab: unsupported $*" >&2; exit 2
"""


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def weird(tmp_path: Path) -> Path:
    """An archive path with a space, a single and a double quote, a $ and a %."""
    return tmp_path / 'it\'s my "archive" $HOME 100%'


@pytest.fixture
def fake_crontab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    script = bindir / "crontab"
    script.write_text(FAKE_CRONTAB, encoding="utf-8")
    script.chmod(0o755)
    table = tmp_path / "crontab.txt"
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_CRONTAB_FILE", str(table))
    return table


def _command_of(cron_line: str) -> str:
    """What cron hands to `sh -c`: the line minus the 5 time fields, `\\%` unescaped."""
    return cron_line.split(" ", 5)[5].replace("\\%", "%")


def test_cron_line_quotes_every_path(weird: Path, tmp_path: Path) -> None:
    config = tmp_path / "conf dir" / "config.toml"
    result = run_schedule(config=config, archive_root=weird, time="4:05")
    line = result.cron_line
    assert line.startswith("5 4 * * * ")
    words = shlex.split(_command_of(line))
    assert words[words.index("--out") + 1] == str(weird)
    assert words[words.index("--config") + 1] == str(config)
    log = weird / "index" / "logs" / "sync.log"
    assert words[-3:] == [">>", str(log), "2>&1"]
    assert words[words.index("--log-file") + 1] == str(log)
    snippet = (weird / "index" / "cron_snippet.txt").read_text("utf-8")
    assert line in snippet
    assert Path(words[0]).is_absolute()


def test_bad_time_is_a_usage_error(tmp_path: Path) -> None:
    result = _cli("schedule", "--time", "25:00", "--out", str(tmp_path / "a"))
    assert result.exit_code == 2
    assert "HH:MM" in result.stderr


def test_cron_line_runs_sync_under_sh(weird: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        'default_account = "alice"\n\n[accounts.alice]\n'
        f'email = "{DEFAULT_EMAIL}"\n\n[network]\nmin_interval = 0\nbackoff_cap = 0\n',
        encoding="utf-8",
    )
    with run_emulator() as emu:
        cookies = tmp_path / "cook ie's.json"
        cookies.write_text(json.dumps(emu.cookies), encoding="utf-8")
        result = _cli(
            "schedule",
            "--config",
            str(config),
            "--out",
            str(weird),
            "--cookies",
            str(cookies),
            "--json",
        )
        assert result.exit_code == 0, result.output
        line = json.loads(result.stdout)["cron_line"]
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PPLX_BASE_URL": emu.base_url}
        done = subprocess.run(
            ["sh", "-c", _command_of(line)], env=env, capture_output=True, text=True, timeout=120
        )
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert list(weird.glob("*/*/*/thread.json"))
    log = (weird / "index" / "logs" / "sync.log").read_text("utf-8")
    assert "signed in as" in log


def test_systemd_units_quote_and_verify(weird: Path, tmp_path: Path) -> None:
    result = run_schedule(
        config=tmp_path / "config.toml", archive_root=weird, time="23:59", systemd=True
    )
    assert result.service is not None and result.timer is not None
    service = result.service.read_text("utf-8")
    timer = result.timer.read_text("utf-8")
    assert "Persistent=true" in timer and "OnCalendar=*-*-* 23:59:00" in timer
    assert systemd_quote(str(weird)) in service
    assert "$$HOME" in service and "100%%" in service
    assert any("systemctl --user enable --now" in line for line in [*result.instructions])
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed here")
    done = subprocess.run(
        [analyze, "verify", str(result.service), str(result.timer)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "SYSTEMD_LOG_LEVEL": "warning"},
    )
    assert done.returncode == 0, done.stderr
    assert "pplx-export-sync" not in done.stderr, done.stderr


def test_install_twice_installs_once(fake_crontab: Path, tmp_path: Path) -> None:
    fake_crontab.write_text("MAILTO=me\n0 1 * * * backup.sh\n", encoding="utf-8")
    args = ["schedule", "--out", str(tmp_path / "arch"), "--install", "--json"]
    first = _cli(*args)
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["installed"] == "cron"
    table = fake_crontab.read_text("utf-8")
    second = _cli(*args)
    assert second.exit_code == 0, second.output
    assert json.loads(second.stdout)["already_installed"] is True
    assert fake_crontab.read_text("utf-8") == table
    assert table.startswith("MAILTO=me\n0 1 * * * backup.sh\n")
    assert table.count(" sync ") == 1
    # A new time replaces the entry instead of adding one.
    third = _cli(*args, "--time", "05:00")
    assert third.exit_code == 0, third.output
    table = fake_crontab.read_text("utf-8")
    assert table.count(" sync ") == 1 and "\n0 5 * * * " in table


def test_install_with_no_crontab_yet(fake_crontab: Path, tmp_path: Path) -> None:
    result = _cli("schedule", "--out", str(tmp_path / "arch"), "--install")
    assert result.exit_code == 0, result.output
    assert fake_crontab.read_text("utf-8").count(" sync ") == 1
    assert "crontab -e" in result.stdout  # how to undo it


def test_merge_crontab_drops_duplicates() -> None:
    marker = "# pplx-export sync: /a"
    current = f"{marker}\nold\nx\n{marker}\nold2\n"
    assert merge_crontab(current, marker, "new") == f"{marker}\nnew\nx\n"
    assert merge_crontab(f"{marker}\nnew\n", marker, "new") is None


def test_systemd_install_with_injected_commands(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    fake = tmp_path / "systemctl"
    fake.write_text(f'#!/bin/sh\necho "$*" >> {shlex.quote(str(calls))}\n', encoding="utf-8")
    fake.chmod(0o755)
    units = tmp_path / "units"
    installer = Installer(systemctl=(str(fake), "--user"), unit_dir=units)
    kwargs = dict(config=tmp_path / "c.toml", archive_root=tmp_path / "a", systemd=True)
    first = run_schedule(**kwargs, install=True, installer=installer)  # type: ignore[arg-type]
    assert not first.already_installed
    name = unit_name(tmp_path / "a")
    assert name.startswith("pplx-export-sync-") and len(name) == len("pplx-export-sync-") + 8
    assert (units / f"{name}.timer").is_file()
    second = run_schedule(**kwargs, install=True, installer=installer)  # type: ignore[arg-type]
    assert second.already_installed
    assert (
        calls.read_text("utf-8").splitlines()
        == [
            "--user daemon-reload",
            f"--user enable --now {name}.timer",
        ]
        * 2
    )


def test_falls_back_to_python_dash_m(tmp_path: Path) -> None:
    from pplx_export.commands.setup.schedule import executable_argv

    lone = tmp_path / "bin" / "python3"
    lone.parent.mkdir()
    lone.write_text("", encoding="utf-8")
    assert executable_argv(str(lone)) == [str(lone), "-m", "pplx_export"]
    done = subprocess.run(
        [sys.executable, "-m", "pplx_export", "--version"], capture_output=True, text=True
    )
    assert done.returncode == 0 and "pplx-export" in done.stdout
