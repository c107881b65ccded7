from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pplx_export.commands.export.listing import (
    STOP_RUN,
    full_sweep_due,
    read_index_state,
    record_index_run,
    refresh_index,
    update_library_index,
)
from pplx_export.config import load_config
from pplx_export.store.docs import load_bytes
from pplx_export.store.library_index import (
    ROW_KEYS,
    index_path,
    indexed_accounts,
    load_index,
    normalize_row,
    safe_account_name,
    save_index,
)

NOW = datetime(2041, 5, 6, 7, 8, 9, tzinfo=UTC)


def row(n: int, updated: str | None = None, **extra: Any) -> dict[str, Any]:
    out = {
        "title": f"Thread número {n}",
        "entryUUID": f"uuid-{n:04d}",
        "href": f"thread-{n}",
        "mode": "SEARCH",
        "displayModel": "turbo",
        "lastUpdated": updated or f"2041-01-01T00:00:00.{n:06d}Z",
        "status": "COMPLETED",
        "space": None,
    }
    out.update(extra)
    return out


class Counting:
    """A lazy listing that records how many rows were pulled (= how much was fetched)."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows
        self.consumed = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for r in self.rows:
            self.consumed += 1
            yield r


def newest_first(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: r["lastUpdated"], reverse=True)


# ------------------------------------------------------------------ refresh_index


def test_incremental_stops_after_exactly_25_known_unchanged_rows() -> None:
    old = newest_first([row(n) for n in range(1, 61)])
    fresh = newest_first([row(n) for n in range(61, 64)])
    listing = Counting(fresh + old)
    result = refresh_index(listing, old, full=False)
    assert listing.consumed == 3 + STOP_RUN == 28
    assert result.early_stopped
    assert (result.fetched, result.new, result.updated) == (28, 3, 0)
    # head + untouched tail, no duplicates, newest first
    assert [r["entryUUID"] for r in result.rows] == [r["entryUUID"] for r in fresh + old]


def test_a_changed_row_resets_the_run() -> None:
    old = newest_first([row(n) for n in range(1, 61)])
    changed = dict(old[24], lastUpdated="2041-02-02T00:00:00Z", title="renamed")
    listing = Counting([changed, *old[:24], *old[25:]])
    result = refresh_index(listing, old, full=False)
    assert listing.consumed == 1 + STOP_RUN
    assert result.updated == 1 and result.new == 0
    assert result.rows[0]["title"] == "renamed"  # the head wins
    assert len(result.rows) == 60


def test_run_must_be_consecutive() -> None:
    old = newest_first([row(n) for n in range(1, 80)])
    listing_rows = [*old[:24], row(500), *old[24:]]
    listing = Counting(listing_rows)
    refresh_index(listing, old, full=False)
    assert listing.consumed == 24 + 1 + STOP_RUN


def test_listing_shorter_than_the_run_is_consumed_whole() -> None:
    old = [row(n) for n in range(1, 5)]
    listing = Counting([row(9), *old])
    result = refresh_index(listing, old, full=False)
    assert listing.consumed == 5
    assert not result.early_stopped
    assert len(result.rows) == 5


def test_fractional_digits_do_not_count_as_a_change() -> None:
    old = [row(1, "2041-01-01T00:00:00.180330Z")]
    result = refresh_index([row(1, "2041-01-01T00:00:00.18033Z")], old, full=False, stop_run=1)
    assert result.updated == 0 and result.early_stopped


def test_full_consumes_everything_and_equals_the_fetched_set() -> None:
    old = newest_first([row(n) for n in range(1, 40)])
    old[5]["search_mode"] = "RESEARCH"
    listing_rows = [r for r in old if r["entryUUID"] != "uuid-0007"]  # 0007 was deleted
    listing = Counting(listing_rows)
    result = refresh_index(listing, old, full=True)
    assert listing.consumed == len(listing_rows)
    assert not result.early_stopped
    assert result.removed == 1
    assert {r["entryUUID"] for r in result.rows} == {r["entryUUID"] for r in listing_rows}
    kept = next(r for r in result.rows if r["entryUUID"] == old[5]["entryUUID"])
    assert kept["search_mode"] == "RESEARCH"


def test_search_mode_enrichment_is_carried_over_incrementally() -> None:
    old = [row(1, search_mode="STUDY"), row(2)]
    newer = row(1, "2041-09-09T00:00:00Z")  # updated; listing has no search_mode
    result = refresh_index([newer, row(2)], old, full=False)
    assert result.rows[0]["search_mode"] == "STUDY"
    assert result.rows[0]["lastUpdated"] == "2041-09-09T00:00:00.000000Z"
    assert "search_mode" not in result.rows[1]


def test_repeated_rows_in_the_listing_keep_the_first() -> None:
    result = refresh_index([row(2, title="first"), row(2, title="again")], [], full=True)
    assert [r["title"] for r in result.rows] == ["first"]
    assert result.new == 1 and result.fetched == 2


# ------------------------------------------------------------------ the index file


def test_rows_are_normalised_to_the_stable_fields_in_order() -> None:
    raw = {
        "space": {"spaceUuid": "s-1", "title": "Space", "slug": "space", "extra": 1},
        "lastUpdated": "2041-01-01T00:00:00Z",
        "entryUUID": "u",
        "title": None,
        "cursor": "volatile",
        "search_mode": "",
    }
    out = normalize_row(raw)
    assert tuple(out) == ROW_KEYS
    assert out["space"] == {"uuid": "s-1", "title": "Space", "slug": "space"}
    assert out["title"] == "" and out["href"] == ""
    assert tuple(normalize_row({**raw, "search_mode": "ASI"}))[-1] == "search_mode"


def test_save_format_and_no_change_refresh_is_byte_identical(tmp_path: Path) -> None:
    rows = newest_first([row(n) for n in range(1, 40)])
    rows[3]["search_mode"] = "RESEARCH"
    assert save_index(tmp_path, "alice", rows)
    path = index_path(tmp_path, "alice")
    first = path.read_bytes()
    text = first.decode("utf-8")
    assert text.endswith("}\n") and "número" in text  # not ASCII-escaped
    assert text.startswith('{\n "account": "alice",\n "count": 39,\n "threads": [\n  {\n')
    doc = json.loads(text)
    assert doc["count"] == len(doc["threads"]) == 39

    listing = [{k: v for k, v in r.items() if k != "search_mode"} for r in rows]
    result = update_library_index(tmp_path, "alice", iter(listing), full=False, now=NOW)
    assert result.early_stopped and not result.written
    assert path.read_bytes() == first
    full = update_library_index(tmp_path, "alice", iter(listing), full=True, now=NOW)
    assert not full.written
    assert path.read_bytes() == first


def test_new_rows_rewrite_the_file(tmp_path: Path) -> None:
    save_index(tmp_path, "alice", [row(1)])
    result = update_library_index(tmp_path, "alice", iter([row(2), row(1)]), full=False, now=NOW)
    assert result.written
    stored = load_index(tmp_path, "alice").threads
    assert [r["entryUUID"] for r in stored] == ["uuid-0002", "uuid-0001"]


def test_corrupt_index_is_moved_aside_not_blanked(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = index_path(tmp_path, "alice")
    path.parent.mkdir(parents=True)
    path.write_text('{"account": "alice", "threads": [', encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="pplx_export"):
        index = load_index(tmp_path, "alice")
    assert index.threads == []
    assert not path.exists()
    aside = list(path.parent.glob("library_alice.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_text() == '{"account": "alice", "threads": ['
    assert index.corrupt_copy == aside[0]
    assert "corrupt" in caplog.text


@pytest.mark.parametrize(
    "content",
    ['["not", "an", "index"]', '{"threads": {"a": 1}}', '{"threads": [1, 2]}', "\udcff"],
)
def test_wrong_shapes_count_as_corrupt(tmp_path: Path, content: str) -> None:
    path = index_path(tmp_path, "bob")
    path.parent.mkdir(parents=True)
    path.write_bytes(content.encode("utf-8", "surrogateescape"))
    index = load_index(tmp_path, "bob", repair=False)
    assert index.threads == [] and index.corrupt_copy == path
    assert path.exists()  # read-only callers leave it in place


def test_second_corruption_in_the_same_second_keeps_both_copies(tmp_path: Path) -> None:
    path = index_path(tmp_path, "alice")
    path.parent.mkdir(parents=True)
    for content in ("bad one", "bad two"):
        path.write_text(content)
        load_index(tmp_path, "alice")
    copies = sorted(p.read_text() for p in path.parent.glob("*.corrupt-*"))
    assert copies == ["bad one", "bad two"]


def test_legacy_rows_with_extra_keys_are_read(tmp_path: Path) -> None:
    path = index_path(tmp_path, "carol")
    path.parent.mkdir(parents=True)
    legacy = {"account": "carol", "count": 1, "threads": [{**row(1), "uuid": "x", "foo": 2}]}
    path.write_text(json.dumps(legacy))
    assert load_index(tmp_path, "carol").threads == [normalize_row(row(1))]


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("alice", "alice"),
        ("Alice Example", "Alice_Example"),
        ("a/b\\c:d", "a_b_c_d"),
        ("..", "default"),
        (".hidden", "hidden"),
        ("", "default"),
        ("张三", "张三"),
    ],
)
def test_safe_account_name(name: str, safe: str) -> None:
    assert safe_account_name(name) == safe


def test_index_path_stays_inside_the_index_dir(tmp_path: Path) -> None:
    assert index_path(tmp_path, "../../etc/passwd").parent == tmp_path / "index"
    save_index(tmp_path, "x y", [])
    save_index(tmp_path, "alice", [])
    assert indexed_accounts(tmp_path) == ["alice", "x_y"]


# ------------------------------------------------------------------ [index_state.<account>]

CONFIG = """\
# my settings
default_account = "alice"  # keep me

[accounts.alice]
display_name = "Alice"
"""


def test_index_state_bookkeeping_and_reminder(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG)
    before = path.read_bytes()
    root = tmp_path / "archive"
    cfg = load_config(path)
    assert not record_index_run(root, "alice", full=True, now=NOW, config=cfg)
    state = read_index_state(root, "alice", load_config(path))
    assert state.extracted_at == state.last_full_index_at == "2041-05-06T07:08:09Z"
    assert state.incremental_runs_since_full == 0

    with caplog.at_level(logging.WARNING, logger="pplx_export"):
        dues = [record_index_run(root, "alice", full=False, now=NOW) for _ in range(10)]
    assert dues == [False] * 9 + [True]
    assert "index --full" not in caplog.text  # no nag: `sync` sweeps by itself (issue 32)
    # The counters live in the archive; the user's config file is never rewritten.
    assert path.read_bytes() == before
    doc = json.loads(load_bytes(root, "index_state") or b"")
    assert doc["alice"]["incremental_runs_since_full"] == 10
    assert doc["alice"]["last_full_index_at"] == "2041-05-06T07:08:09Z"

    later = datetime(2041, 6, 1, tzinfo=UTC)
    assert not record_index_run(root, "alice", full=True, now=later)
    state = read_index_state(root, "alice")
    assert state.incremental_runs_since_full == 0
    assert state.last_full_index_at == "2041-06-01T00:00:00Z"


def test_counters_an_earlier_version_kept_in_the_config_are_read_and_left_there(
    tmp_path: Path,
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        CONFIG + '\n[index_state.alice]\nextracted_at = "2041-01-01T00:00:00Z"\n'
        "incremental_runs_since_full = 4\n"
    )
    before = path.read_bytes()
    cfg = load_config(path)
    root = tmp_path / "archive"
    assert read_index_state(root, "alice", cfg).incremental_runs_since_full == 4
    record_index_run(root, "alice", full=False, now=NOW, config=cfg)
    assert read_index_state(root, "alice", cfg).incremental_runs_since_full == 5
    assert path.read_bytes() == before


def test_degraded_mode_never_creates_a_config_file(tmp_path: Path) -> None:
    cfg = load_config()  # default path, missing
    assert cfg.degraded
    update_library_index(tmp_path, "default", iter([row(1)]), full=True, now=NOW, config=cfg)
    assert not cfg.path.exists()
    assert read_index_state(tmp_path, "default", cfg).extracted_at == "2041-05-06T07:08:09Z"


def test_failed_listing_does_not_count_as_a_run(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG)
    cfg = load_config(path)

    def broken() -> Iterator[dict[str, Any]]:
        yield row(1)
        raise ConnectionError("page 2 failed")

    with pytest.raises(ConnectionError):
        update_library_index(tmp_path, "alice", broken(), full=False, now=NOW, config=cfg)
    assert "index_state" not in path.read_text()
    assert load_bytes(tmp_path, "index_state") is None
    assert not index_path(tmp_path, "alice").exists()


def test_rows_without_uuid_do_not_pile_up_across_runs() -> None:
    blank = row(3, entryUUID="")
    index: list[dict[str, Any]] = [row(1)]
    for _ in range(3):
        index = refresh_index([row(2), blank, blank], index, full=False).rows
    # Each walk reached the end of the listing: uuid-0001, no longer listed, is dropped.
    assert [r["entryUUID"] for r in index] == ["uuid-0002", ""]


def test_an_incremental_walk_that_reaches_the_end_drops_rows_it_no_longer_saw() -> None:
    old = newest_first([row(n) for n in range(1, 6)])
    listing = [r for r in old if r["entryUUID"] != "uuid-0003"]
    result = refresh_index(iter(listing), old, full=False)
    assert result.complete and not result.early_stopped and result.removed == 1
    assert "uuid-0003" not in {r["entryUUID"] for r in result.rows}
    assert "1 gone" in result.line()


def test_an_early_stopped_walk_keeps_the_tail_and_an_empty_listing_keeps_all() -> None:
    old = newest_first([row(n) for n in range(1, 6)])
    result = refresh_index(iter(old[:2]), old, full=False, stop_run=2)
    assert result.early_stopped and not result.complete and len(result.rows) == 5
    empty = refresh_index(iter([]), old, full=False)
    assert not empty.complete and len(empty.rows) == 5


def test_sync_sweeps_the_whole_listing_when_the_last_full_sweep_is_old(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG)
    cfg = load_config(path)
    root = tmp_path / "archive"
    assert not full_sweep_due(root, cfg, "alice", NOW)  # never indexed: the first walk is whole
    record_index_run(root, "alice", full=True, now=NOW)
    assert not full_sweep_due(root, cfg, "alice", NOW + timedelta(days=6))
    assert full_sweep_due(root, cfg, "alice", NOW + timedelta(days=8))
    cfg.full_index_days = 0  # never
    assert not full_sweep_due(root, cfg, "alice", NOW + timedelta(days=80))
