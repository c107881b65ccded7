"""archive/history.py: earlier versions of a thread, kept durably (issue 33)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pplx_export.archive import history

NOW = datetime(2031, 7, 1, 12, 0, 0, tzinfo=UTC)


def _entry(uuid: str, text: str, query: str = "q") -> dict[str, object]:
    return {"uuid": uuid, "query_str": query, "text": text, "updated_us": 1}


def _thread(tmp_path: Path) -> Path:
    d = tmp_path / "t"
    (d / "turns").mkdir(parents=True)
    (d / "raw_entries.json").write_text('{"entries": []}', "utf-8")
    (d / "raw_blocks.json").write_text('{"entries": []}', "utf-8")
    (d / "thread.json").write_text('{"web_uuid": "u"}', "utf-8")
    (d / "turns" / "turn_0001.md").write_text("one", "utf-8")
    (d / "turns" / "notes.md").write_text("mine", "utf-8")
    return d


def test_keep_version_copies_raw_then_thread_json_and_names_clashes(tmp_path: Path) -> None:
    d = _thread(tmp_path)
    first = history.keep_version(d, reason="r", turns=1, now=NOW)
    second = history.keep_version(d, reason="r", turns=1, now=NOW)
    assert (first, second) == ("history/20310701T120000Z", "history/20310701T120000Z-2")
    v = d / first
    assert sorted(p.name for p in v.iterdir()) == [
        "raw_blocks.json",
        "raw_entries.json",
        "thread.json",
        "turns",
    ]
    assert (v / "turns" / "turn_0001.md").read_text("utf-8") == "one"
    assert not (v / "turns" / "notes.md").exists()  # not ours: not part of a version
    assert [p.name for p in history.iter_versions(d)] == ["20310701T120000Z", "20310701T120000Z-2"]


def test_keep_version_fsyncs_each_raw_copy_and_the_directories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = _thread(tmp_path)
    synced: list[str] = []
    real = os.fsync

    def spy(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", spy)
    dir_value = history.keep_version(d, reason="r", turns=1, now=NOW)
    v = d / dir_value
    # Each copy is fsynced as a temp file (renamed after): count the temp files, then the
    # version directory, history/ and the thread directory.
    temps = [p for p in synced if Path(p).parent == v]
    assert len(temps) == 3  # raw_blocks, raw_entries, thread.json
    assert str(v) in synced and str(v.parent) in synced and str(d) in synced
    assert synced.index(str(v)) > max(synced.index(t) for t in temps)


def test_loss_reason() -> None:
    old = {"entries": [_entry("a", "x"), _entry("b", "y"), _entry("c", "z")]}
    assert history.loss_reason(old, {"entries": [*old["entries"], _entry("d", "w")]}) == ""
    assert history.loss_reason(old, {"entries": old["entries"][:1]}) == "3 turns became 1"
    changed = {"entries": [_entry("a", "x2"), _entry("b", "y"), _entry("c", "z")]}
    assert history.loss_reason(old, changed) == "turn 1 changed"
    # Bookkeeping fields moving is not a change of content.
    moved = json.loads(json.dumps(old))
    moved["entries"][0]["updated_us"] = 99
    assert history.loss_reason(old, moved) == ""
    assert history.loss_reason(None, old) == ""
    # A signed URL signed again is the same content.
    signed = {"entries": [_entry("a", "see https://cdn.example/f.pdf?Expires=1&Signature=x")]}
    resigned = {"entries": [_entry("a", "see https://cdn.example/f.pdf?Expires=2&Signature=y")]}
    assert history.loss_reason(signed, resigned) == ""
    moved_file = {"entries": [_entry("a", "see https://cdn.example/g.pdf?Expires=2")]}
    assert history.loss_reason(signed, moved_file) == "turn 1 changed"


def test_footer_links_every_version() -> None:
    entries = [history.history_entry("history/x", reason="3 turns became 1", turns=3, now=NOW)]
    text = history.footer(entries)
    assert "[2031-07-01T12:00:00Z](history/x/) (3 turns became 1, 3 turns)" in text
    assert history.footer([]) == ""


def test_an_imported_turn_is_upgraded_not_lost_unless_the_thread_shrinks() -> None:
    # A turn recovered from the user's data export has its own uuid and thin text: the API's
    # version of it replaces it without a history copy; a shorter thread still keeps one.
    old = {"entries": [{"uuid": "imp-1", "query_str": "q", "text": "thin", "imported_from": "x"}]}
    api = {"entries": [{"uuid": "api-1", "query_str": "q", "text": "full answer"}]}
    assert history.loss_reason(old, api) == ""
    two = {"entries": [*old["entries"], {**old["entries"][0], "uuid": "imp-2"}]}
    assert history.loss_reason(two, api) == "2 turns became 1"
