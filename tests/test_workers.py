"""The one process pool (pplx_export/workers.py): results in order, one-process runs in the
parent, the load-aware job count, and no worker outliving a parent killed with SIGKILL
(`verify` and the search rebuild used to leave theirs running, waiting on a dead pipe)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pplx_export import workers
from pplx_export.store.lock import LOCK_NAME
from tests.archive_fakes import make_thread
from tests.e2e_support import REPO

# A CLI run that sees two idle CPUs whatever the machine's load, so `verify` and the search
# rebuild (both `jobs=0`: auto) start two workers.
TWO_IDLE_CPUS = (
    "import os\n"
    "import pplx_export.workers as w\n"
    "w.busy_cpus = lambda: 0.0\n"
    "os.sched_getaffinity = lambda pid: {0, 1}\n"
    "from pplx_export.cli.export import run\n"
    "run()\n"
)
# Enough threads that a two-worker run lasts a second or more.
THREADS = 2000
PATIENCE = 30.0


def _square(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def test_results_come_back_in_order_from_worker_processes() -> None:
    got = list(workers.ordered_map(_square, range(300), 300, jobs=2))
    assert [r for r, _ in got] == [x * x for x in range(300)]
    pids = {pid for _, pid in got}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2


@pytest.mark.parametrize(("jobs", "count"), [(1, 300), (0, 300), (4, 1)])
def test_one_process_runs_stay_in_the_parent(jobs: int, count: int) -> None:
    got = list(workers.ordered_map(_square, range(count), count, jobs=jobs))
    assert [r for r, _ in got] == [x * x for x in range(count)]
    assert {pid for _, pid in got} == {os.getpid()}


def test_auto_jobs_counts_the_cpus_left_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(4)), raising=False)
    monkeypatch.setattr(workers, "PROC_STAT", "/nonexistent/stat")  # the load average decides
    load = [0.0]
    monkeypatch.setattr(os, "getloadavg", lambda: (load[0], 0.0, 0.0))
    assert workers.auto_jobs(10_000) == 4
    load[0] = 1.4  # 2.6 CPUs idle: rounded to 3
    assert workers.auto_jobs(10_000) == 3
    load[0] = 1.6
    assert workers.auto_jobs(10_000) == 2
    load[0] = 9.0  # a busy machine still gets one
    assert workers.auto_jobs(10_000) == 1
    load[0] = 0.0
    assert workers.auto_jobs(64 * 3) == 3  # a fair share each
    assert workers.auto_jobs(10_000, most=2) == 2
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    assert workers.auto_jobs(10**6) == workers.MAX_AUTO_JOBS


def test_no_load_figure_means_an_idle_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> tuple[float, float, float]:
        raise OSError("no load average")

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(workers, "PROC_STAT", "/nonexistent/stat")
    monkeypatch.setattr(os, "getloadavg", missing)
    assert workers.auto_jobs(10_000) == 2


def test_the_lock_name_matches_the_archives() -> None:
    assert os.sep + os.path.join("index", LOCK_NAME) == workers.LOCK_SUFFIX


@pytest.fixture(scope="module")
def big_archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("workers") / "archive"
    for i in range(THREADS):
        make_thread(root, web_uuid=f"ee{i:06d}-0000-4000-8000-000000000000", n_turns=20)
    return root


def _alive(pid: int) -> bool:
    """Running (a zombie no init reaps, in a container, counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(entry.name))
    return out


def _kill_once_workers_run(argv: list[str]) -> list[int]:
    """Start the CLI, wait until it has two worker processes, SIGKILL it; its workers."""
    proc = subprocess.Popen(
        [sys.executable, "-c", TWO_IDLE_CPUS, *argv],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + PATIENCE
        found: list[int] = []
        while len(found) < 2:
            assert proc.poll() is None, "the run ended before its workers were seen"
            assert time.monotonic() < deadline, "no workers started"
            found = _children(proc.pid)
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=PATIENCE)
    return found


def _gone_within(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := [p for p in pids if _alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


@pytest.fixture
def reap() -> Iterator[list[int]]:
    """Pids a failing test must not leave behind."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize(
    "command",
    [["verify", "-q", "--json"], ["search", "--rebuild", "-q"]],
    ids=["verify", "rebuild"],
)
def test_a_parent_killed_leaves_no_worker_behind(
    big_archive: Path, command: list[str], reap: list[int]
) -> None:
    pids = _kill_once_workers_run([*command, "--out", str(big_archive)])
    reap.extend(pids)
    assert _gone_within(pids, 5.0) == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks")
def test_the_watchdog_ends_a_worker_where_there_is_no_parent_death_signal(
    reap: list[int],
) -> None:
    # The parent forks a child that relies on the watchdog alone (prctl=False), prints the
    # child's pid and waits; killed, it leaves the child to notice by itself.
    script = (
        "import os, sys, time\n"
        "from pplx_export.workers import die_with\n"
        "parent = os.getpid()\n"
        "child = os.fork()\n"
        "if child == 0:\n"
        "    die_with(parent, prctl=False)\n"
        "    time.sleep(60)\n"
        "    os._exit(0)\n"
        "print(child, flush=True)\n"
        "time.sleep(60)\n"
    )
    with subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE) as proc:
        try:
            assert proc.stdout is not None
            child = int(proc.stdout.readline())
            reap.append(child)
            time.sleep(0.2)
            assert _alive(child)
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.wait(timeout=PATIENCE)
    assert _gone_within([child], 5.0) == []


def test_busy_cpus_reads_the_cpu_time_of_the_last_tenth_of_a_second(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Not the load average, which still counts a run that ended a minute ago."""
    stat = tmp_path / "stat"
    samples = iter(
        [
            "cpu  100 0 50 1000 10 0 0 0 0 0\ncpu0 1 2 3 4\n",
            # 400 ticks later, 100 of them idle: three quarters busy.
            "cpu  300 0 150 1090 20 0 0 0 0 0\ncpu0 1 2 3 4\n",
        ]
    )
    monkeypatch.setattr(workers, "PROC_STAT", str(stat))
    monkeypatch.setattr(time, "sleep", lambda s: stat.write_text(next(samples)))
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.setattr(os, "getloadavg", lambda: (9.0, 9.0, 9.0))
    stat.write_text(next(samples))
    assert workers.busy_cpus() == pytest.approx(3.0)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(4)), raising=False)
    stat.write_text("cpu  100 0 50 1000 10 0 0 0 0 0\n")
    samples = iter(["cpu  100 0 50 1400 10 0 0 0 0 0\n"])  # all idle since
    assert workers.auto_jobs(10_000) == 4
    stat.write_text("garbage\n")  # unreadable: the load average
    assert workers.busy_cpus() == 9.0
