from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pplx_export.errors import ArchiveError
from pplx_export.store.batch_state import BatchState, legacy_path, rebuild_from_disk, state_path
from pplx_export.store.state_check import check_state_vs_dirs

NOW = datetime(2042, 2, 3, 4, 5, 6, tzinfo=UTC)
STAMP = "2042-02-03T04:05:06Z"


def make_thread(
    root: Path,
    uuid: str,
    updated: str | None,
    *,
    account: str = "Alice Example",
    mode: str = "search",
    title: str = "A thread",
    day: str = "2042-01-01",
    **extra: Any,
) -> Path:
    folder = root / account / mode / f"{day}_{title.lower().replace(' ', '-')}_{uuid[:8]}"
    folder.mkdir(parents=True)
    doc: dict[str, Any] = {"web_uuid": uuid, "title": title, "mode": mode}
    if updated is not None:
        doc["lastUpdated"] = updated
    doc.update(extra)
    (folder / "thread.json").write_text(json.dumps(doc, ensure_ascii=False, indent=1))
    return folder


def write_state(root: Path, content: str) -> Path:
    """The file the release before the state store kept the batch state in."""
    path = legacy_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
    return path


def stored(root: Path) -> dict[str, Any]:
    """The `threads` table as another process reads it (what is committed)."""
    db = sqlite3.connect(state_path(root))
    try:
        rows = db.execute("SELECT uuid, status, record FROM threads").fetchall()
    finally:
        db.close()
    out = {uuid: json.loads(record) for uuid, _status, record in rows}
    assert all(status == out[uuid]["status"] for uuid, status, _ in rows)
    return out


def index_files(root: Path) -> list[str]:
    return sorted(
        p.name for p in (root / "index").iterdir() if "-wal" not in p.name and "-shm" not in p.name
    )


def test_missing_state_is_empty_and_creates_nothing(tmp_path: Path) -> None:
    state = BatchState.load(tmp_path)
    assert state.threads == {}
    assert not state_path(tmp_path).exists()


def test_every_mark_is_saved_at_once_in_the_v1_format(tmp_path: Path) -> None:
    state = BatchState.load(tmp_path)
    state.mark_ok("u-ok", last_updated="2042-01-01T00:00:00Z", title="T" * 100, now=NOW, dir="a/b")
    assert stored(tmp_path) == {
        "u-ok": {
            "status": "ok",
            "lastUpdated": "2042-01-01T00:00:00.000000Z",
            "title": "T" * 80,
            "exported_at": STAMP,
            "dir": "a/b",
        }
    }
    state.mark_error("u-err", error="x" * 500, last_updated="L", title="e", now=NOW)
    state.mark_gone("expired", "u-exp", note="ENTRY_EXPIRED", title="old", now=NOW)
    state.mark_gone("deleted", "u-del", now=NOW)
    again = BatchState.load(tmp_path)
    assert again.get("u-err") == {
        "status": "error",
        "lastUpdated": "L",
        "title": "e",
        "failed_at": STAMP,
        "error": "x" * 300,
    }
    assert again.get("u-exp") == {
        "status": "expired",
        "lastUpdated": "",
        "title": "old",
        "expired_at": STAMP,
        "note": "ENTRY_EXPIRED",
    }
    assert again.status("u-del") == "deleted"
    assert again.get("u-del")["deleted_at"] == STAMP  # type: ignore[index]
    assert again.counts() == {"ok": 1, "error": 1, "expired": 1, "deleted": 1}
    assert not again.legacy
    # Each change is committed as it is made: nothing is left for the end of the run.
    assert index_files(tmp_path) == ["state.sqlite"]
    assert not state.compact()
    assert stored(tmp_path) == again.threads


def test_a_failed_retry_keeps_the_directory_of_the_earlier_export(tmp_path: Path) -> None:
    state = BatchState.load(tmp_path)
    state.mark_ok("u", last_updated="1", title="t", dir="Alice/search/x_u", now=NOW)
    state.mark_error("u", error="503", now=NOW)
    assert BatchState.load(tmp_path).get("u")["dir"] == "Alice/search/x_u"  # type: ignore[index]


def test_legacy_flat_format_is_read_and_rewritten_as_v1(tmp_path: Path) -> None:
    legacy = {
        "u1": {"status": "ok", "lastUpdated": "2042-01-01T00:00:00.500000Z", "title": "a"},
        "u2": {"status": "expired", "lastUpdated": "", "title": "b", "note": "gone"},
    }
    write_state(tmp_path, json.dumps(legacy))
    state = BatchState.load(tmp_path)
    assert state.legacy
    assert state.threads == legacy
    assert index_files(tmp_path) == ["batch_state.json.migrated", "state.sqlite"]
    state.mark_ok("u3", last_updated="z", title="c", now=NOW)
    assert set(stored(tmp_path)) == {"u1", "u2", "u3"}
    assert not list(tmp_path.glob("index/*.corrupt-*"))
    assert not BatchState.load(tmp_path).legacy  # migrated once: the store holds it now


def test_empty_legacy_dict_is_a_valid_empty_state(tmp_path: Path) -> None:
    write_state(tmp_path, "{}")
    state = BatchState.load(tmp_path)
    assert state.threads == {} and not state.rebuilt


def test_corrupt_state_is_moved_aside_and_rebuilt_from_disk(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    make_thread(tmp_path, "aaaaaaaa-1", "2042-01-05T10:00:00.123Z", title="Kept", exported_at="E")
    make_thread(tmp_path, "bbbbbbbb-2", "2042-01-06 10:00 UTC", account="bob", mode="study")
    make_thread(tmp_path, "cccccccc-3", None, mode="computer")  # legacy thread without a date
    bad = '{"version": 1, "threads": {"aaaaaaaa-1": {"status": "ok"'
    path = write_state(tmp_path, bad)
    with caplog.at_level(logging.WARNING, logger="pplx_export"):
        state = BatchState.load(tmp_path, now=NOW)
    assert "corrupt" in caplog.text and "rebuilt" in caplog.text
    aside = list(path.parent.glob("batch_state.json.*"))
    assert aside == [path.with_name("batch_state.json.migrated")] and aside[0].read_text() == bad
    assert state.rebuilt and state.corrupt_copy == aside[0]
    assert state.threads["aaaaaaaa-1"] == {
        "status": "ok",
        "lastUpdated": "2042-01-05T10:00:00.123000Z",
        "title": "Kept",
        "exported_at": "E",
        "dir": "Alice Example/search/2042-01-01_kept_aaaaaaaa",
    }
    assert state.threads["bbbbbbbb-2"]["lastUpdated"] == "2042-01-06T10:00:00.000000Z"
    assert state.threads["bbbbbbbb-2"]["exported_at"] == STAMP
    assert state.threads["cccccccc-3"]["lastUpdated"] == ""
    # the rebuilt state is in the store, and the next load says nothing more
    assert stored(tmp_path) == state.threads
    again = BatchState.load(tmp_path, now=NOW)
    assert again.threads == state.threads and not again.rebuilt and again.corrupt_copy is None


@pytest.mark.parametrize(
    "content",
    [
        "[]",
        '"just a string"',
        '{"u1": "ok"}',
        '{"version": 1, "threads": []}',
        '{"version": "one", "threads": {}}',
        "",
    ],
)
def test_wrong_shapes_are_corrupt(tmp_path: Path, content: str) -> None:
    make_thread(tmp_path, "dddddddd-4", "2042-01-01T00:00:00Z")
    write_state(tmp_path, content)
    state = BatchState.load(tmp_path, now=NOW)
    assert state.rebuilt
    assert set(state.threads) == {"dddddddd-4"}
    assert len(list(tmp_path.glob("index/batch_state.json.migrated"))) == 1


def test_rebuild_salvages_records_of_threads_not_on_disk(tmp_path: Path) -> None:
    make_thread(tmp_path, "eeeeeeee-5", "2042-01-02T00:00:00Z")
    shaky = {
        "eeeeeeee-5": {"status": "error", "error": "old failure"},
        "gone": {"status": "deleted", "note": "ENTRY_DELETED", "title": "t"},
        "failed": {"status": "error", "error": "timeout"},
        "broken": "not a record",
    }
    write_state(tmp_path, json.dumps(shaky))
    state = BatchState.load(tmp_path, now=NOW)
    assert state.status("eeeeeeee-5") == "ok"  # disk wins for exported threads
    assert state.status("gone") == "deleted"
    assert state.status("failed") == "error"
    assert "broken" not in state.threads


def test_read_only_load_leaves_a_corrupt_file_alone(tmp_path: Path) -> None:
    make_thread(tmp_path, "ffffffff-6", "2042-01-01T00:00:00Z")
    path = write_state(tmp_path, "{oops")
    state = BatchState.load(tmp_path, repair=False)
    assert state.rebuilt and set(state.threads) == {"ffffffff-6"}
    assert path.read_text() == "{oops"
    assert index_files(tmp_path) == ["batch_state.json"]  # no store, nothing renamed


def test_a_newer_state_version_is_refused_not_overwritten(tmp_path: Path) -> None:
    path = write_state(tmp_path, '{"version": 2, "threads": {}}')
    with pytest.raises(ArchiveError, match="version 2"):
        BatchState.load(tmp_path)
    assert path.read_text() == '{"version": 2, "threads": {}}'


def test_rebuild_picks_the_newest_of_duplicate_directories(tmp_path: Path) -> None:
    make_thread(tmp_path, "99999999-9", "2042-01-01T00:00:00Z", day="2042-01-01")
    make_thread(tmp_path, "99999999-9", "2042-03-01T00:00:00Z", day="2042-03-01")
    make_thread(tmp_path, "99999999-9", "2042-02-01T00:00:00Z", day="2042-02-01")
    records = rebuild_from_disk(tmp_path, now=NOW)
    assert records["99999999-9"]["lastUpdated"] == "2042-03-01T00:00:00.000000Z"
    assert records["99999999-9"]["dir"].startswith("Alice Example/search/2042-03-01_")


def test_index_dir_and_unreadable_thread_json_are_not_threads(tmp_path: Path) -> None:
    (tmp_path / "index" / "x" / "y").mkdir(parents=True)
    (tmp_path / "index" / "x" / "y" / "thread.json").write_text('{"web_uuid": "nope"}')
    broken = make_thread(tmp_path, "77777777-7", "2042-01-01T00:00:00Z")
    (broken / "thread.json").write_text("{")
    assert rebuild_from_disk(tmp_path, now=NOW) == {}


def test_state_and_directories_agree(tmp_path: Path) -> None:
    make_thread(tmp_path, "11111111-1", "2042-01-01T00:00:00.100000Z")
    make_thread(tmp_path, "22222222-2", "2042-01-02T00:00:00Z", mode="study")
    threads = {
        "11111111-1": {"status": "ok", "lastUpdated": "2042-01-01T00:00:00.1Z"},
        "22222222-2": {"status": "deleted", "note": "ENTRY_DELETED"},
        "33333333-3": {"status": "expired"},
    }
    check = check_state_vs_dirs(tmp_path, threads)
    assert check.ok, check.to_json()


def test_state_and_directories_disagree(tmp_path: Path) -> None:
    make_thread(tmp_path, "11111111-1", "2042-01-01T00:00:00Z")
    make_thread(tmp_path, "22222222-2", "2042-01-02T00:00:00Z")
    make_thread(tmp_path, "44444444-4", "2042-01-04T00:00:00Z", day="2042-01-04")
    make_thread(tmp_path, "44444444-4", "2042-01-04T00:00:00Z", day="2042-01-03")
    bad = make_thread(tmp_path, "55555555-5", "x", account="carol")
    (bad / "thread.json").write_text("[]")
    threads = {
        "11111111-1": {"status": "ok", "lastUpdated": "2042-01-01T00:00:00.5Z"},
        "33333333-3": {"status": "ok", "lastUpdated": "2042-01-03T00:00:00Z"},
        "44444444-4": {"status": "ok", "lastUpdated": "2042-01-04T00:00:00Z"},
    }
    check = check_state_vs_dirs(tmp_path, threads)
    assert not check.ok
    assert check.to_json() == {
        "ok_without_dir": ["33333333-3"],
        "untracked": ["22222222-2"],
        "stale": ["11111111-1"],
        "duplicates": ["44444444-4"],
        "unreadable": ["carol/search/2042-01-01_a-thread_55555555/thread.json"],
    }


def test_state_from_before_the_canonical_clock_is_migrated_on_first_read(tmp_path: Path) -> None:
    """Records written by the current release (`Z` without µs, 5 digits, the earlier tool's
    display form) come back on the canonical clock, and the file is rewritten once."""
    old = {
        "version": 1,
        "threads": {
            "u1": {"status": "ok", "lastUpdated": "2042-01-01T00:00:00.18033Z", "title": "a"},
            "u2": {"status": "ok", "lastUpdated": "2042-01-02 10:00 UTC", "title": "b"},
            "u3": {"status": "ok", "lastUpdated": "2042-01-03T00:00:00.000001Z", "title": "c"},
            "u4": {"status": "expired", "lastUpdated": "", "title": "d", "note": "gone"},
        },
    }
    write_state(tmp_path, json.dumps(old))
    state = BatchState.load(tmp_path)
    assert {k: r["lastUpdated"] for k, r in state.threads.items()} == {
        "u1": "2042-01-01T00:00:00.180330Z",
        "u2": "2042-01-02T10:00:00.000000Z",
        "u3": "2042-01-03T00:00:00.000001Z",
        "u4": "",
    }
    assert stored(tmp_path)["u1"]["lastUpdated"] == "2042-01-01T00:00:00.180330Z"
    assert BatchState.load(tmp_path).threads == state.threads
    read_only = tmp_path / "ro"
    write_state(read_only, json.dumps(old))
    assert BatchState.load(read_only, repair=False).threads == state.threads
    assert json.loads(legacy_path(read_only).read_text()) == old  # read-only: nothing written
    assert not state_path(read_only).exists()


def test_the_releases_journal_is_replayed_by_the_migration(tmp_path: Path) -> None:
    """batch_state.json plus the changes its journal holds since (one torn line, killed
    mid-append, ignored): the store holds both, and both files are retired."""
    snapshot = json.dumps({"version": 1, "threads": {"u1": {"status": "error", "title": "a"}}})
    path = write_state(tmp_path, snapshot)
    base = hashlib.sha256(snapshot.encode()).hexdigest()
    lines = [
        {"journal": 1, "base": base},
        {"k": "u1", "v": {"status": "ok", "lastUpdated": "2042-01-01T00:00:00Z", "title": "a"}},
        {"k": "u2", "v": {"status": "deleted", "title": "b", "note": "ENTRY_DELETED"}},
    ]
    journal = path.with_suffix(".journal")
    journal.write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"k": "u3", "v', "utf-8")
    state = BatchState.load(tmp_path)
    assert state.counts() == {"ok": 1, "error": 0, "expired": 0, "deleted": 1}
    assert state.get("u1")["lastUpdated"] == "2042-01-01T00:00:00.000000Z"  # type: ignore[index]
    assert index_files(tmp_path) == [
        "batch_state.journal.migrated",
        "batch_state.json.migrated",
        "state.sqlite",
    ]


def test_a_damaged_store_is_set_aside_and_rebuilt_from_disk(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    make_thread(tmp_path, "aaaaaaaa-1", "2042-01-05T10:00:00Z", title="Kept")
    state = BatchState.load(tmp_path, now=NOW)
    state.mark_error("gone-1", error="503", now=NOW)
    state.close()
    store = state_path(tmp_path)
    store.write_bytes(b"this is no database" * 100)
    read_only = BatchState.load(tmp_path, repair=False, now=NOW)
    assert read_only.rebuilt and set(read_only.threads) == {"aaaaaaaa-1"}
    assert read_only.corrupt_copy == store and not list(store.parent.glob("*.corrupt-*"))
    with caplog.at_level(logging.WARNING, logger="pplx_export"):
        state = BatchState.load(tmp_path, now=NOW)
    assert "damaged" in caplog.text and "rebuilt from disk" in caplog.text
    aside = list(store.parent.glob("state.sqlite.corrupt-*"))
    assert len(aside) == 1 and state.corrupt_copy == aside[0] and state.rebuilt
    assert set(state.threads) == {"aaaaaaaa-1"} and stored(tmp_path) == state.threads


def test_a_second_run_of_the_migration_keeps_what_the_first_imported(tmp_path: Path) -> None:
    """Two processes that both found the migration pending: the second finds the file
    retired and must not blank the table the first filled."""
    from pplx_export.store.batch_import import import_batch_state

    write_state(tmp_path, json.dumps({"version": 1, "threads": {"u1": {"status": "error"}}}))
    BatchState.load(tmp_path).close()
    db = sqlite3.connect(state_path(tmp_path), isolation_level=None)
    import_batch_state(db, tmp_path)
    db.close()
    assert BatchState.load(tmp_path).status("u1") == "error"
