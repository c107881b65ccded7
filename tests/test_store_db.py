"""The state store's core: migrations once and in order, a newer schema refused, read-only opens."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from pplx_export.store import db as store_db


def _version(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])


def test_a_new_store_applies_every_migration_once(tmp_path: Path) -> None:
    conn = store_db.open_state(tmp_path)
    conn.close()
    assert _version(store_db.db_path(tmp_path)) == len(store_db.MIGRATIONS)
    # Opening again applies nothing.
    conn = store_db.open_state(tmp_path)
    assert store_db.migrate(conn, tmp_path) == []
    conn.close()


def test_two_processes_opening_an_old_archive_do_not_both_migrate(tmp_path: Path) -> None:
    calls: list[str] = []
    name, fn = store_db.MIGRATIONS[-1]

    def counted(conn: sqlite3.Connection, root: Path) -> None:
        calls.append(name)
        fn(conn, root)

    errors: list[BaseException] = []

    def open_once() -> None:
        try:
            store_db.open_state(tmp_path).close()
        except BaseException as exc:
            errors.append(exc)

    store_db.open_state(tmp_path).close()  # registers the migrations
    store_db.MIGRATIONS[-1] = (name, counted)
    try:
        with sqlite3.connect(store_db.db_path(tmp_path)) as conn:
            conn.execute(f"PRAGMA user_version = {len(store_db.MIGRATIONS) - 1}")
        threads = [threading.Thread(target=open_once) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        store_db.MIGRATIONS[-1] = (name, fn)
    assert errors == []
    assert calls == [name]


def test_a_store_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    store_db.open_state(tmp_path).close()
    with sqlite3.connect(store_db.db_path(tmp_path)) as conn:
        conn.execute(f"PRAGMA user_version = {len(store_db.MIGRATIONS) + 1}")
    with pytest.raises(sqlite3.DatabaseError, match="newer pplx-export"):
        store_db.open_state(tmp_path)


def test_a_read_only_open_of_a_missing_store_creates_nothing(tmp_path: Path) -> None:
    conn = store_db.open_state(tmp_path, readonly=True)
    conn.close()
    assert not store_db.db_path(tmp_path).exists()
