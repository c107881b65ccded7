"""Issue 32: every configured account by default, a loud failure (`--on-failure`,
`--healthcheck-url`, `status --check`), against the emulator and a loopback HTTP server."""

from __future__ import annotations

import json
import logging
import shlex
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
import tomlkit
from click.testing import CliRunner, Result

from pplx_export.cli.export import main
from pplx_export.commands.inspect.status import collect_status
from pplx_export.config import load_config
from pplx_export.emulator import DEFAULT_EMAIL, RunningEmulator, run_emulator
from pplx_export.store.batch_state import BatchState
from pplx_export.store.docs import load_bytes, save_bytes
from pplx_export.store.library_index import load_index
from pplx_export.store.sync_runs import RUNS_KEY, load_runs
from pplx_export.util.timefmt import format_utc

BOB_TOKEN = "emulator-session-token-bob"
BOB_EMAIL = "bob@example.com"


@pytest.fixture
def emu() -> Iterator[RunningEmulator]:
    with run_emulator(extra_accounts={BOB_TOKEN: (BOB_EMAIL, "Bob Rivera")}) as running:
        yield running


def _write(tmp_path: Path, emu: RunningEmulator, bob_email: str = BOB_EMAIL) -> None:
    (tmp_path / "config.toml").write_text(
        'default_account = "alice"\n\n[network]\nmin_interval = 0\nbackoff_cap = 0\n\n'
        f'[accounts.alice]\nemail = "{DEFAULT_EMAIL}"\n\n'
        f'[accounts.bob]\nemail = "{bob_email}"\n',
        encoding="utf-8",
    )
    (tmp_path / "cookies.json").write_text(json.dumps(emu.account_cookies()), "utf-8")


def _cli(tmp_path: Path, emu: RunningEmulator, *args: str) -> Result:
    common = ["--config", str(tmp_path / "config.toml"), "--out", str(tmp_path / "out")]
    common += ["--cookies", str(tmp_path / "cookies.json"), "--base-url", emu.base_url]
    return CliRunner().invoke(main, [*args, *common], catch_exceptions=False)


def _status(tmp_path: Path, *args: str) -> Result:
    common = ["--config", str(tmp_path / "config.toml"), "--out", str(tmp_path / "out")]
    return CliRunner().invoke(main, ["status", *args, *common], catch_exceptions=False)


def test_one_sync_archives_every_configured_account(emu: RunningEmulator, tmp_path: Path) -> None:
    _write(tmp_path, emu)
    result = _cli(tmp_path, emu, "sync")
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert any(line.startswith("alice: batch: ") for line in lines)
    assert any(line.startswith("bob: batch: ") for line in lines)
    assert any(line.startswith("total (2 accounts): batch: ") for line in lines)
    out = tmp_path / "out"
    state = BatchState.load(out).threads
    for account in ("alice", "bob"):
        rows = load_index(out, account).threads
        assert rows, account
        assert all(state[r["entryUUID"]]["status"] in ("ok", "expired", "deleted") for r in rows)
    runs = load_runs(out)
    assert runs["alice"]["last_result"] == runs["bob"]["last_result"] == "ok"
    # --account narrows to one account: bob's index is not touched.
    before = (out / "index" / "library_bob.json").stat().st_mtime_ns
    result = _cli(tmp_path, emu, "sync", "--account", "alice", "--json")
    assert result.exit_code == 0, result.output
    assert "accounts" not in json.loads(result.stdout)  # one account's summary, as before
    assert (out / "index" / "library_bob.json").stat().st_mtime_ns == before


def test_one_failing_account_does_not_stop_the_others(emu: RunningEmulator, tmp_path: Path) -> None:
    _write(tmp_path, emu, bob_email="nobody@example.com")  # no session in the jar for bob
    result = _cli(tmp_path, emu, "sync", "--json")
    assert result.exit_code == 3, result.output  # bob's sign-in was refused
    doc = json.loads(result.stdout)
    alice, bob = doc["accounts"]
    assert alice["account"] == "alice" and alice["ok"] > 0
    assert bob["account"] == "bob" and "nobody@example.com" in bob["error"]
    assert "1 of 2 accounts failed (bob)" in result.stderr
    assert load_runs(tmp_path / "out")["bob"]["last_result"].startswith("error: ")
    result = _cli(tmp_path, emu, "index")
    assert result.exit_code == 3
    assert "index total (2 accounts, 1 failed)" in result.stderr
    result = _cli(tmp_path, emu, "batch", "--account", "alice")
    assert result.exit_code == 0, result.output


def test_status_check_fails_on_a_stale_account(emu: RunningEmulator, tmp_path: Path) -> None:
    _write(tmp_path, emu)
    assert _cli(tmp_path, emu, "sync").exit_code == 0
    fresh = _status(tmp_path, "--check")
    assert fresh.exit_code == 0, fresh.output
    assert "WARNING" not in fresh.stdout
    # Bob's last successful sync was three days ago: older than a day's interval + a day.
    doc = json.loads(load_bytes(tmp_path / "out", RUNS_KEY) or b"")
    doc["accounts"]["bob"]["last_ok_at"] = format_utc(datetime.now(UTC) - timedelta(days=3))
    save_bytes(tmp_path / "out", RUNS_KEY, json.dumps(doc))
    stale = _status(tmp_path, "--check")
    assert stale.exit_code == 1
    assert "WARNING bob: last successful sync 3 d ago" in stale.stdout
    assert "not synced for too long: bob" in stale.stderr
    assert _status(tmp_path).exit_code == 0  # without --check only a warning
    cfg = load_config(tmp_path / "config.toml")
    later = collect_status(tmp_path / "out", cfg, now=datetime.now(UTC) + timedelta(days=3))
    assert later["stale_accounts"] == ["alice", "bob"]


class _Recorder(BaseHTTPRequestHandler):
    hits: ClassVar[list[tuple[str, str, str]]] = []

    def _record(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8") if length else ""
        type(self).hits.append((self.command, self.path, body))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"OK")

    do_GET = _record
    do_POST = _record

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def listener() -> Iterator[tuple[str, list[tuple[str, str, str]]]]:
    hits: list[tuple[str, str, str]] = []
    handler = type("Handler", (_Recorder,), {"hits": hits})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_on_failure_and_healthcheck_reach_a_local_server(
    emu: RunningEmulator, tmp_path: Path, listener: tuple[str, list[tuple[str, str, str]]]
) -> None:
    url, hits = listener
    _write(tmp_path, emu)
    hook = (
        f"{shlex.quote(sys.executable)} -c 'import os, urllib.request; "
        f'urllib.request.urlopen("{url}/hook", '
        'data=(os.environ["PPLX_EXPORT_EXIT"] + " " + os.environ["PPLX_EXPORT_ERROR"]).encode())'
        "'"
    )
    ok = _cli(tmp_path, emu, "sync", "--on-failure", hook, "--healthcheck-url", f"{url}/ping")
    assert ok.exit_code == 0, ok.output
    assert hits == [("GET", "/ping", "")]  # success: a ping, and no hook
    hits.clear()
    _write(tmp_path, emu, bob_email="nobody@example.com")
    bad = _cli(tmp_path, emu, "sync", "--on-failure", hook, "--healthcheck-url", f"{url}/ping")
    assert bad.exit_code == 3
    assert [(method, path) for method, path, _ in hits] == [
        ("POST", "/hook"),
        ("POST", "/ping/fail"),
    ]
    assert hits[0][2].startswith("3 1 of 2 accounts failed (bob)")
    assert "accounts failed" in hits[1][2]


def test_the_config_keys_are_the_defaults_of_the_flags(
    emu: RunningEmulator, tmp_path: Path, listener: tuple[str, list[tuple[str, str, str]]]
) -> None:
    url, hits = listener
    _write(tmp_path, emu, bob_email="nobody@example.com")
    config = tmp_path / "config.toml"
    config.write_text(f'healthcheck_url = "{url}/hc"\n' + config.read_text("utf-8"), "utf-8")
    assert _cli(tmp_path, emu, "sync").exit_code == 3
    assert [(m, p) for m, p, _ in hits] == [("POST", "/hc/fail")]
    hits.clear()
    assert _cli(tmp_path, emu, "sync", "--healthcheck-url", "").exit_code == 3
    assert hits == []  # an empty flag turns the config's off


def test_sync_does_the_weekly_full_sweep_itself(
    emu: RunningEmulator, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 32 point 4: no nag to run `index --full`; sync sweeps when the last sweep is
    older than full_index_days (here 1 day, the stamp 3 days old)."""
    _write(tmp_path, emu)
    config = tmp_path / "config.toml"
    old = format_utc(datetime.now(UTC) - timedelta(days=3))
    config.write_text(
        "full_index_days = 1\n" + config.read_text("utf-8") + "\n[index_state.alice]\n"
        f'extracted_at = "{old}"\nlast_full_index_at = "{old}"\n'
        "incremental_runs_since_full = 12\n",
        "utf-8",
    )
    with caplog.at_level(logging.INFO, logger="pplx_export"):
        result = _cli(tmp_path, emu, "sync", "--account", "alice")
    assert result.exit_code == 0, result.output
    assert "index alice: the last full sweep is older than 1 days" in caplog.text
    assert "index --full" not in caplog.text
    # The counters now live in the archive; the config keeps the old ones, untouched.
    state = json.loads(load_bytes(tmp_path / "out", "index_state") or b"")
    assert state["alice"]["last_full_index_at"] > old
    assert state["alice"]["incremental_runs_since_full"] == 0
    kept = tomlkit.parse(config.read_text("utf-8")).unwrap()["index_state"]["alice"]
    assert kept["incremental_runs_since_full"] == 12
