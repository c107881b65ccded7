"""A re-render whose parent is SIGKILLed (the OOM killer, `timeout -s KILL`) leaves no worker
behind and no lock held: the next run, cron's `sync` included, works."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.rerender import generate

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="workers follow their parent via prctl (Linux)"
)


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    state = next((line for line in status.splitlines() if line.startswith("State:")), "")
    return "Z" not in state.split(":", 1)[-1][:3]  # a zombie has exited


def test_killing_the_parent_of_a_parallel_rerender_leaves_nothing_behind(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    generate(root, 300)
    argv = [sys.executable, "-m", "pplx_export", "re-render", "--out", str(root), "--jobs", "2"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while time.monotonic() < deadline and len(workers) < 2 and proc.poll() is None:
        workers = _children(proc.pid)
        time.sleep(0.02)
    assert len(workers) >= 2, "the workers never started"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.05)
    assert not [w for w in workers if _alive(w)], "workers outlived their parent"
    # The lock went with them: the next run is not refused and completes.
    again = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, timeout=300, check=False)
    assert again.returncode == 0, again.stderr.decode()[-1000:]
