"""The live view in a real terminal: `pplx-ask ask` inside tmux (80x24), read back with
`tmux capture-pane`. Skipped where tmux is not installed. Polls the pane (never asserts time)."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from pplx_export.emulator import run_emulator

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def pane(socket: str) -> str:
    return subprocess.run(
        ["tmux", "-L", socket, "capture-pane", "-p", "-t", "ask"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout


def wait_for(socket: str, needle: str, seen: list[str], limit: float = 30.0) -> str:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        screen = pane(socket)
        seen.append(screen)
        if needle in screen:
            return screen
        time.sleep(0.05)
    raise AssertionError(f"{needle!r} never showed; last screen:\n{seen[-1] if seen else ''}")


@pytest.mark.slow
def test_live_view_in_tmux(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[network]\nmin_interval = 0\n\n[accounts.alice]\ndisplay_name = "Alice Example"\n'
        'email = "alice@example.com"\n',
        "utf-8",
    )
    cookies = tmp_path / "cookies.json"
    socket = f"pplx-ask-test-{uuid.uuid4().hex[:8]}"  # unique: suites may run side by side
    with run_emulator(faults="ask_silence=2.5s,ask_step=400ms") as emu:
        cookies.write_text(json.dumps(emu.cookies), "utf-8")
        argv = [
            sys.executable,
            "-c",
            "from pplx_export.cli.ask import run; run()",
            "ask",
            "Do whales sleep?",
            "--mode",
            "deep-research",
            "--config",
            str(config),
            "--cookies",
            str(cookies),
            "--out",
            str(tmp_path / "archive"),
            "--base-url",
            emu.base_url,
        ]
        # The pane stays open after the command, so its last screen can be read.
        command = shlex.join(argv) + "; echo EXIT=$?; sleep 60"
        tmux = ["tmux", "-L", socket, "new-session", "-d", "-s", "ask", "-x", "80", "-y", "24"]
        subprocess.run([*tmux, "-e", "TERM=xterm-256color", command], check=True)
        seen: list[str] = []
        try:
            quiet = wait_for(socket, "quiet for", seen)
            assert "deep-research · PENDING" in quiet
            assert f"{emu.base_url}/search/" in quiet
            assert "waiting for the answer" in quiet
            growing = wait_for(socket, "Research summary", seen)
            assert "##" not in growing  # Markdown rendered, not shown as source
            final = wait_for(socket, "EXIT=", seen)
        finally:
            subprocess.run(["tmux", "-L", socket, "kill-server"], check=False)
    assert "EXIT=0" in final
    # The transient live view is gone; one summary line and the rendered answer remain.
    assert "deep-research · COMPLETED" in final
    assert "Long-term effects remain less studied." in final
    assert "quiet for" not in final and "waiting for the answer" not in final
    assert all(len(line) <= 80 for line in final.splitlines())
    assert [p.parent.parent.name for p in (tmp_path / "archive").glob("*/*/*/thread.json")] == [
        "deep-research"
    ]


@pytest.mark.slow
@pytest.mark.tmux
def test_continue_models_editor_and_chat_in_tmux(tmp_path: Path) -> None:
    """Issue 31 from a real terminal: an unknown --models id exits 2 naming the valid ones;
    `ask` with no PROMPT opens $EDITOR (a script standing in for vi: it writes the question
    above the template's comment lines); `-c` follows that thread up; `chat -c` asks each
    typed line in the same thread, and Ctrl-D ends it."""
    config = tmp_path / "config.toml"
    config.write_text(
        '[network]\nmin_interval = 0\nbackoff_cap = 0\n\n[accounts.alice]\ndisplay_name = "Alice"\n'
        'email = "alice@example.com"\n',
        "utf-8",
    )
    editor = tmp_path / "editor.sh"
    editor.write_text(
        '#!/bin/sh\n{ echo "Why do owls hoot?"; cat "$1"; } > "$1.new"\nmv "$1.new" "$1"\n'
    )
    editor.chmod(0o755)
    cookies = tmp_path / "cookies.json"
    socket = f"pplx-ask-test-{uuid.uuid4().hex[:8]}"
    with run_emulator() as emu:
        cookies.write_text(json.dumps(emu.cookies), "utf-8")
        base = [sys.executable, "-c", "from pplx_export.cli.ask import run; run()"]
        common = [
            "--config",
            str(config),
            "--cookies",
            str(cookies),
            "--out",
            str(tmp_path / "archive"),
            "--base-url",
            emu.base_url,
        ]

        def line(*args: str) -> str:
            return shlex.join([*base, *args, *common])

        script = "; ".join(
            [
                line("ask", "x", "--models", "gpt-9000") + "; echo MODELS=$?",
                f"EDITOR={shlex.quote(str(editor))} " + line("ask") + "; echo EDITOR=$?",
                line("ask", "-c", "And at noon?") + "; echo CONTINUE=$?",
                line("chat", "-c") + "; echo CHAT=$?",
                "sleep 60",
            ]
        )
        tmux = ["tmux", "-L", socket, "new-session", "-d", "-s", "ask", "-x", "80", "-y", "24"]
        subprocess.run([*tmux, "-e", "TERM=xterm-256color", script], check=True)
        seen: list[str] = []
        try:
            screen = wait_for(socket, "MODELS=", seen)
            assert "MODELS=2" in screen and "unknown model id gpt-9000" in screen
            assert "gemini31pro_high" in screen.replace("\n", "")  # wrapped at 80 columns
            wait_for(socket, "EDITOR=0", seen)
            wait_for(socket, "CONTINUE=0", seen)
            wait_for(socket, "you›", seen)
            subprocess.run(
                ["tmux", "-L", socket, "send-keys", "-t", "ask", "Do they migrate?", "Enter"],
                check=True,
            )
            wait_for(socket, "Ctrl-D ends", seen)
            subprocess.run(["tmux", "-L", socket, "send-keys", "-t", "ask", "C-d"], check=True)
            final = wait_for(socket, "CHAT=", seen)
        finally:
            subprocess.run(["tmux", "-L", socket, "kill-server"], check=False)
        [thread] = emu.library.listing()[:1]
        queries = [e["query_str"] for e in thread.entries]
    assert "CHAT=0" in final
    assert queries == ["Why do owls hoot?", "And at noon?", "Do they migrate?"]
    [directory] = [p.parent for p in (tmp_path / "archive").glob("*/*/*/thread.json")]
    assert len(list((directory / "turns").glob("turn_*.md"))) == 3
