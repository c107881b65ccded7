"""End to end: SIGKILL `sync` at seeded random moments, then rerun (product.md §2.3).

The CLI runs in a subprocess against an in-process emulator with a little latency, so a
kill lands anywhere: mid-listing, mid-fetch, mid-download, between the files of a thread,
mid-merge of a thread whose date directory moved. Between runs a few threads are touched
(new turn, newer lastUpdated: a new date directory), so every run has work to do.
Afterwards one uninterrupted run must leave a clean, complete archive.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pplx_export.archive.sweep import sweep_temp_files, sweep_unfinished_dirs
from pplx_export.emulator import DEFAULT_EMAIL, run_emulator
from pplx_export.store.state_check import check_state_vs_dirs
from tests.e2e_support import (
    CLI,
    E2E,
    FIXTURES,
    REPO,
    fixture_threads,
    leftover_temp_files,
    redacted,
    served_raw,
    thread_dirs,
    thread_uuid,
    unparseable_json,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

SEED = 6
MIN_KILLS = 20
MAX_RUNS = 100  # about 34 runs give 20 kills; the cap only bounds a broken run
TOUCHES_PER_RUN = 2
# Upper bounds on waits for a child: never reached on a quiet machine, and generous because
# a loaded one (a CI box, a laptop building) can take many seconds to start Python.
PATIENCE = 180


def _wait_first_request(env: E2E, proc: subprocess.Popen[bytes], deadline: float) -> None:
    """Block until the child's first request reached the emulator (or it ended)."""
    while env.stats()["total"] == 0 and proc.poll() is None:
        assert time.monotonic() < deadline, "the child never reached the emulator"
        time.sleep(0.002)


def _calibrate(env: E2E) -> float:
    """Seconds from the first request to the end of an uninterrupted full run (scratch dir)."""
    scratch = E2E(env.emu, env.tmp / "calibrate")
    scratch.tmp.mkdir()
    scratch.write_files(DEFAULT_EMAIL)
    env.emu.reset_stats()
    proc = scratch.popen("sync")
    _wait_first_request(env, proc, time.monotonic() + PATIENCE)
    started = time.monotonic()
    assert proc.wait(timeout=PATIENCE) == 0
    return time.monotonic() - started


@pytest.mark.slow
def test_sigkill_at_random_moments_then_rerun_leaves_a_complete_clean_archive(
    tmp_path: Path,
) -> None:
    rng = random.Random(SEED)
    with run_emulator(FIXTURES, page_size=2, faults="latency=5ms") as emu:
        env = E2E(emu, tmp_path)
        env.write_files(DEFAULT_EMAIL)
        window = _calibrate(env)
        uuids = sorted(fixture_threads())
        kills = runs = 0
        while kills < MIN_KILLS:
            runs += 1
            assert runs <= MAX_RUNS, f"only {kills} kills in {MAX_RUNS} runs"
            if runs > 1:
                for uuid in rng.sample(uuids, TOUCHES_PER_RUN):
                    emu.mutate(touch=uuid)
            emu.reset_stats()
            proc = env.popen("sync")
            try:
                _wait_first_request(env, proc, time.monotonic() + PATIENCE)
                time.sleep(rng.uniform(0, window))
                if proc.poll() is None:
                    proc.send_signal(signal.SIGKILL)
                    kills += 1
            finally:
                proc.wait(timeout=PATIENCE)

        # One uninterrupted run finishes the work.
        final = subprocess.run(env.argv("sync"), capture_output=True, timeout=PATIENCE, check=False)
        assert final.returncode == 0, final.stderr.decode()[-3000:]

        # Every thread exactly once, with what the emulator serves now.
        dirs = thread_dirs(env.out)
        found = [thread_uuid(d) for d in dirs]
        assert sorted(found) == uuids, sorted(found)
        for directory in dirs:
            uuid = thread_uuid(directory)
            plain = json.loads((directory / "raw_entries.json").read_text("utf-8"))
            assert redacted(plain) == redacted(served_raw(emu, uuid, schematized=False)), uuid
        assert leftover_temp_files(env.out) == []
        assert not [p for p in env.out.rglob(".pplx-trash-*")]
        assert unparseable_json(env.out) == []
        state = env.state()
        check = check_state_vs_dirs(env.out, state)
        assert check.ok, check.to_json()
        assert set(state) == set(uuids)
        for uuid in uuids:
            record = emu.library.get(uuid)
            assert record is not None
            assert state[uuid]["status"] == "ok", state[uuid]
            assert state[uuid]["lastUpdated"] == record.last_updated, uuid

        # And the archive is settled: the next sync fetches nothing.
        emu.reset_stats()
        again = subprocess.run(env.argv("sync"), capture_output=True, timeout=PATIENCE, check=False)
        assert again.returncode == 0
        assert emu.stats()["by_thread"] == {}


@pytest.mark.slow
def test_ctrl_c_exits_130_and_a_rerun_completes(tmp_path: Path) -> None:
    rng = random.Random(SEED + 1)
    with run_emulator(FIXTURES, page_size=2, faults="latency=5ms") as emu:
        env = E2E(emu, tmp_path)
        env.write_files(DEFAULT_EMAIL)
        window = _calibrate(env)
        uuids = sorted(fixture_threads())
        codes = []
        for run in range(6):
            if run:
                emu.mutate(touch=rng.choice(uuids))
            emu.reset_stats()
            proc = env.popen("sync", stderr=subprocess.PIPE)
            _wait_first_request(env, proc, time.monotonic() + PATIENCE)
            # The first run is interrupted at its first request, so at least one run is
            # interrupted however fast or slow the machine is; the others at random.
            time.sleep(rng.uniform(0, window) if run else 0)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=PATIENCE)
            codes.append(proc.returncode)
            if proc.returncode == 130:
                assert b"interrupted" in err
            else:
                assert proc.returncode == 0, err.decode()[-2000:]
            # Interrupted or not, what is on disk agrees with the state.
            if env.out.exists() and (env.out / "index" / "state.sqlite").exists():
                check = check_state_vs_dirs(env.out, env.state())
                assert not (check.ok_without_dir or check.unreadable), check.to_json()
        assert 130 in codes, codes
        final = subprocess.run(env.argv("sync"), capture_output=True, timeout=PATIENCE, check=False)
        assert final.returncode == 0, final.stderr.decode()[-3000:]
        assert sorted(thread_uuid(d) for d in thread_dirs(env.out)) == uuids
        assert leftover_temp_files(env.out) == []
        assert check_state_vs_dirs(env.out, env.state()).ok


# ------------------------------------------------------------------ the repairs, one by one

WEB = "24a76805-90eb-5b12-a5e0-d0288d7ceae3"
TWIN = "24a76805-0000-4000-8000-000000000000"  # same uuid8, another thread


def _raw(directory: Path, web_uuid: str) -> None:
    directory.mkdir(parents=True)
    doc = {"entries": [{"thread_url_slug": web_uuid}]}
    (directory / "raw_entries.json").write_text(json.dumps(doc), "utf-8")


def test_sweep_unfinished_dirs_removes_only_this_threads_unfinished_exports(
    tmp_path: Path,
) -> None:
    mode = tmp_path / "maya" / "search"
    keep = mode / "2031-06-25_How-do-Rust-lifetimes-work_24a76805"
    keep.mkdir(parents=True)
    torn = mode / "2031-05-04_How-do-Rust-lifetimes-work_24a76805"
    torn.mkdir()
    (torn / ".pplx-tmp-abc").write_text("{", "utf-8")
    unfinished = mode / "2031-05-05_How-do-Rust-lifetimes-work_24a76805"
    _raw(unfinished, WEB)
    twin = mode / "2031-05-06_Another-thread_24a76805"
    _raw(twin, TWIN)
    finished = mode / "2031-05-07_How-do-Rust-lifetimes-work_24a76805"
    _raw(finished, WEB)
    (finished / "thread.json").write_text(json.dumps({"web_uuid": WEB}), "utf-8")
    trash = mode / ".pplx-trash-2031-05-01_How-do-Rust-lifetimes-work_24a76805"
    _raw(trash, WEB)

    assert sweep_unfinished_dirs(tmp_path, WEB, keep) == 3
    assert not torn.exists() and not unfinished.exists()
    assert twin.is_dir() and finished.is_dir() and keep.is_dir()  # never another's, nor done
    assert not list(mode.glob(".pplx-trash-*"))


def test_sweep_temp_files_removes_torn_writes_only(tmp_path: Path) -> None:
    files = tmp_path / "assets" / "files"
    files.mkdir(parents=True)
    (tmp_path / ".pplx-tmp-1").write_text("x", "utf-8")
    (files / ".pplx-tmp-2.part").write_text("x", "utf-8")
    (files / "chart.png").write_text("x", "utf-8")
    (tmp_path / "thread.json").write_text("{}", "utf-8")
    assert sweep_temp_files(tmp_path, recursive=False) == 1
    assert (files / ".pplx-tmp-2.part").exists()
    assert sweep_temp_files(tmp_path) == 1
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [
        "chart.png",
        "thread.json",
    ]


def _searchable_after_kills(tmp_path: Path, threads: int, kills: int) -> None:
    """SIGKILL a sync of `threads` generated threads `kills` times at random moments, then
    one sync: every thread marked ok is in the search index and `verify` finds nothing."""
    import sqlite3

    from benchmarks.rerender import generate
    from pplx_export.search.schema import db_path

    rng = random.Random(SEED)
    generate(tmp_path / "library", threads)
    with run_emulator(tmp_path / "library", page_size=50) as emu:
        env = E2E(emu, tmp_path / "run")
        env.tmp.mkdir()
        env.write_files(DEFAULT_EMAIL)
        # Each run has `touched` threads to export again (a new turn, a new date directory);
        # the kill lands within how long the last uninterrupted run took.
        touched = max(3, threads // 6)
        window = _calibrate(env) * touched / threads
        uuids = sorted(emu.library.threads)
        done = runs = 0
        while done < kills:
            runs += 1
            assert runs <= 4 * kills + 10, f"only {done} kills in {runs} runs"
            for uuid in rng.sample(uuids, touched):
                emu.mutate(touch=uuid)
            emu.reset_stats()
            proc = env.popen("sync")
            try:
                _wait_first_request(env, proc, time.monotonic() + PATIENCE)
                started = time.monotonic()
                deadline = started + rng.uniform(0, window)
                while proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.002)
                if proc.poll() is None:
                    proc.send_signal(signal.SIGKILL)
                    done += 1
                else:
                    window = time.monotonic() - started  # how long a whole run takes now
            finally:
                proc.wait(timeout=PATIENCE)
        final = subprocess.run(env.argv("sync"), capture_output=True, timeout=PATIENCE, check=False)
        assert final.returncode == 0, final.stderr.decode()[-3000:]
        state = env.state()
        ok = {r["dir"] for r in state.values() if r["status"] == "ok"}
        assert len(ok) == threads
        conn = sqlite3.connect(db_path(env.out))
        try:
            indexed = {row[0] for row in conn.execute("SELECT dir FROM threads")}
        finally:
            conn.close()
        assert sorted(ok - indexed) == []
        offline = ["--config", str(env.config), "--out", str(env.out)]
        verify = subprocess.run(
            [sys.executable, "-c", CLI, "verify", "--json", *offline],
            cwd=REPO,
            capture_output=True,
            timeout=PATIENCE,
            check=False,
        )
        doc = json.loads(verify.stdout)
        assert doc["problems"] == [], doc["problems"][:5]


@pytest.mark.slow
def test_a_hundred_kills_of_a_200_thread_sync_leave_every_done_thread_searchable(
    tmp_path: Path,
) -> None:
    _searchable_after_kills(tmp_path, threads=200, kills=100)
