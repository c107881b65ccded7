"""End to end: a thread that counts as done is searchable (issue 33, "indexed or not done")."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pplx_export.emulator import DEFAULT_EMAIL, run_emulator
from pplx_export.search.index import IndexStats
from pplx_export.search.schema import db_path
from pplx_export.store.docs import load_bytes
from tests.e2e_support import E2E, FIXTURES, by_endpoint, fixture_threads


@pytest.fixture
def env(tmp_path: Path) -> Iterator[E2E]:
    with run_emulator(FIXTURES, page_size=100) as emu:
        e2e = E2E(emu, tmp_path)
        e2e.write_files(DEFAULT_EMAIL)
        assert e2e.cli("sync").exit_code == 0
        yield e2e


def _indexed(root: Path) -> set[str]:
    conn = sqlite3.connect(db_path(root))
    try:
        return {row[0] for row in conn.execute("SELECT dir FROM threads")}
    finally:
        conn.close()


def _done(env: E2E) -> set[str]:
    return {r["dir"] for r in env.state().values() if r["status"] == "ok"}


def test_a_failed_index_update_is_repaired_before_the_run_ends(
    env: E2E, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(root: Path, rel: str, rows: Any) -> IndexStats:
        return IndexStats(error="database or disk is full")

    monkeypatch.setattr("pplx_export.commands.export.thread.index_written", failing)
    for uuid in sorted(fixture_threads())[:3]:
        env.emu.mutate(touch=uuid)  # a later date: each thread moves to a new directory
    result = env.cli("sync")
    assert result.exit_code == 0, result.output
    assert _done(env) <= _indexed(env.out)


def test_a_later_run_indexes_every_done_thread_the_index_lacks(env: E2E) -> None:
    lost = sorted(_done(env))[:4]
    conn = sqlite3.connect(db_path(env.out))
    with conn:  # what a kill between a thread's export and its indexing left, before
        for rel in lost:
            conn.execute("DELETE FROM threads WHERE dir = ?", (rel,))
    conn.close()
    assert not set(lost) & _indexed(env.out)
    env.emu.reset_stats()
    result = env.cli("sync")
    assert result.exit_code == 0, result.output
    assert by_endpoint(env.stats(), "GET /rest/thread") == 0  # no fetch, no full rebuild
    assert _done(env) <= _indexed(env.out)
    verify = env.offline("verify", "--json")
    assert json.loads(verify.stdout)["counts"]["index"] == 0


def test_a_full_disk_while_building_the_index_prints_the_disk_full_line(
    env: E2E, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*_: Any, **__: Any) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr("pplx_export.search.index.create_schema", full)
    result = env.offline("search", "--rebuild")
    assert result.exit_code == 1
    assert "internal error" not in result.stderr
    assert "disk full while writing the search index" in result.stderr
    # An index update during an export says the same, as a warning, and the run goes on.
    monkeypatch.setattr("pplx_export.search.index.open_for_update", full)
    env.emu.mutate(touch=sorted(fixture_threads())[0])
    synced = env.cli("sync")
    assert synced.exit_code == 0, synced.output
    assert "search index not updated: disk full while writing" in synced.stderr


def test_an_index_run_never_rewrites_the_users_config(env: E2E) -> None:
    before = env.config.read_bytes()
    result = env.cli("index")
    assert result.exit_code == 0, result.output
    assert env.config.read_bytes() == before
    counters = json.loads(load_bytes(env.out, "index_state") or b"")
    assert counters[env.account]["extracted_at"]


def test_stored_raw_files_keep_signed_urls_without_their_signature(tmp_path: Path) -> None:
    with run_emulator(FIXTURES, page_size=100) as emu:
        emu.mutate(url_ttl=600)  # every asset URL handed out is signed
        e2e = E2E(emu, tmp_path)
        e2e.write_files(DEFAULT_EMAIL)
        result = e2e.cli("sync")
        assert result.exit_code == 0, result.output
    raws = [p for p in e2e.out.glob("*/*/*/raw_*.json")]
    text = "\n".join(p.read_text("utf-8") for p in raws)
    assert "Signature=emulator-ttl" not in text
    assert "Signature=REDACTED" in text and "/__emulator/files/" in text  # the URL stays
    # The downloads happened before the signature was dropped.
    assert list(e2e.out.glob("*/*/*/assets/files/*"))


def test_a_thread_whose_index_update_failed_is_reindexed_even_with_old_rows(env: E2E) -> None:
    from pplx_export.search.pending import note_pending, pending_rels

    rel = sorted(_done(env))[0]
    conn = sqlite3.connect(db_path(env.out))
    with conn:  # rows of an earlier version of the thread, as a failed update leaves them
        conn.execute(
            "UPDATE turns SET answer = 'stale' WHERE thread_id ="
            " (SELECT id FROM threads WHERE dir = ?)",
            (rel,),
        )
        conn.execute("UPDATE threads SET signature = 'of-the-earlier-files' WHERE dir = ?", (rel,))
    conn.close()
    note_pending(env.out, rel)
    assert env.cli("sync").exit_code == 0
    conn = sqlite3.connect(db_path(env.out))
    answers = [
        r[0]
        for r in conn.execute(
            "SELECT answer FROM turns WHERE thread_id = (SELECT id FROM threads WHERE dir = ?)",
            (rel,),
        )
    ]
    conn.close()
    assert answers and "stale" not in answers
    assert not pending_rels(env.out)
