"""Small named documents in `index/state.sqlite` (table `docs`): what used to be one JSON file
each under `index/` (raw checks, space caches, credit usage, run bookkeeping, ...).

A document is stored as the bytes its module wrote to its file before, under a key named
after that file (`official_import`, `credit_usage/<account>`), so each module keeps its own
format, its own lenient reading and its own "trust (size, mtime_ns)" rule; only where the
bytes live changed. A write that would store the same bytes writes nothing (as
`write_if_changed` did), so an unchanged run commits nothing.

Errors surface as `StoreError`, an OSError: the callers already tell a best-effort cache
(catch OSError, warn, go on) from durable state (let it fail the run), and keep doing so.
A commit is durable when it returns (WAL, synchronous=FULL; see store/db.py).

Reads never write (`status`, `search` and `verify` are read-only, and must work on a backup
or a snapshot): they open the store read-only, or, before the first writing run migrated
the archive, build it in memory from the old files. Writes create and migrate it.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from pplx_export.store.db import INDEX_DIR, db_path, open_state


class StoreError(OSError):
    """The state store could not be read or written (the sqlite3 error is the cause)."""


@contextlib.contextmanager
def connect(root: Path, *, write: bool) -> Iterator[sqlite3.Connection | None]:
    """A connection to the archive's state store, closed on exit; a read-only one unless
    `write`. A read yields None when the archive has no `index/` (nothing was ever stored).
    """
    root = Path(root)
    try:
        if not write and not (root / INDEX_DIR).is_dir():
            yield None
            return
        db = open_state(root, readonly=not write)
    except sqlite3.Error as exc:
        raise StoreError(f"{db_path(root)}: {exc}") from exc
    try:
        yield db
    except sqlite3.Error as exc:
        raise StoreError(f"{db_path(root)}: {exc}") from exc
    finally:
        db.close()


def load_bytes(root: Path, key: str) -> bytes | None:
    """The document's bytes; None when there is none. Raises StoreError."""
    with connect(root, write=False) as db:
        if db is None:
            return None
        row = db.execute("SELECT value FROM docs WHERE key = ?", (key,)).fetchone()
    return None if row is None else bytes(row[0])


def journal_bytes(root: Path, table: str, column: str) -> list[bytes]:
    """A journal table's `column`, oldest first (by `seq`); [] when nothing was ever stored.
    `table` and `column` are the module's own names, never input. Raises StoreError."""
    with connect(root, write=False) as db:
        if db is None:
            return []
        rows = db.execute(f"SELECT {column} FROM {table} ORDER BY seq").fetchall()
    return [bytes(r[0]) for r in rows]


def save_bytes(root: Path, key: str, data: bytes | str) -> bool:
    """Store the document in one committed transaction; False when it held these bytes
    already (nothing written). Raises StoreError."""
    value = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    with connect(root, write=True) as db:
        assert db is not None
        cur = db.execute(
            "INSERT INTO docs (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE "
            "SET value = excluded.value WHERE docs.value IS NOT excluded.value",
            (key, value),
        )
        return cur.rowcount > 0


def delete_doc(root: Path, key: str) -> None:
    """Forget the document (absent already: nothing happens). Raises StoreError."""
    if not (Path(root) / INDEX_DIR).is_dir():
        return
    with connect(root, write=True) as db:
        assert db is not None
        db.execute("DELETE FROM docs WHERE key = ?", (key,))


def doc_keys(root: Path, prefix: str) -> list[str]:
    """The keys that start with `prefix`, sorted. Raises StoreError."""
    with connect(root, write=False) as db:
        if db is None:
            return []
        rows = db.execute(
            "SELECT key FROM docs WHERE substr(key, 1, ?) = ? ORDER BY key",
            (len(prefix), prefix),
        ).fetchall()
    return [str(r[0]) for r in rows]
