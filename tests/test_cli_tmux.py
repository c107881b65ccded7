"""A real terminal (tmux, 80 columns): batch messages print above an intact progress bar
(issue 16, point 1). Skipped where tmux is not installed."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from pplx_export.emulator import DEFAULT_EMAIL, run_emulator
from tests.e2e_support import E2E, REPO

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


def test_messages_print_above_an_intact_bar(tmp_path: Path) -> None:
    socket = f"pplx-test-{uuid.uuid4().hex[:8]}"
    done = tmp_path / "done"
    with run_emulator(faults="latency=60ms", page_size=2) as emu:
        env = E2E(emu, tmp_path)
        env.write_files(DEFAULT_EMAIL)
        argv = env.argv("sync")
        command = (
            f"cd {shlex.quote(str(REPO))} && PYTHONPATH={shlex.quote(str(REPO))} "
            + " ".join(shlex.quote(a) for a in argv)
            + f" 2>&1; echo $? > {shlex.quote(str(done))}"
        )
        tmux = ["tmux", "-L", socket, "-f", os.devnull]
        subprocess.run(
            [
                *tmux,
                "new-session",
                "-d",
                "-x",
                "80",
                "-y",
                "50",
                "sh",
                "-c",
                command + "; sleep 30",
            ],
            check=True,
            env={k: v for k, v in os.environ.items() if k != "TMUX"},
        )
        try:
            deadline = time.monotonic() + 120
            while not done.exists():
                assert time.monotonic() < deadline, "the run did not finish"
                time.sleep(0.2)
            screen = subprocess.run(
                [*tmux, "capture-pane", "-p", "-J"], capture_output=True, text=True, check=True
            ).stdout
        finally:
            subprocess.run([*tmux, "kill-server"], check=False)
    assert done.read_text().strip() == "0", screen
    lines = [line for line in screen.splitlines() if line.strip()]
    messages = [line for line in lines if line.startswith(("INFO ", "WARNING "))]
    assert any("was deleted on Perplexity" in line for line in messages), screen
    for line in lines:
        # A message never shares a line with the bar, and the bar never stays behind.
        assert "━" not in line, screen
    assert all(not re_glued(line) for line in lines), screen
    assert lines[-1].startswith("batch: "), screen


def re_glued(line: str) -> bool:
    """A log level in the middle of a line: a message written into the bar's line."""
    return any(f"{level} " in line[1:] for level in ("INFO", "WARNING")) and not line.startswith(
        ("INFO ", "WARNING ")
    )
