"""The next run repairs a damaged raw file (issue 16, point 5), and an unwritable archive
fails before any request (point 3): the real CLI against the emulator."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pplx_export.cli.export import main
from pplx_export.emulator import DEFAULT_EMAIL, run_emulator
from pplx_export.store.state_check import check_state_vs_dirs
from tests.e2e_support import (
    E2E,
    FIXTURES,
    THREAD_ENDPOINT,
    by_endpoint,
    fixture_threads,
    signed_in,
    thread_dirs,
    thread_uuid,
)


@pytest.fixture
def e2e(tmp_path: Path) -> Iterator[E2E]:
    with signed_in(tmp_path) as env:
        yield env


def offline(env: E2E, *args: str) -> Result:
    """An offline command: no cookie options (they are not offered there)."""
    argv = [*args, "--config", str(env.config), "--out", str(env.out)]
    return CliRunner().invoke(main, argv, catch_exceptions=False)


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_a_truncated_raw_file_is_listed_by_status_and_refetched_by_the_next_batch(
    e2e: E2E,
) -> None:
    assert e2e.cli("sync").exit_code == 0
    victim = thread_dirs(e2e.out)[0]
    uuid = thread_uuid(victim)
    _truncate(victim / "raw_entries.json")

    # re-render reports it and names the command that repairs it
    rerender = offline(e2e, "re-render")
    assert rerender.exit_code == 4
    assert f"pplx-export export {uuid} --force" in rerender.stderr

    # status lists it and counts it in the next batch
    status = offline(e2e, "status", "--json")
    doc = json.loads(status.stdout)
    assert [d["uuid"] for d in doc["damaged"]] == [uuid]
    assert doc["damaged"][0]["reason"].startswith("raw_entries.json does not parse")
    assert doc["accounts"][0]["next_batch"]["updated"] == 1
    human = offline(e2e, "status")
    assert "damaged raw files (1; the next batch fetches them again)" in human.stdout

    # the next batch fetches exactly that thread again, and the file parses
    before = by_endpoint(e2e.stats(), THREAD_ENDPOINT)
    batch = e2e.cli("batch", "--json")
    assert batch.exit_code == 0, batch.output
    assert json.loads(batch.stdout)["ok"] == 1
    assert by_endpoint(e2e.stats(), THREAD_ENDPOINT) > before
    json.loads((victim / "raw_entries.json").read_text("utf-8"))
    assert json.loads(offline(e2e, "status", "--json").stdout)["damaged"] == []
    assert offline(e2e, "re-render").exit_code == 0

    # and a batch with nothing damaged fetches nothing
    before = by_endpoint(e2e.stats(), THREAD_ENDPOINT)
    assert e2e.cli("batch").exit_code == 0
    assert by_endpoint(e2e.stats(), THREAD_ENDPOINT) == before


def test_export_does_not_call_a_damaged_thread_unchanged(e2e: E2E) -> None:
    assert e2e.cli("sync").exit_code == 0
    victim = thread_dirs(e2e.out)[0]
    uuid = thread_uuid(victim)
    unchanged = e2e.cli("export", uuid)
    assert "unchanged since its export" in unchanged.stderr
    (victim / "raw_entries.json").write_text("{garbage", encoding="utf-8")
    result = e2e.cli("export", uuid, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["ok"] == 1
    json.loads((victim / "raw_entries.json").read_text("utf-8"))


@pytest.mark.parametrize("case", ["under_a_file", "missing_parent"])
def test_an_unwritable_out_fails_before_any_request(e2e: E2E, case: str) -> None:
    blocker = e2e.tmp / "a-file"
    blocker.write_text("x")
    out = blocker / "archive" if case == "under_a_file" else e2e.tmp / "no" / "such" / "dir"
    argv = [a if a != str(e2e.out) else str(out) for a in e2e.common()]
    before = e2e.stats()
    result = CliRunner().invoke(main, ["sync", *argv])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: cannot write to archive {out}: ")
    assert "Traceback" not in result.output
    assert e2e.stats() == before  # not even the sign-in


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_saves_state_and_exits_143(tmp_path: Path) -> None:
    """systemd and `timeout` stop a run with SIGTERM: handled like Ctrl-C, exit 143."""
    with run_emulator(FIXTURES, faults="latency=150ms") as emu:
        env = E2E(emu, tmp_path)
        env.write_files(DEFAULT_EMAIL)
        proc = env.popen("sync", stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        # Wait until the batch is under way (a thread fetched), then stop it.
        while by_endpoint(env.stats(), THREAD_ENDPOINT) < 2 and proc.poll() is None:
            assert time.monotonic() < deadline, "the child never started its batch"
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 143, err.decode()[-2000:]
        text = err.decode()
        assert "terminated (SIGTERM); state saved, rerun to continue" in text
        assert "Traceback" not in text
        state = env.state()  # saved and parseable
        assert 0 < sum(1 for r in state.values() if r["status"] == "ok") < len(fixture_threads())
        assert check_state_vs_dirs(env.out, state).ok
    with run_emulator(FIXTURES) as emu:
        env2 = E2E(emu, tmp_path)
        env2.write_files(DEFAULT_EMAIL)
        assert env2.cli("sync").exit_code == 0
        assert sorted(thread_uuid(d) for d in thread_dirs(env2.out)) == sorted(fixture_threads())


def test_index_counts_rows_while_it_lists(e2e: E2E, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not silent for the minutes a big listing takes: periodic lines when not a terminal."""
    monkeypatch.setattr("pplx_export.progress.PLAIN_EVERY", 4)
    result = e2e.cli("index", "--full")
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("INFO index: ")]
    assert [line.split(",")[0] for line in lines] == ["INFO index: 4 rows", "INFO index: 8 rows"]
    # A second full listing estimates its end from the last index (10 rows).
    again = e2e.cli("index", "--full", "--json")
    assert "ETA ~" in again.stderr
    assert json.loads(again.stdout)["threads"] == 10
    quiet = e2e.cli("index", "--no-progress")
    assert "INFO index: 4 rows" not in quiet.stderr
