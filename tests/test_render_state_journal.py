"""render_state: records go to a journal during a run, folded into the snapshot at its end."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from pplx_export.archive import journal
from pplx_export.archive.journal import journal_path
from pplx_export.archive.render_state import (
    STATE_NAME,
    RenderState,
    entry_of,
    load_state,
    save_state,
)
from pplx_export.sync import rerender as rerender_mod
from pplx_export.sync.rerender import rerender
from pplx_export.util.jsontext import dumps_indented
from tests.archive_fakes import FAKE_ENGINE, make_thread


def entry(n: int) -> dict[str, Any]:
    return {
        "renderer": "v1",
        "lang": "en",
        "files": {"raw_entries.json": [n, 1000 + n, f"{n:064x}"], "thread.json": [1, 2, "ab"]},
        "outputs": f"{n:064x}",
    }


@pytest.mark.parametrize("n", [0, 1, 5])
def test_the_streamed_snapshot_is_the_old_format_byte_for_byte(tmp_path: Path, n: int) -> None:
    threads = {f"alice/search/d{i}_é": entry(i) for i in reversed(range(n))}
    save_state(tmp_path, threads)
    doc = {"format": 1, "threads": dict(sorted(threads.items()))}
    assert (tmp_path / STATE_NAME).read_text("utf-8") == dumps_indented(doc, 0)
    assert load_state(tmp_path) == threads


def test_records_are_journalled_and_replayed_then_compacted(tmp_path: Path) -> None:
    save_state(tmp_path, {"a/b/old": entry(1), "a/b/gone": entry(2)})
    snapshot = (tmp_path / STATE_NAME).read_bytes()
    state = RenderState.load(tmp_path)
    state.record("a/b/new", entry(3))
    state.record("a/b/gone", None)
    assert "a/b/new" not in state.threads  # not held in memory
    state.flush()
    assert (tmp_path / STATE_NAME).read_bytes() == snapshot
    assert load_state(tmp_path) == {"a/b/old": entry(1), "a/b/new": entry(3)}
    state.compact(keep={"a/b/new", "a/b/gone"})
    assert not journal_path(tmp_path / STATE_NAME).exists()
    assert json.loads((tmp_path / STATE_NAME).read_text("utf-8"))["threads"] == {
        "a/b/new": entry(3)
    }


def test_a_torn_last_render_state_line_costs_that_thread_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    save_state(tmp_path, {})
    state = RenderState.load(tmp_path)
    state.record("a/b/one", entry(1))
    state.record("a/b/two", entry(2))
    state.flush()
    path = journal_path(tmp_path / STATE_NAME)
    path.write_bytes(path.read_bytes()[:-20])  # killed mid-append
    with caplog.at_level(logging.DEBUG, logger="pplx_export"):
        assert load_state(tmp_path) == {"a/b/one": entry(1)}
    assert "unfinished" in caplog.text


def test_a_killed_first_render_keeps_what_it_journalled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL between the journal appends and the end-of-run compaction: the next
    `--changed-only` run skips the threads already recorded and renders the rest."""
    root = tmp_path / "archive"
    for i in range(5):
        make_thread(root, web_uuid=f"bb{i:06d}-0000-4000-8000-000000000000", title=f"t{i}")
    monkeypatch.setattr(rerender_mod, "STATE_CHECKPOINT", 2)

    class Killed(BaseException):
        pass

    def killed(self: RenderState, keep: Any = None) -> None:
        raise Killed

    monkeypatch.setattr(RenderState, "compact", killed)
    with pytest.raises(Killed):
        rerender(root, engine=FAKE_ENGINE, jobs=1)
    monkeypatch.undo()
    assert not (root / STATE_NAME).exists()
    assert len(load_state(root)) == 4  # two appends of two; the fifth was not flushed
    again = rerender(root, engine=FAKE_ENGINE, jobs=1, changed_only=True)
    assert (again.skipped, again.written + again.unchanged) == (4, 1)
    assert not journal_path(root / STATE_NAME).exists()
    assert len(json.loads((root / STATE_NAME).read_text("utf-8"))["threads"]) == 5


def test_a_render_appends_in_batches_and_never_dumps_the_whole_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "archive"
    for i in range(7):
        make_thread(root, web_uuid=f"cc{i:06d}-0000-4000-8000-000000000000", title=f"t{i}")
    monkeypatch.setattr(rerender_mod, "STATE_CHECKPOINT", 3)
    appends: list[int] = []
    snapshots: list[int] = []
    real_append = journal.Writer.append
    real_stage = journal.stage_stream

    def append(self: Any, changes: Any) -> int:
        appends.append(len(list(changes)))
        return int(real_append(self, [c for c in changes]))

    def stage(*args: Any, **kwargs: Any) -> Any:
        snapshots.append(1)
        return real_stage(*args, **kwargs)

    monkeypatch.setattr(journal.Writer, "append", append)
    monkeypatch.setattr(journal, "stage_stream", stage)
    rerender(root, engine=FAKE_ENGINE, jobs=1)
    assert appends == [3, 3, 1]  # one fsynced append per checkpoint, the rest at the end
    assert snapshots == [1]  # one snapshot, at the end
    assert len(load_state(root)) == 7


def test_snapshot_records_stay_undecoded_until_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loaded snapshot holds each record as a view of the file's bytes (a re-render of a
    big archive would otherwise hold every record decoded); what it records, rewrites and
    compacts is the same as with the records decoded (the stdlib path, without msgspec)."""
    threads = {f"alice/search/d{i}": entry(i) for i in range(3)}
    save_state(tmp_path, threads)
    before = (tmp_path / STATE_NAME).read_bytes()
    state = RenderState.load(tmp_path)
    assert not any(isinstance(v, dict) for v in state.threads.values())
    assert [entry_of(v) for v in state.threads.values()] == list(threads.values())
    state.record("alice/search/d1", entry(7))
    state.compact()
    lazy = (tmp_path / STATE_NAME).read_bytes()
    save_state(tmp_path, threads)
    assert (tmp_path / STATE_NAME).read_bytes() == before
    monkeypatch.setattr("pplx_export.archive.render_state._RAW", None)
    state = RenderState.load(tmp_path)
    assert all(isinstance(v, dict) for v in state.threads.values())
    state.record("alice/search/d1", entry(7))
    state.compact()
    assert (tmp_path / STATE_NAME).read_bytes() == lazy
