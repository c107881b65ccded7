"""End to end: a thread the server shrinks or rewrites keeps its earlier version (issue 33)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pplx_export.emulator import DEFAULT_EMAIL, run_emulator
from tests.e2e_support import E2E, FIXTURES, thread_dirs, thread_uuid

BIKES = "c0b720ca"  # 4 turns in the fixture archive


@pytest.fixture
def env(tmp_path: Path) -> Iterator[E2E]:
    with run_emulator(FIXTURES, page_size=100) as emu:
        e2e = E2E(emu, tmp_path)
        e2e.write_files(DEFAULT_EMAIL)
        yield e2e


def _bikes(env: E2E) -> tuple[str, Path]:
    (directory,) = [d for d in thread_dirs(env.out) if d.name.endswith(BIKES)]
    return thread_uuid(directory), directory


def _twelve_turns(env: E2E) -> tuple[str, Path]:
    assert env.cli("sync").exit_code == 0
    uuid, _ = _bikes(env)
    for _ in range(8):
        env.emu.mutate(touch=uuid)
    result = env.cli("sync")
    assert result.exit_code == 0, result.output
    uuid, directory = _bikes(env)
    assert len(list((directory / "turns").glob("turn_*.md"))) == 12
    return uuid, directory


def test_a_thread_that_shrinks_keeps_all_twelve_turns_in_history(env: E2E) -> None:
    uuid, _ = _twelve_turns(env)
    env.emu.mutate(shrink=uuid, keep=3)
    result = env.cli("sync")
    assert result.exit_code == 0, result.output
    _, directory = _bikes(env)
    # The current archive follows the server: 3 turns.
    assert len(list((directory / "turns").glob("turn_*.md"))) == 3
    assert len(json.loads((directory / "raw_entries.json").read_bytes())["entries"]) == 3
    # ...and the 12 turns stay readable from history/, raw first, with their thread.json.
    doc = json.loads((directory / "thread.json").read_bytes())
    (entry,) = doc["history"]
    assert entry["turns"] == 12 and "12 turns became 3" in entry["reason"]
    version = directory / entry["dir"]
    assert json.loads((version / "thread.json").read_bytes())["n_turns"] == 12
    assert len(json.loads((version / "raw_entries.json").read_bytes())["entries"]) == 12
    assert (version / "raw_blocks.json").is_file()
    assert len(list((version / "turns").glob("turn_*.md"))) == 12  # readable as they were
    # One warning, naming the thread and what changed.
    warnings = [ln for ln in result.stderr.splitlines() if "earlier version is kept" in ln]
    assert len(warnings) == 1 and uuid[:8] in warnings[0] and "12 turns became 3" in warnings[0]
    # conversation.md links the version.
    assert f"]({entry['dir']}/)" in (directory / "conversation.md").read_text("utf-8")
    # status counts the versions kept.
    status = env.offline("status", "--json")
    assert status.exit_code == 0, status.output
    (kept,) = json.loads(status.stdout)["versions"]
    assert kept["uuid"] == uuid and kept["versions"] == 1
    assert "earlier versions kept: 1 in 1 thread(s)" in env.offline("status").stdout
    # A sync with nothing new keeps no second copy and warns no more.
    again = env.cli("sync")
    assert "earlier version is kept" not in again.stderr
    assert len(list((directory / "history").iterdir())) == 1


def test_search_history_finds_a_word_only_the_earlier_version_holds(env: E2E) -> None:
    uuid, _ = _twelve_turns(env)
    env.emu.mutate(shrink=uuid, keep=3)
    assert env.cli("sync").exit_code == 0
    # The 8 appended turns ask "Any news since last time?"; no other turn says it.
    now = env.offline("search", '"news since last time"', "--json")
    assert now.exit_code == 0, now.output
    assert json.loads(now.stdout)["count"] == 0
    found = env.offline("search", '"news since last time"', "--history", "--json")
    assert found.exit_code == 0, found.output
    doc = json.loads(found.stdout)
    assert doc["count"] == 0
    (hit,) = doc["history"]["results"]
    assert hit["uuid"] == uuid and "/history/" in hit["path"]
    assert "news since last time" in Path(hit["path"]).read_text("utf-8")
    shown = env.offline("search", '"news since last time"', "--history")
    assert "earlier versions (history/)" in shown.stdout


def test_a_rewritten_answer_keeps_the_earlier_answer(env: E2E) -> None:
    assert env.cli("sync").exit_code == 0
    uuid, directory = _bikes(env)
    before = (directory / "raw_entries.json").read_bytes()
    env.emu.mutate(shrink=uuid, keep=4, rewrite="A wholly different verdict about bikes.")
    result = env.cli("sync")
    assert result.exit_code == 0, result.output
    _, directory = _bikes(env)
    (entry,) = json.loads((directory / "thread.json").read_bytes())["history"]
    assert entry["reason"] == "turn 1 changed" and entry["turns"] == 4
    assert (directory / entry["dir"] / "raw_entries.json").read_bytes() == before
    assert "wholly different" in (directory / "turns" / "turn_0001.md").read_text("utf-8")


def test_new_turns_alone_keep_no_history(env: E2E) -> None:
    assert env.cli("sync").exit_code == 0
    uuid, _ = _bikes(env)
    env.emu.mutate(touch=uuid)
    result = env.cli("sync")
    assert result.exit_code == 0, result.output
    _, directory = _bikes(env)
    assert not (directory / "history").exists()
    assert "history" not in json.loads((directory / "thread.json").read_bytes())


def test_rerender_prunes_only_our_turn_files_and_verify_lists_the_rest(env: E2E) -> None:
    assert env.cli("sync").exit_code == 0
    _, directory = _bikes(env)
    turns = directory / "turns"
    mine = ["turn_notes.md", "turn_0001_annotated.md", "turn_1.md"]
    for name in mine:
        (turns / name).write_text("the user's own notes", "utf-8")
    (directory / "my-summary.md").write_text("mine too", "utf-8")
    (turns / "turn_0009.md").write_text("a turn the thread no longer has", "utf-8")
    result = env.offline("re-render", "--json", "--jobs", "1")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["files_removed"] == 1  # turn_0009.md only
    assert not (turns / "turn_0009.md").exists()
    for name in mine:
        assert (turns / name).read_text("utf-8") == "the user's own notes"
    verify = env.offline("verify", "--json")
    assert verify.exit_code == 0, verify.output
    doc = json.loads(verify.stdout)
    rel = directory.relative_to(env.out).as_posix()
    assert doc["ok"] and sorted(doc["not_ours"]) == sorted(
        [f"{rel}/my-summary.md", *(f"{rel}/turns/{n}" for n in mine)]
    )
    assert "not ours (left alone): 4 file(s)" in env.offline("verify").stdout
