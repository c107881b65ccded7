"""The batch state: what happened to every thread (protocol.md App. A), in the `threads`
table of `index/state.sqlite` (store/db.py).

A record is `{status, lastUpdated, title[:80], ...}` plus, by status:

    ok       exported_at, dir? (thread directory relative to the archive root), note? (kept
             but flagged: e.g. its schematized listing ended early)
    error    failed_at, error[:300]
    expired  expired_at, note
    deleted  deleted_at, note

stored as JSON by web uuid, with its status beside it. The release before the store kept them
in `index/batch_state.json` (+ its journal), and the earlier tool as a flat `{uuid: record}`
dict: the store's migration imports either (store/batch_import.py).

Every change is one committed transaction (WAL, synchronous=FULL): durable when `mark_*`
returns, and a thread is marked ok only by the caller after all its files are on disk. The
records are read whole by `load` (callers walk them) and each change writes one row, so a
thread costs O(1) bytes whatever the size of the library.

Losing the state must never mean losing track of exported threads (a blank state would
silently re-export the whole library): a missing state (an archive copied without it, a new
store) or a corrupt one (an unreadable batch_state.json at the migration, a damaged
state.sqlite, set aside by store/recover.py) is rebuilt from the `thread.json` files on disk,
with a warning. The directories are read by `archive/scan.py`; `store/state_check.py` says
where state and disk disagree.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pplx_export.archive.paths import INDEX_DIR
from pplx_export.archive.scan import newest, scan_thread_dirs
from pplx_export.store.batch_import import IMPORT_KEY, STATE_FILE, STATUSES
from pplx_export.store.db import db_path, transaction
from pplx_export.store.recover import disk_errors, memory_state, open_checked
from pplx_export.util.lenient import as_str
from pplx_export.util.timefmt import canonical_time, format_utc

log = logging.getLogger(__name__)

TITLE_MAX = 80
ERROR_MAX = 300

Record = dict[str, Any]
# (records, the migration's note or None)
_Read = tuple[dict[str, Record], dict[str, Any] | None]

__all__ = ["ERROR_MAX", "STATUSES", "TITLE_MAX", "BatchState", "rebuild_from_disk"]


def state_path(root: Path) -> Path:
    """Where the batch state lives: the state store."""
    return db_path(root)


def legacy_path(root: Path) -> Path:
    """The file the release before the store kept it in (imported, then `.migrated`)."""
    return Path(root) / INDEX_DIR / STATE_FILE


def _now(now: datetime | None) -> str:
    return format_utc(now if now is not None else datetime.now(UTC))


# ------------------------------------------------------------------ rebuilt from disk


def rebuild_from_disk(root: Path, *, now: datetime | None = None) -> dict[str, Record]:
    """State records (status ok) for every exported thread found on disk."""
    found, unreadable = scan_thread_dirs(root)
    for path in unreadable:
        log.warning("unreadable thread.json left out of the rebuilt state: %s", path)
    stamp = _now(now)
    records: dict[str, Record] = {}
    for uuid, threads in found.items():
        thread = newest(threads)
        records[uuid] = {
            "status": "ok",
            "lastUpdated": canonical_time(thread.last_updated),
            "title": thread.title[:TITLE_MAX],
            "exported_at": thread.exported_at or stamp,
            "dir": thread.dir.relative_to(root).as_posix(),
        }
    return records


# ------------------------------------------------------------------ the table


def _read(db: sqlite3.Connection) -> _Read:
    threads: dict[str, Record] = {}
    for uuid, text in db.execute("SELECT uuid, record FROM threads"):
        record = json.loads(text)
        if isinstance(record, dict):
            threads[uuid] = record
    row = db.execute("SELECT value FROM meta WHERE key = ?", (IMPORT_KEY,)).fetchone()
    note = json.loads(row[0]) if row else None
    return threads, note if isinstance(note, dict) else None


def _row(uuid: str, record: Record) -> tuple[str, str, str]:
    return uuid, as_str(record.get("status")), json.dumps(record, ensure_ascii=False)


_UPSERT = "INSERT OR REPLACE INTO threads (uuid, status, record) VALUES (?, ?, ?)"


@dataclass
class BatchState:
    path: Path  # the store (or, read-only before the migration, the file it will import)
    root: Path = Path()
    threads: dict[str, Record] = field(default_factory=dict)
    legacy: bool = False  # imported from the earlier tool's unversioned format
    corrupt_copy: Path | None = None  # where a corrupt state was moved (or found)
    rebuilt: bool = False
    _db: sqlite3.Connection | None = field(default=None, repr=False)
    _writable: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        if self.root == Path():
            self.root = self.path.parent.parent  # <root>/index/<file>

    @classmethod
    def load(cls, root: Path, *, repair: bool = True, now: datetime | None = None) -> BatchState:
        """Read the state of the archive at `root` (migrating the files of the release
        before the store on the first writing run).

        Missing -> rebuilt from the thread.json files on disk (empty for a new archive): a
        deleted or lost state must not cost a re-download of every archived thread.

        Corrupt (batch_state.json at its migration, or a damaged state.sqlite) -> set aside,
        rebuilt from the thread.json files on disk (plus any record of the old file that
        still parses, for threads not on disk: errors and tombstones), saved, and a warning
        logged. With `repair=False` the same happens in memory only and nothing on disk
        changes (read-only commands).

        A new archive gets its store with its first change, not here (a dry run, `status`
        on an empty folder, create nothing).
        """
        root = Path(root)
        store = db_path(root)
        old = legacy_path(root)
        state = cls(path=store, root=root)
        if not store.exists() and old.exists():
            state.path = old
        aside: Path | None = None
        if repair and (store.exists() or old.exists() or old.with_suffix(".journal").exists()):
            db, (threads, note), aside = open_checked(root, _read)
            state._writable = True
        elif repair:
            db = memory_state(root)  # nothing stored yet: written by the first change
            threads, note = _read(db)
        else:
            db, (threads, note), aside = open_checked(root, _read, readonly=True)
        state._db, state.threads = db, threads
        if aside is not None:
            state.corrupt_copy, state.rebuilt = aside, True
            note = {"rebuild": "missing"}  # the damaged store's records are gone: disk
        if note is not None:
            state._settle(note, now)
        if repair and not state._writable and state.threads:
            state._store()  # rebuilt from disk: on disk now
        return state

    def _settle(self, note: dict[str, Any], now: datetime | None) -> None:
        """Finish what the migration left to this layer: the records rebuilt from disk."""
        self.legacy = bool(note.get("legacy"))
        why = as_str(note.get("rebuild"))
        added: dict[str, Record] = {}
        if why or self.corrupt_copy is not None:
            # Records the migration imported (a journal's) are newer than the disk; the disk
            # wins over what was salvaged from a corrupt file.
            added = {
                uuid: record
                for uuid, record in rebuild_from_disk(self.root, now=now).items()
                if uuid not in self.threads
            }
            salvage = note.get("salvage")
            if isinstance(salvage, dict):
                for uuid, record in salvage.items():
                    if uuid not in self.threads and isinstance(record, dict):
                        added.setdefault(uuid, record)
            self.threads.update(added)
        if why == "corrupt" and self.corrupt_copy is None:
            self.rebuilt = True
            index = self.root / INDEX_DIR
            if self._writable:
                self.corrupt_copy = index / as_str(note.get("file"))
                moved = f"moved to {self.corrupt_copy.name} and rebuilt"
            else:
                self.corrupt_copy = legacy_path(self.root)
                moved = "using a state rebuilt"
            log.warning(
                "batch state %s is corrupt; %s from disk (%d threads)",
                legacy_path(self.root),
                moved,
                len(self.threads),
            )
        elif self.corrupt_copy is not None:
            log.warning(
                "batch state %s: rebuilt from disk (%d threads)", self.path, len(self.threads)
            )
        elif why and self.threads:
            self.rebuilt = True
            log.warning(
                "batch state %s is missing; rebuilt from disk (%d threads)",
                self.path,
                len(self.threads),
            )
        if self._writable and self._db is not None:
            with transaction(self._db) as db:
                db.executemany(_UPSERT, [_row(u, r) for u, r in added.items()])
                db.execute("DELETE FROM meta WHERE key = ?", (IMPORT_KEY,))

    def _store(self) -> sqlite3.Connection:
        """The store, writable (opened, and created and migrated, on the first change of a
        read-only or brand-new state: what this one holds goes in with it)."""
        if self._writable and self._db is not None:
            return self._db
        if self._db is not None:
            self._db.close()
        db, (stored, _note), _aside = open_checked(self.root, _read)
        with transaction(db):
            db.executemany(
                _UPSERT, [_row(u, r) for u, r in self.threads.items() if u not in stored]
            )
            db.execute("DELETE FROM meta WHERE key = ?", (IMPORT_KEY,))
        self._db, self._writable, self.path = db, True, db_path(self.root)
        return db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db, self._writable = None, False

    # -- reading

    def get(self, uuid: str) -> Record | None:
        return self.threads.get(uuid)

    def status(self, uuid: str) -> str:
        record = self.threads.get(uuid)
        return as_str(record.get("status")) if record else ""

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(STATUSES, 0)
        for record in self.threads.values():
            status = as_str(record.get("status")) or "unknown"
            out[status] = out.get(status, 0) + 1
        return out

    # -- writing: every change is durable at once

    def save(self) -> bool:
        """Make the store hold exactly `threads` (one transaction): for a caller that edited
        `threads` itself. The `mark_*` methods commit as they go and need no save. True when
        something was written."""
        db = self._store()
        rows = [_row(uuid, record) for uuid, record in self.threads.items()]
        with disk_errors(self.path), transaction(db):
            stored = dict(db.execute("SELECT uuid, record FROM threads").fetchall())
            changed = [row for row in rows if stored.get(row[0]) != row[2]]
            gone = [(uuid,) for uuid in stored.keys() - self.threads.keys()]
            db.executemany(_UPSERT, changed)
            db.executemany("DELETE FROM threads WHERE uuid = ?", gone)
        return bool(changed or gone)

    def compact(self) -> bool:
        """As `save`: the store has no journal to fold in."""
        return False

    def _record(self, uuid: str, record: Record) -> None:
        """One change, durable before this returns: one committed transaction (WAL,
        synchronous=FULL) that replaces the thread's row."""
        with disk_errors(self.path):
            self._store().execute(_UPSERT, _row(uuid, record))

    def _set(self, uuid: str, record: Record, keep_dir: bool = True) -> None:
        if record.get("lastUpdated"):
            record["lastUpdated"] = canonical_time(record["lastUpdated"])
        old = self.threads.get(uuid) or {}
        if keep_dir and "dir" not in record and old.get("dir"):
            record["dir"] = old["dir"]
        self.threads[uuid] = record
        self._record(uuid, record)

    def mark_ok(
        self,
        uuid: str,
        *,
        last_updated: str,
        title: str,
        dir: str | None = None,
        now: datetime | None = None,
        note: str = "",
        losses: int = 0,
        versions: int = 0,
    ) -> None:
        record: Record = {
            "status": "ok",
            "lastUpdated": last_updated,
            "title": title[:TITLE_MAX],
            "exported_at": _now(now),
        }
        if dir:
            record["dir"] = dir
        if note:  # kept but flagged, e.g. a schematized listing that ended early
            record["note"] = note[:ERROR_MAX]
        if losses:  # turns that lost content to a shape this version does not read (§9.1)
            record["losses"] = losses
        if versions:  # earlier versions kept in the thread's history/ (archive/history.py)
            record["versions"] = versions
        self._set(uuid, record)

    def set_losses(self, uuid: str, losses: int) -> bool:
        """Record a re-render's count of content not read (0 clears it); False when the
        thread has no record or the count is unchanged."""
        old = self.threads.get(uuid)
        if old is None or int(old.get("losses") or 0) == losses:
            return False
        record = {k: v for k, v in old.items() if k != "losses"}
        if losses:
            record["losses"] = losses
        self._set(uuid, record)
        return True

    def mark_error(
        self,
        uuid: str,
        *,
        error: str,
        last_updated: str = "",
        title: str = "",
        now: datetime | None = None,
    ) -> None:
        self._set(
            uuid,
            {
                "status": "error",
                "lastUpdated": last_updated,
                "title": title[:TITLE_MAX],
                "failed_at": _now(now),
                "error": error[:ERROR_MAX],
            },
        )

    def mark_gone(
        self,
        status: Literal["expired", "deleted"],
        uuid: str,
        *,
        note: str | None = None,
        last_updated: str = "",
        title: str = "",
        now: datetime | None = None,
    ) -> None:
        """`expired` / `deleted`: terminal states, stamped `<status>_at` with a note (by
        default `ENTRY_EXPIRED` / `ENTRY_DELETED`)."""
        self._set(
            uuid,
            {
                "status": status,
                "lastUpdated": last_updated,
                "title": title[:TITLE_MAX],
                f"{status}_at": _now(now),
                "note": f"ENTRY_{status.upper()}" if note is None else note,
            },
        )
