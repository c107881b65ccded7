"""A damaged `index/state.sqlite`: set aside and started again, never a lost archive.

SQLite reports damage as SQLITE_CORRUPT or SQLITE_NOTADB, at the open or at the first read
of a damaged page. A writing command then moves the file (with its -wal) to
`state.sqlite.corrupt-<epoch>`, kept for a person, and opens a new store: its migrations find
the old files retired, and each table's owner rebuilds what it can from the files on disk
(`store/batch_state.py` the exported threads from their thread.json files; the render state is a
cache). A read-only command leaves the file alone and works from a store built in memory.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from pplx_export.store import db as store

log = logging.getLogger(__name__)

SQLITE_CORRUPT = 11
SQLITE_NOTADB = 26

T = TypeVar("T")


def is_corrupt(exc: BaseException) -> bool:
    """Damage, as opposed to a busy or read-only database, or one of a newer schema."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in (SQLITE_CORRUPT, SQLITE_NOTADB)


def open_checked(
    root: Path, read: Callable[[sqlite3.Connection], T], *, readonly: bool = False
) -> tuple[sqlite3.Connection, T, Path | None]:
    """`open_state` and a first `read` of it; (store, what `read` returned, where a damaged
    store went: None when it was sound, its own path for a read-only open)."""
    try:
        return (*_open_and_read(root, read, readonly=readonly), None)
    except sqlite3.DatabaseError as exc:
        if not is_corrupt(exc):
            raise
        reason = str(exc)
    path = store.db_path(root)
    if readonly:
        log.warning("%s is damaged (%s); using a state rebuilt from disk", path, reason)
        db = memory_state(root)
        return db, read(db), path
    aside = set_aside(path)
    log.warning("%s is damaged (%s); moved to %s and started again", path, reason, aside.name)
    return (*_open_and_read(root, read, readonly=False), aside)


def _open_and_read(
    root: Path, read: Callable[[sqlite3.Connection], T], *, readonly: bool
) -> tuple[sqlite3.Connection, T]:
    db = store.open_state(root, readonly=readonly)
    try:
        return db, read(db)
    except BaseException:
        db.close()
        raise


def memory_state(root: Path) -> sqlite3.Connection:
    """A store in memory, migrated from whatever old files are on disk (nothing renamed)."""
    db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    with store._no_retire():
        store.migrate(db, Path(root))
    return db


def set_aside(path: Path) -> Path:
    """Move a damaged store and its -wal to `<name>.corrupt-<epoch>[-wal]` (never over an
    earlier one); its -shm is only an index of the -wal and goes."""
    stamp = int(time.time())
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
        n += 1
    os.replace(path, target)
    wal = path.with_name(path.name + "-wal")
    if wal.exists():
        os.replace(wal, target.with_name(target.name + "-wal"))
    path.with_name(path.name + "-shm").unlink(missing_ok=True)
    return target


SQLITE_FULL = 13


@contextlib.contextmanager
def disk_errors(path: Path) -> Iterator[None]:
    """A full disk as the OSError (ENOSPC) the callers already turn into one clear line."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        code = getattr(exc, "sqlite_errorcode", None)
        if isinstance(code, int) and code & 0xFF == SQLITE_FULL:
            raise OSError(errno.ENOSPC, f"{path}: {exc}") from exc
        raise
