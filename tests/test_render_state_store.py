"""render_state: the `rendered` table of the state store, read in one ordered scan beside
the listing, written in batches; the release's rendered.jsonl (and render_state.json) migrate."""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pplx_export.archive.paths import walk_thread_dirs
from pplx_export.commands.rerender import run as rerender_mod
from pplx_export.commands.rerender.run import Todo, rerender
from pplx_export.store import render_state
from pplx_export.store.render_state import (
    STATE_NAME,
    RenderState,
    entry_of,
    load_state,
    save_state,
)
from pplx_export.util.jsontext import dumps_indented
from tests.archive_fakes import FAKE_ENGINE, make_thread


def entry(n: int) -> dict[str, Any]:
    return {
        "renderer": "v1",
        "lang": "en",
        "files": {"raw_entries.json": [n, 1000 + n, f"{n:064x}"], "thread.json": [1, 2, "ab"]},
        "outputs": f"{n:064x}",
    }


def stored(root: Path) -> list[tuple[str, Any]]:
    """The table's rows by key, as another process reads them (what is committed)."""
    db = sqlite3.connect(root / STATE_NAME)
    try:
        rows = db.execute("SELECT rel, record FROM rendered ORDER BY key").fetchall()
    finally:
        db.close()
    return [(rel, json.loads(record)) for rel, record in rows]


@pytest.mark.parametrize("n", [0, 1, 5])
def test_one_row_per_directory_in_the_listings_order(tmp_path: Path, n: int) -> None:
    threads = {f"alice/search/d{i}_é": entry(i) for i in reversed(range(n))}
    save_state(tmp_path, threads)
    assert stored(tmp_path) == [(rel, threads[rel]) for rel in sorted(threads)]
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


def test_flushed_records_are_committed_and_compact_forgets_the_vanished(tmp_path: Path) -> None:
    save_state(tmp_path, {"a/b/old": entry(1), "a/b/gone": entry(2)})
    state = RenderState.load(tmp_path)
    listed = [("a/b/new", ""), ("a/b/old", "")]
    assert [rel for (rel, _), _ in state.join(listed, forget=True)] == ["a/b/new", "a/b/old"]
    assert state.vanished == {"a/b/gone"}
    state.record("a/b/new", entry(3))
    assert len(stored(tmp_path)) == 2  # buffered until the flush
    state.flush()
    # A run killed here keeps its record: committed, seen by any other reader.
    assert load_state(tmp_path) == {"a/b/old": entry(1), "a/b/gone": entry(2), "a/b/new": entry(3)}
    state.compact()
    assert load_state(tmp_path) == {"a/b/new": entry(3), "a/b/old": entry(1)}
    state.close()


def test_records_in_any_order_read_back_in_the_listings_order(tmp_path: Path) -> None:
    save_state(tmp_path, {"a/b/1": entry(1), "a/b/3": entry(3)})
    other = RenderState.load(tmp_path)
    other.record("a/b/3", None)
    other.record("a-b/m/2", entry(2))  # out of order: `batch` records as it exports
    other.record("a/b/0", entry(0))
    other.flush()
    state = RenderState.load(tmp_path)
    assert [(rel, entry_of(rec)) for _, rel, rec in state.rows()] == [
        ("a/b/0", entry(0)),
        ("a/b/1", entry(1)),
        ("a-b/m/2", entry(2)),
    ]


def test_the_join_reads_the_table_in_pages_in_one_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages by key (a statement each, none left open while the run records) add up to the
    one ordered scan: every row once, in order, whatever the page size."""
    monkeypatch.setattr(render_state, "PAGE_ROWS", 2)
    saved = {f"a/m/t{i}": entry(i) for i in range(7)}
    save_state(tmp_path, saved)
    state = RenderState.load(tmp_path)
    listed = [(f"a/m/t{i}", "") for i in range(1, 9, 2)]
    joined = []
    for (rel, _), rec in state.join(listed, forget=True):
        state.record(rel, entry(100))  # recorded mid-join, as a run does at its checkpoints
        state.flush()
        joined.append((rel, entry_of(rec)))
    assert joined == [(rel, saved.get(rel)) for rel, _ in listed]
    assert state.vanished == {"a/m/t0", "a/m/t2", "a/m/t4", "a/m/t6"}


def _snapshot(rows: dict[str, Any], ident: str = "abc") -> bytes:
    lines = [json.dumps({"rendered": 2, "id": ident})]
    for rel in sorted(rows, key=lambda r: r.split("/")):
        lines.append(json.dumps(rel, ensure_ascii=False) + "\t" + json.dumps(rows[rel]))
    return ("\n".join(lines) + "\n").encode()


def _journal(base: str, changes: list[tuple[str, Any]]) -> bytes:
    lines = [{"journal": 1, "base": base}, *({"k": k, "v": v} for k, v in changes)]
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def test_the_releases_snapshot_and_journal_migrate_into_the_table(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    index = tmp_path / "index"
    index.mkdir()
    snapshot = _snapshot({"a/m/t1": entry(1), "a/m/t2": entry(2), "a/m/t3": entry(3)})
    lines = snapshot.split(b"\n")
    lines[2] = b"not a line"  # garbled: that thread counts as changed
    (index / "rendered.jsonl").write_bytes(b"\n".join(lines))
    journal = _journal("abc", [("a/m/t3", None), ("a/m/t4", entry(4))])
    (index / "rendered.journal").write_bytes(journal + b'{"k": "a/m/t5", "v"')  # torn
    with caplog.at_level(logging.WARNING, logger="pplx_export"):
        assert load_state(tmp_path) == {"a/m/t1": entry(1), "a/m/t4": entry(4)}
    assert "garbled" in caplog.text
    assert sorted(p.name for p in index.iterdir() if "sqlite-" not in p.name) == [
        "rendered.journal.migrated",
        "rendered.jsonl.migrated",
        "state.sqlite",
    ]


def test_a_stale_journal_is_not_replayed(tmp_path: Path) -> None:
    index = tmp_path / "index"
    index.mkdir()
    (index / "rendered.jsonl").write_bytes(_snapshot({"a/m/t1": entry(1)}, ident="new"))
    (index / "rendered.journal").write_bytes(_journal("old", [("a/m/t1", None)]))
    assert load_state(tmp_path) == {"a/m/t1": entry(1)}


def test_a_format_1_state_migrates_on_the_first_run_that_writes(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    for i in range(3):
        make_thread(root, web_uuid=f"dd{i:06d}-0000-4000-8000-000000000000", title=f"t{i}")
    rerender(root, engine=FAKE_ENGINE, jobs=1)
    current = load_state(root)
    rels = sorted(current)
    legacy = root / "index" / "render_state.json"
    older = {rel: current[rel] for rel in rels[:2]}
    legacy.write_text(dumps_indented({"format": 1, "threads": {rels[0]: older[rels[0]]}}, 0))
    base = hashlib.sha256(legacy.read_bytes()).hexdigest()
    (root / "index" / "render_state.journal").write_bytes(
        _journal(base, [(rels[1], older[rels[1]])])
    )
    (root / STATE_NAME).unlink()
    dry = rerender(root, engine=FAKE_ENGINE, jobs=1, changed_only=True, dry_run=True)
    assert (dry.skipped, dry.total) == (2, 3)
    assert legacy.exists() and not (root / STATE_NAME).exists()  # a dry run writes nothing
    again = rerender(root, engine=FAKE_ENGINE, jobs=1, changed_only=True)
    assert (again.skipped, again.total) == (2, 3)
    assert not legacy.exists() and (root / "index" / "render_state.json.migrated").exists()
    assert not (root / "index" / "render_state.journal").exists()
    migrated = load_state(root)
    assert {rel: migrated[rel] for rel in older} == older
    assert set(migrated) == set(rels)
    third = rerender(root, engine=FAKE_ENGINE, jobs=1, changed_only=True)
    assert (third.skipped, third.total) == (3, 3)


def test_a_killed_first_render_keeps_what_it_flushed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL between the checkpoint commits and the end of the run: the next
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
    assert len(load_state(root)) == 4  # two commits of two; the fifth was not flushed
    again = rerender(root, engine=FAKE_ENGINE, jobs=1, changed_only=True)
    assert (again.skipped, again.written + again.unchanged) == (4, 1)
    assert len(load_state(root)) == 5


def test_a_render_records_in_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "archive"
    for i in range(7):
        make_thread(root, web_uuid=f"cc{i:06d}-0000-4000-8000-000000000000", title=f"t{i}")
    monkeypatch.setattr(rerender_mod, "STATE_CHECKPOINT", 3)
    batches: list[int] = []
    real_flush = RenderState.flush

    def flush(self: RenderState) -> None:
        if self._buffer:
            batches.append(len(self._buffer))
        real_flush(self)

    monkeypatch.setattr(RenderState, "flush", flush)
    rerender(root, engine=FAKE_ENGINE, jobs=1)
    assert batches == [3, 3, 1]  # one transaction per checkpoint, the rest at the end
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
