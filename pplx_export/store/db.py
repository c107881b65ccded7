"""`index/state.sqlite`: the one state store of an archive (stdlib sqlite3, WAL).

Everything the tool remembers between runs that is not a file a user reads lives here: batch
state, render fingerprints, raw checks, relation facts, space pages, credit usage, import and
run bookkeeping. The search database (`index/search.sqlite`) stays separate: it is derived
and can be rebuilt, and a damaged one must never take the state with it.

Schema changes are named functions in `MIGRATIONS`, applied in order under
`PRAGMA user_version` (the number of migrations applied). A migration creates its tables and
imports whatever the earlier file-based state held for them, then renames each old file to
`<name>.migrated` so a downgrade can still find it and nothing is read twice. Migrations run
in one transaction each: a kill mid-migration leaves the previous version, and the old files
are renamed only after the commit (a rename that did not happen is redone next time: the
import is idempotent because the tables are filled from scratch in the same transaction).

Durability: WAL with `synchronous=FULL`, so a commit is on disk when it returns; a thread is
marked done by a commit after its files are durable, as before.

A read-only archive (a backup, a snapshot) is opened with `mode=ro`, or `immutable=1` when
the directory cannot hold the WAL's shared-memory file; an archive of an earlier version that
cannot be migrated in place is migrated into memory so read-only commands still work.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

log = logging.getLogger(__name__)

INDEX_DIR = "index"
STATE_DB = "state.sqlite"
MIGRATED_SUFFIX = ".migrated"

# (name, function(db, root)): append only; never reorder or edit a released migration.
MigrationFn = Callable[[sqlite3.Connection, Path], None]
Migration = tuple[str, MigrationFn]
MIGRATIONS: list[Migration] = []


def migration(name: str) -> Callable[[MigrationFn], MigrationFn]:
    """Register a migration (decorator); store/migrations.py holds them all, in order."""

    def register(fn: MigrationFn) -> MigrationFn:
        MIGRATIONS.append((name, fn))
        return fn

    return register


def db_path(root: Path) -> Path:
    return Path(root) / INDEX_DIR / STATE_DB


_retire_queue: list[Path] = []
_retire_enabled = [True]


def retire(path: Path) -> None:
    """From a migration: rename `path` to `<name>.migrated` once the migration commits.

    The old file is kept for a downgrade and never read again. A read-only open migrates in
    memory and renames nothing.
    """
    if _retire_enabled[-1]:
        _retire_queue.append(path)


def _flush_retired() -> None:
    while _retire_queue:
        path = _retire_queue.pop(0)
        if path.exists():
            os.replace(path, path.with_name(path.name + MIGRATED_SUFFIX))


@contextlib.contextmanager
def _no_retire() -> Iterator[None]:
    _retire_enabled.append(False)
    try:
        yield
    finally:
        _retire_enabled.pop()


def _uri(path: Path, **params: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"file:{quote(str(path.resolve()))}?{query}"


def _configure(db: sqlite3.Connection, *, writable: bool) -> None:
    db.execute("PRAGMA busy_timeout = 30000")
    if writable:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = FULL")
    db.execute("PRAGMA foreign_keys = ON")


def _pending(db: sqlite3.Connection) -> list[Migration]:
    from pplx_export.store import migrations  # noqa: F401  (registers every migration)

    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > len(MIGRATIONS):
        raise sqlite3.DatabaseError(
            f"{STATE_DB} was written by a newer pplx-export (schema {version}, this one knows "
            f"{len(MIGRATIONS)}): upgrade pplx-export"
        )
    return MIGRATIONS[version:]


def migrate(db: sqlite3.Connection, root: Path) -> list[str]:
    """Apply pending migrations, one transaction each; return their names."""
    applied: list[str] = []
    while True:
        _retire_queue.clear()
        # The version is read under the write lock: two processes opening an old archive at
        # once must not both run the same migration.
        db.execute("BEGIN IMMEDIATE")
        try:
            pending = _pending(db)
            if not pending:
                db.execute("COMMIT")
                return applied
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            name, fn = pending[0]
            fn(db, root)
            db.execute(f"PRAGMA user_version = {version + 1}")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            _retire_queue.clear()
            raise
        _flush_retired()
        log.debug("state store: migration %d %s applied", version + 1, name)
        applied.append(name)


def open_state(root: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open (creating and migrating as needed) the state store of the archive at `root`.

    `readonly` never writes: an existing, current store is opened `mode=ro`; a missing or
    out-of-date one is built in memory from the files on disk (nothing renamed).
    """
    path = db_path(root)
    if readonly:
        return _open_readonly(path, Path(root))
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        _configure(db, writable=True)
        migrate(db, Path(root))
    except BaseException:
        db.close()
        raise
    return db


def _open_readonly(path: Path, root: Path) -> sqlite3.Connection:
    behind: sqlite3.Connection | None = None
    # Where the store may be written, a read-write connection that only reads: unlike a
    # `mode=ro` one, the last to close removes the WAL and shared-memory files, so a
    # read-only command leaves `index/` as it found it.
    modes: list[dict[str, str]] = [{"mode": "ro"}, {"mode": "ro", "immutable": "1"}]
    if os.access(path, os.W_OK) and os.access(path.parent, os.W_OK):
        modes.insert(0, {"mode": "rw"})
    if path.exists():
        for params in modes:
            try:
                db = sqlite3.connect(
                    _uri(path, **params), uri=True, isolation_level=None, check_same_thread=False
                )
                _configure(db, writable=False)
                if not _pending(db):
                    return db
                behind = db
                break
            except sqlite3.OperationalError:
                continue
    # No store, or one behind this version, in a place we may not write: build it in memory
    # (from a copy of the store behind, whose earlier migrations retired their files, then
    # from the files on disk), without renaming anything.
    db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    if behind is not None:
        behind.backup(db)
        behind.close()
    _configure(db, writable=False)
    with _no_retire():
        migrate(db, root)
    return db


@contextlib.contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction (BEGIN IMMEDIATE ... COMMIT, rolled back on any error)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
