"""The batch state's journal (archive/journal.py): appends, replay, torn lines, compaction."""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pplx_export.archive import journal
from pplx_export.archive.state import BatchState, state_path
from pplx_export.util.atomic import write_if_changed

NOW = datetime(2042, 2, 3, 4, 5, 6, tzinfo=UTC)


def journal_of(root: Path) -> Path:
    return journal.journal_path(state_path(root))


def seeded(root: Path, n: int) -> BatchState:
    """A state with `n` ok records in its snapshot and no journal."""
    state = BatchState.load(root)
    state.threads = {
        f"{i:08d}-0000-0000-0000-000000000000": {
            "status": "ok",
            "lastUpdated": "2042-01-01T00:00:00Z",
            "title": f"thread {i}",
            "exported_at": "2042-01-02T00:00:00Z",
            "dir": f"Alice/search/2042-01-01_thread-{i}_{i:08d}",
        }
        for i in range(n)
    }
    state.save()
    return BatchState.load(root)


def mark(state: BatchState, i: int) -> None:
    state.mark_ok(
        f"new-{i:08d}",
        last_updated="2042-01-05T00:00:00Z",
        title=f"new thread {i}",
        dir=f"Alice/search/2042-01-05_new-thread-{i}_{i:08d}",
        now=NOW,
    )


def test_a_change_appends_one_line_and_a_reload_replays_it(tmp_path: Path) -> None:
    state = seeded(tmp_path, 3)
    snapshot = state_path(tmp_path).read_bytes()
    mark(state, 1)
    state.mark_error("new-00000001", error="503", now=NOW)
    assert state_path(tmp_path).read_bytes() == snapshot  # the snapshot is not rewritten
    lines = journal_of(tmp_path).read_text("utf-8").splitlines()
    assert json.loads(lines[0]) == {"journal": 1, "base": journal.digest(snapshot)}
    assert [json.loads(line)["k"] for line in lines[1:]] == ["new-00000001"] * 2
    again = BatchState.load(tmp_path, repair=False)
    assert again.threads == state.threads and again.replayed == 2
    assert again.status("new-00000001") == "error"
    assert again.get("new-00000001")["dir"].endswith("_00000001")  # type: ignore[index]


def test_bytes_written_per_change_do_not_grow_with_the_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """O(1) bytes per exported thread: counted at every write the state makes."""
    written = {"bytes": 0}
    real_write = journal.Writer._write
    real_if_changed = write_if_changed

    def count_append(self: journal.Writer, payload: bytes) -> int:
        written["bytes"] += len(payload)
        return real_write(self, payload)

    def count_snapshot(path: Path, data: Any, **kwargs: Any) -> bool:
        written["bytes"] += len(data)
        return real_if_changed(path, data, **kwargs)

    monkeypatch.setattr(journal.Writer, "_write", count_append)
    monkeypatch.setattr("pplx_export.archive.state.write_if_changed", count_snapshot)
    per_change = {}
    for n in (100, 3000):
        root = tmp_path / str(n)
        state = seeded(root, n)
        written["bytes"] = 0
        for i in range(500):
            mark(state, i)
        per_change[n] = written["bytes"] / 500
    # One journal line (~250 bytes), whatever the size: 3000 records are ~800 kB of snapshot.
    assert per_change[100] < 400
    assert per_change[3000] < 400
    assert abs(per_change[3000] - per_change[100]) < 20


def test_the_journal_is_compacted_once_it_outgrows_the_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal, "MIN_COMPACT_BYTES", 2000)
    state = seeded(tmp_path, 2)
    compactions = 0
    for i in range(40):  # ~200 bytes each
        mark(state, i)
        if not journal_of(tmp_path).exists():
            compactions += 1
            continue
        # Never more than one line past the bigger of the floor and the snapshot.
        limit = max(2000, state_path(tmp_path).stat().st_size)
        assert journal_of(tmp_path).stat().st_size <= limit + 300
    assert 2 <= compactions <= 6  # the snapshot grows, so compactions get rarer
    doc = json.loads(state_path(tmp_path).read_text("utf-8"))
    assert len(doc["threads"]) > 2  # folded in along the way
    assert BatchState.load(tmp_path).threads == state.threads


def test_a_torn_last_line_is_ignored_and_cut_before_the_next_append(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = seeded(tmp_path, 1)
    mark(state, 1)
    mark(state, 2)
    path = journal_of(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: data.rstrip(b"\n").rfind(b"\n") + 1] + b'{"k": "new-000000')  # killed
    with caplog.at_level(logging.DEBUG, logger="pplx_export"):
        loaded = BatchState.load(tmp_path)
    assert "last line is unfinished; ignored" in caplog.text  # debug: may be a live append
    assert loaded.status("new-00000001") == "ok"
    assert loaded.get("new-00000002") is None  # the torn change is lost, nothing else
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="pplx_export"):
        mark(loaded, 3)  # must not be glued onto the torn bytes
    assert "killed mid-append); dropped" in caplog.text
    assert path.read_bytes().endswith(b"\n")
    again = BatchState.load(tmp_path)
    assert again.status("new-00000003") == "ok" and again.get("new-00000002") is None
    assert all(json.loads(line) for line in path.read_text("utf-8").splitlines())


def test_a_garbled_middle_line_is_reported_and_the_rest_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = seeded(tmp_path, 1)
    for i in range(3):
        mark(state, i)
    path = journal_of(tmp_path)
    lines = path.read_bytes().split(b"\n")
    lines[2] = b"\x00\x00garbage{"
    path.write_bytes(b"\n".join(lines))
    with caplog.at_level(logging.WARNING, logger="pplx_export"):
        loaded = BatchState.load(tmp_path)
    assert "line 3 is garbled" in caplog.text
    assert loaded.get("new-00000001") is None
    assert loaded.status("new-00000000") == "ok" and loaded.status("new-00000002") == "ok"


def test_a_kill_between_the_compaction_marker_and_the_journal_removal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The snapshot is new, the journal still there: its changes are not applied twice, and
    none is lost; the next change starts a journal on the new snapshot."""
    state = seeded(tmp_path, 1)
    mark(state, 1)
    mark(state, 2)

    class Killed(BaseException):
        pass

    def killed(self: Path, missing_ok: bool = False) -> None:
        raise Killed

    monkeypatch.setattr(Path, "unlink", killed)
    with pytest.raises(Killed):
        state.save()
    monkeypatch.undo()
    assert journal_of(tmp_path).exists()
    marker = json.loads(journal_of(tmp_path).read_text("utf-8").splitlines()[-1])
    assert marker == {"compacted": journal.digest(state_path(tmp_path).read_bytes())}
    loaded = BatchState.load(tmp_path)
    assert loaded.threads == state.threads and loaded.replayed == 0
    mark(loaded, 3)
    assert BatchState.load(tmp_path).threads == loaded.threads


def test_a_kill_between_a_journal_append_and_the_compaction(tmp_path: Path) -> None:
    """The changes are in the journal only (the end-of-run compaction never ran)."""
    state = seeded(tmp_path, 1)
    for i in range(5):
        mark(state, i)
    del state  # killed: no compact()
    loaded = BatchState.load(tmp_path)
    assert sorted(k for k in loaded.threads if k.startswith("new-")) == [
        f"new-{i:08d}" for i in range(5)
    ]
    assert loaded.compact()
    assert not journal_of(tmp_path).exists()
    assert len(json.loads(state_path(tmp_path).read_text("utf-8"))["threads"]) == 6


def test_a_journal_of_another_snapshot_is_set_aside_not_replayed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state = seeded(tmp_path, 1)
    mark(state, 1)
    # An older tool rewrites the snapshot without knowing of the journal.
    doc = json.loads(state_path(tmp_path).read_text("utf-8"))
    doc["threads"]["older-tool"] = {"status": "ok", "lastUpdated": "x", "title": "t"}
    state_path(tmp_path).write_text(json.dumps(doc), "utf-8")
    with caplog.at_level(logging.WARNING, logger="pplx_export"):
        assert BatchState.load(tmp_path, repair=False).get("new-00000001") is None
        assert journal_of(tmp_path).exists()  # read-only: nothing moved
        loaded = BatchState.load(tmp_path)
    assert "belongs to another" in caplog.text
    assert loaded.status("older-tool") == "ok" and loaded.get("new-00000001") is None
    assert not journal_of(tmp_path).exists()
    assert list(tmp_path.glob("index/batch_state.journal.stale-*"))


def test_a_lost_snapshot_keeps_the_changes_of_its_journal(tmp_path: Path) -> None:
    state = seeded(tmp_path, 1)
    mark(state, 1)
    state.mark_deleted("gone", now=NOW)
    state_path(tmp_path).unlink()
    loaded = BatchState.load(tmp_path, repair=False)
    assert loaded.status("gone") == "deleted" and loaded.status("new-00000001") == "ok"


@pytest.mark.parametrize("appends_after", [True, False])
def test_a_reader_racing_a_compaction_sees_every_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, appends_after: bool
) -> None:
    """`status` while a batch compacts: the reader got the old snapshot, then the writer
    replaced the snapshot and removed the journal (and maybe started a new one) before the
    reader read the journal."""
    writer = seeded(tmp_path, 1)
    mark(writer, 1)
    real_read = Path.read_bytes
    calls = {"n": 0}

    def racing(self: Path) -> bytes:
        data = real_read(self)
        if self.name == "batch_state.json" and calls["n"] == 0:
            calls["n"] += 1
            mark(writer, 2)
            writer.save()  # compacted between the reader's two reads
            if appends_after:
                mark(writer, 3)  # and a new journal started on the new snapshot
        return data

    monkeypatch.setattr(Path, "read_bytes", racing)
    reader = BatchState.load(tmp_path, repair=False)
    monkeypatch.undo()
    assert reader.threads == writer.threads
    expected = {"new-00000001", "new-00000002"} | ({"new-00000003"} if appends_after else set())
    assert {k for k in reader.threads if k.startswith("new-")} == expected


def test_a_second_process_reads_snapshot_and_journal(tmp_path: Path) -> None:
    """What `status` sees while a batch holds the lock: every change appended so far."""
    import subprocess
    import sys

    state = seeded(tmp_path, 2)
    for i in range(4):
        mark(state, i)
    code = (
        "import json,sys; from pplx_export.archive.state import BatchState;"
        "s = BatchState.load(sys.argv[1], repair=False);"
        "print(json.dumps(sorted(s.threads)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert json.loads(out.stdout) == sorted(state.threads)
