"""render_state: records go to a journal during a run, folded into the snapshot at its end."""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pplx_export.archive import journal
from pplx_export.archive.journal import journal_path
from pplx_export.archive.paths import walk_thread_dirs
from pplx_export.archive.render_state import (
    LEGACY_NAME,
    STATE_NAME,
    RenderState,
    entry_of,
    load_state,
    save_state,
)
from pplx_export.sync import rerender as rerender_mod
from pplx_export.sync.rerender import Todo, rerender
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
def test_the_snapshot_is_a_header_then_one_sorted_line_per_directory(
    tmp_path: Path, n: int
) -> None:
    threads = {f"alice/search/d{i}_é": entry(i) for i in reversed(range(n))}
    save_state(tmp_path, threads)
    lines = (tmp_path / STATE_NAME).read_text("utf-8").splitlines()
    assert json.loads(lines[0])["rendered"] == 2
    assert [line.split("\t")[0] for line in lines[1:]] == [
        json.dumps(rel, ensure_ascii=False) for rel in sorted(threads)
    ]
    assert [json.loads(line.split("\t")[1]) for line in lines[1:]] == [
        threads[rel] for rel in sorted(threads)
    ]
    assert load_state(tmp_path) == threads


def test_directories_sort_by_their_parts_as_the_listing_walks_them(tmp_path: Path) -> None:
    """ "a-b" < "a/" as strings, but the walk lists account "a" before "a-b": the snapshot
    follows the walk, so the two can be read side by side."""
    root = tmp_path / "archive"
    rels = ["a-b/search/t_1", "a/search/t_2", "a/search-x/t_3", "a.z/search/t_4"]
    for rel in rels:
        (root / rel).mkdir(parents=True)
        (root / rel / "thread.json").write_text("{}")
    listed = [rel for rel, _, _ in walk_thread_dirs(root)]
    assert listed == sorted(rels, key=lambda r: r.split("/"))
    save_state(root, {rel: entry(i) for i, rel in enumerate(rels)})
    state = RenderState.load(root)
    joined = [
        (item[0], entry_of(rec)) for item, rec in state.join(walk_thread_dirs(root), forget=True)
    ]
    assert joined == [(rel, entry(rels.index(rel))) for rel in listed]
    assert not state.vanished


records = st.dictionaries(
    st.tuples(
        st.sampled_from(["a", "a-b", "b"]),
        st.sampled_from(["m", "m.x"]),
        st.text("xy_é", min_size=1, max_size=3),
    ),
    st.integers(0, 9),
    max_size=12,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(recorded=records, listed=records, forget=st.booleans())
def test_join_pairs_each_listed_directory_with_its_record(
    tmp_path: Path,
    recorded: dict[tuple[str, ...], int],
    listed: dict[tuple[str, ...], int],
    forget: bool,
) -> None:
    root = Path(tempfile.mkdtemp(dir=tmp_path))  # one per example (examples repeat)
    saved = {"/".join(k): entry(v) for k, v in recorded.items()}
    save_state(root, saved)
    walk = sorted(("/".join(k), "", False) for k in listed)
    walk.sort(key=lambda item: item[0].split("/"))
    state = RenderState.load(root)
    got = [(item[0], entry_of(rec)) for item, rec in state.join(walk, forget=forget)]
    assert got == [(rel, saved.get(rel)) for rel, _, _ in walk]
    assert state.vanished == (set(saved) - {rel for rel, _, _ in walk} if forget else set())
    state.compact()
    assert load_state(root) == {
        k: v
        for k, v in saved.items()
        if k not in state.vanished and (not forget or k in {r for r, _, _ in walk})
    }


def test_records_are_journalled_and_replayed_then_compacted(tmp_path: Path) -> None:
    save_state(tmp_path, {"a/b/old": entry(1), "a/b/gone": entry(2)})
    snapshot = (tmp_path / STATE_NAME).read_bytes()
    state = RenderState.load(tmp_path)
    listed = [("a/b/new", ""), ("a/b/old", "")]
    assert [rel for (rel, _), _ in state.join(listed, forget=True)] == ["a/b/new", "a/b/old"]
    assert state.vanished == {"a/b/gone"}
    state.record("a/b/new", entry(3))
    state.flush()
    assert (tmp_path / STATE_NAME).read_bytes() == snapshot
    # A run killed here: the next one replays the journal over the snapshot.
    assert load_state(tmp_path) == {"a/b/old": entry(1), "a/b/gone": entry(2), "a/b/new": entry(3)}
    state.compact()
    assert not journal_path(tmp_path / STATE_NAME).exists()
    assert load_state(tmp_path) == {"a/b/new": entry(3), "a/b/old": entry(1)}


def test_a_killed_runs_journal_is_folded_in_by_the_next_run(tmp_path: Path) -> None:
    save_state(tmp_path, {"a/b/1": entry(1), "a/b/3": entry(3)})
    killed = RenderState.load(tmp_path)
    killed.record("a/b/3", None)
    killed.record("a/b/2", entry(2))  # out of order: a caller of its own
    killed.flush()
    state = RenderState.load(tmp_path)
    assert [(rel, entry_of(rec)) for _, rel, rec in state.rows()] == [
        ("a/b/1", entry(1)),
        ("a/b/2", entry(2)),
    ]
    state.record("a/b/4", entry(4))
    state.compact()
    assert load_state(tmp_path) == {"a/b/1": entry(1), "a/b/2": entry(2), "a/b/4": entry(4)}
    assert not journal_path(tmp_path / STATE_NAME).exists()


def test_garbled_or_unordered_snapshot_lines_cost_their_threads_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    save_state(tmp_path, {f"a/b/{i}": entry(i) for i in range(4)})
    path = tmp_path / STATE_NAME
    lines = path.read_bytes().split(b"\n")
    lines[2] = b"not a line"
    lines[3], lines[4] = lines[4], lines[3]
    path.write_bytes(b"\n".join(lines))
    with caplog.at_level(logging.WARNING, logger="pplx_export"):
        assert load_state(tmp_path) == {"a/b/0": entry(0), "a/b/3": entry(3)}
    assert "line 3 is garbled (and 1 more)" in caplog.text
    caplog.clear()
    state = RenderState.load(tmp_path)
    with caplog.at_level(logging.WARNING, logger="pplx_export"):
        assert len(list(state.join([("a/b/0", ""), ("a/b/3", "")], forget=True))) == 2
        state.record("a/b/4", entry(4))
        state.compact()  # reads the snapshot again: no second warning
    assert caplog.text.count("is garbled") == 1
    assert load_state(tmp_path) == {"a/b/0": entry(0), "a/b/3": entry(3), "a/b/4": entry(4)}


def test_a_format_1_state_is_read_then_replaced_by_the_first_run_that_writes(
    tmp_path: Path,
) -> None:
    root = tmp_path / "archive"
    for i in range(3):
        make_thread(root, web_uuid=f"dd{i:06d}-0000-4000-8000-000000000000", title=f"t{i}")
    rerender(root, engine=FAKE_ENGINE, jobs=1)
    current = load_state(root)
    rels = sorted(current)
    legacy = root / LEGACY_NAME
    older = {rel: current[rel] for rel in rels[:2]}
    doc = {"format": 1, "threads": {rels[0]: older[rels[0]]}}
    legacy.write_text(dumps_indented(doc, 0), "utf-8")
    writer = journal.Writer(legacy, journal.digest(legacy.read_bytes()), durable=False)
    writer.append([(rels[1], older[rels[1]])])  # a journal of the format-1 file
    (root / STATE_NAME).unlink()
    assert load_state(root) == older
    dry = rerender(root, engine=FAKE_ENGINE, jobs=1, changed_only=True, dry_run=True)
    assert (dry.skipped, dry.total) == (2, 3)
    assert legacy.exists() and not (root / STATE_NAME).exists()
    again = rerender(root, engine=FAKE_ENGINE, jobs=1, changed_only=True)
    assert (again.skipped, again.total) == (2, 3)
    assert not legacy.exists() and not journal_path(legacy).exists()
    migrated = load_state(root)
    assert {rel: migrated[rel] for rel in older} == older
    assert set(migrated) == set(rels)
    assert all(
        len(line.split(b"\t")) == 2 for line in (root / STATE_NAME).read_bytes().splitlines()[1:]
    )
    third = rerender(root, engine=FAKE_ENGINE, jobs=1, changed_only=True)
    assert (third.skipped, third.total) == (3, 3)


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

    def killed(self: RenderState) -> None:
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
    assert len(load_state(root)) == 5


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


def test_the_work_list_goes_through_a_file_and_comes_back_as_it_went_in() -> None:
    todo = Todo()
    items = [
        ("a/b/plain", b'{"renderer":"v"}', True),
        ("a/b/t\tab\nnew é", None, False),
        ('a/b/q"uote\\', b'{"x":"\\t"}', True),
    ] * 200  # past one buffer, so the file is written
    for rel, record, checked in items:
        todo.add(rel, record, checked)
    assert len(todo) == len(items)
    assert list(todo) == items
    todo.close()
    assert list(Todo()) == []  # nothing to render: no file at all


def test_records_in_no_order_are_folded_in_sorted_whenever_the_journal_is_due(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`batch` records threads in the order it exports them, for a long run: each time the
    journal is due, `compact` sorts this run's records (from their offsets) into the
    snapshot, and a directory recorded twice keeps its last record."""
    monkeypatch.setattr(journal, "MIN_COMPACT_BYTES", 1500)
    save_state(tmp_path, {"a/m/t05": entry(500), "b/m/t00": entry(0)})
    rels = [f"{acct}/m/t{i:02d}" for i in (7, 3, 11, 5, 0, 9, 1) for acct in ("b", "a-b", "a")]
    state = RenderState.load(tmp_path)
    compactions = 0
    for n, rel in enumerate([*rels, "a/m/t03"]):
        state.record(rel, entry(n))
        state.flush()
        if state.due():
            state.compact()
            compactions += 1
            assert not journal_path(tmp_path / STATE_NAME).exists()
    assert compactions >= 2
    state.compact()
    expected = {rel: entry(n) for n, rel in enumerate([*rels, "a/m/t03"])}
    assert load_state(tmp_path) == expected  # t05 and b/m/t00 recorded again: theirs
    lines = (tmp_path / STATE_NAME).read_text("utf-8").splitlines()[1:]
    assert [json.loads(line.split("\t")[0]) for line in lines] == sorted(
        expected, key=lambda rel: rel.split("/")
    )


def test_runs_that_leave_their_records_in_the_journal_add_up(tmp_path: Path) -> None:
    """Small `batch` runs append to the journal and leave it (not due): each next run, and
    the next re-render, sees every earlier run's records; compaction keeps the last."""
    save_state(tmp_path, {"a/m/t1": entry(1)})
    for n, rels in enumerate([["b/m/t9", "a/m/t3"], ["a/m/t2", "b/m/t9"]]):
        run = RenderState.load(tmp_path)
        for rel in rels:
            run.record(rel, entry(10 * n + int(rel[-1])))
            run.flush()
        assert not run.due()
    assert journal_path(tmp_path / STATE_NAME).exists()
    expected = {"a/m/t1": entry(1), "a/m/t2": entry(12), "a/m/t3": entry(3), "b/m/t9": entry(19)}
    assert load_state(tmp_path) == expected
    state = RenderState.load(tmp_path)
    state.compact()
    assert not journal_path(tmp_path / STATE_NAME).exists()
    assert load_state(tmp_path) == expected
