"""End to end: what is on disk is never fetched again just because bookkeeping went missing."""

from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pplx_export.cli.export import main
from pplx_export.emulator import DEFAULT_EMAIL, parse_faults, run_emulator
from pplx_export.emulator.faults import FaultPlan
from pplx_export.search import index as search_index
from pplx_export.search.schema import db_path
from tests.e2e_support import (
    E2E,
    FIXTURES,
    by_endpoint,
    fixture_threads,
    leftover_temp_files,
)


@pytest.fixture
def exported(tmp_path: Path) -> Iterator[E2E]:
    with run_emulator(FIXTURES, page_size=100) as emu:
        env = E2E(emu, tmp_path)
        env.write_files(DEFAULT_EMAIL)
        assert env.cli("sync").exit_code == 0
        emu.reset_stats()
        yield env


def test_a_missing_state_is_rebuilt_from_disk_and_costs_no_thread_fetch(exported: E2E) -> None:
    state_file = exported.out / "index" / "state.sqlite"
    before = exported.state()
    state_file.unlink()
    result = exported.cli("batch")
    assert result.exit_code == 0, result.output
    assert "missing; rebuilt from disk" in result.stderr
    assert by_endpoint(exported.stats(), "GET /rest/thread") == 0
    after = exported.state()
    assert set(after) == set(before) == set(fixture_threads())
    assert {u: r["dir"] for u, r in after.items()} == {u: r["dir"] for u, r in before.items()}


def _fresh(tmp_path: Path, emu: Any) -> E2E:
    env = E2E(emu, tmp_path)
    env.write_files(DEFAULT_EMAIL)
    assert env.cli("index").exit_code == 0
    return env


def test_a_full_disk_stops_the_batch_with_one_line_and_the_rerun_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_replace = os.replace
    calls = {"n": 0}

    def replace(src: Any, dst: Any) -> None:
        calls["n"] += 1
        if calls["n"] >= 25:  # some threads in: every write fails from here on
            raise OSError(errno.ENOSPC, "No space left on device")
        real_replace(src, dst)

    real_open = search_index.open_for_update

    def index_full(root: Path) -> Any:
        if calls["n"] >= 5:  # the search index fills up first
            raise sqlite3.OperationalError("database or disk is full")
        return real_open(root)

    with run_emulator(FIXTURES, page_size=100) as emu:
        env = _fresh(tmp_path, emu)
        assert env.offline("search", "--rebuild").exit_code == 0  # an index, still empty
        monkeypatch.setattr(os, "replace", replace)
        monkeypatch.setattr(search_index, "open_for_update", index_full)
        result = env.cli("batch")
        monkeypatch.setattr(os, "replace", real_replace)
        monkeypatch.setattr(search_index, "open_for_update", real_open)
        assert result.exit_code == 1
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, result.stderr
        assert errors[0].startswith("error: disk full while writing ")
        assert errors[0].endswith("; nothing is lost, free some space and rerun")
        assert "Traceback" not in result.stderr
        assert leftover_temp_files(env.out) == []
        assert env.cli("batch").exit_code == 0
        state = env.state()
        assert {r["status"] for r in state.values()} == {"ok"}
        assert set(state) == set(fixture_threads())
        # Every thread done is searchable, and verify finds nothing to report.
        conn = sqlite3.connect(db_path(env.out))
        indexed = {row[0] for row in conn.execute("SELECT dir FROM threads")}
        conn.close()
        assert {r["dir"] for r in state.values()} <= indexed
        verify = env.offline("verify", "--json")
        assert json.loads(verify.stdout)["problems"] == []


def test_a_429_storm_stops_the_batch_early_with_state_saved(tmp_path: Path) -> None:
    with run_emulator(FIXTURES, page_size=100) as emu:
        env = _fresh(tmp_path, emu)
        env.config.write_text(
            env.config.read_text("utf-8").replace(
                "backoff_cap = 0\n", "backoff_cap = 0\nmax_retries = 1\n"
            ),
            "utf-8",
        )
        emu.server.app.faults = FaultPlan(parse_faults("429=1,retry_after=0"), 0)
        emu.reset_stats()
        result = env.cli("batch")
        assert result.exit_code == 1
        assert "rate limited on 3 threads in a row; state saved, rerun later" in result.stderr
        # Three threads tried (each: the first request and one retry), the rest untouched.
        assert len(env.stats()["by_thread"]) == 3
        state = env.state()
        assert len(state) == 3 and {r["status"] for r in state.values()} == {"error"}
        emu.server.app.faults = FaultPlan(parse_faults(""), 0)
        assert env.cli("batch").exit_code == 0


def test_no_file_under_the_archive_holds_a_cookie_value(exported: E2E) -> None:
    token = exported.emu.session_token.encode()
    leaks = [p for p in exported.out.rglob("*") if p.is_file() and token in p.read_bytes()]
    assert leaks == []


def test_debris_in_a_thread_the_batch_does_not_touch_is_swept(exported: E2E) -> None:
    some_dir = exported.out / next(iter(exported.state().values()))["dir"]
    planted = [
        some_dir / ".pplx-tmp-abc123",
        some_dir / "turns" / ".pplx-tmp-def456",
        some_dir.parent / ".pplx-trash-2031-01-01_old_deadbeef" / "raw_entries.json",
    ]
    for path in planted:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("torn")
    result = exported.cli("batch")  # nothing to export: every thread is done
    assert result.exit_code == 0, result.output
    assert leftover_temp_files(exported.out) == []
    assert not (some_dir.parent / ".pplx-trash-2031-01-01_old_deadbeef").exists()
    assert by_endpoint(exported.stats(), "GET /rest/thread") == 0


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_full_disk_stops_a_rerender_with_one_line_and_the_rerun_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    root = tmp_path / "archive"
    shutil.copytree(FIXTURES, root)  # raw files only: every derived file is to be written
    real_replace = os.replace
    calls = {"n": 0}

    def replace(src: Any, dst: Any) -> None:
        calls["n"] += 1
        if calls["n"] >= 12:  # forked workers inherit the patch, with their own count
            raise OSError(errno.ENOSPC, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    args = ["re-render", "--out", str(root), "--jobs", jobs]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    monkeypatch.setattr(os, "replace", real_replace)
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: disk full while writing ")
    assert "Traceback" not in result.stderr
    assert leftover_temp_files(root) == []
    again = CliRunner().invoke(main, args, catch_exceptions=False)
    assert again.exit_code == 0, again.stderr
