"""Migration: `index/batch_state.json` (+ `batch_state.journal`) into the `threads` table.

The file held `{"version": 1, "threads": {uuid: record}}`, or the earlier tool's flat
`{uuid: record}`; its journal the changes since. Both are imported as the release read them
(journal replayed, `lastUpdated` brought to the canonical clock) and retired.

What needs the thread directories on disk is left to `store/batch_state.py`, the layer that reads
them: a missing file (a new archive, or an archive copied without its state) or a corrupt one
leaves a note in `meta` under `IMPORT_KEY`, and the first load rebuilds the records of the
exported threads from their `thread.json` files (a corrupt file's records that still parse are
kept for threads not on disk: errors and tombstones). A blank state would silently re-export
the whole library.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

from pplx_export.errors import ArchiveError
from pplx_export.store import legacy_journal
from pplx_export.store.db import INDEX_DIR, retire
from pplx_export.util.timefmt import canonical_time

log = logging.getLogger(__name__)

STATE_FILE = "batch_state.json"
VERSION = 1
STATUSES = ("ok", "error", "expired", "deleted")
# A JSON note in `meta` for the first load: {"legacy": bool, "rebuild": ""|"missing"|"corrupt",
# "file": name the old file was retired to, "salvage": {uuid: record}}.
IMPORT_KEY = "threads.import"

SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    uuid TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    record TEXT NOT NULL
)
"""

Record = dict[str, Any]


def import_batch_state(db: sqlite3.Connection, root: Path) -> None:
    db.execute(SCHEMA)
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    path = Path(root) / INDEX_DIR / STATE_FILE
    jpath = legacy_journal.journal_path(path)
    raw = legacy_journal.read(path)
    journal = legacy_journal.read(jpath)
    if raw is None and journal is None and db.execute("SELECT 1 FROM threads").fetchone():
        # Nothing to import, and records already here: a second run of this migration (two
        # processes that both found it pending) must not blank what the first imported.
        return
    db.execute("DELETE FROM threads")  # filled from scratch: a redone migration is idempotent
    note: dict[str, Any] = {"legacy": False, "rebuild": "", "file": "", "salvage": {}}
    threads: dict[str, Record] = {}
    parsed = _parse(raw) if raw is not None else None
    replay = legacy_journal.Replay()
    if journal is not None:
        replay = legacy_journal.parse(journal, legacy_journal.digest(raw or b""), jpath)
    if parsed is not None:
        threads, note["legacy"] = parsed
        if replay.stale and replay.exists:
            log.warning("%s belongs to another %s; not replayed", jpath.name, path.name)
        else:
            _apply(threads, replay.changes)
    else:
        # Missing or corrupt: the journal's changes are newer than anything on disk.
        _apply(threads, replay.changes)
        note["rebuild"] = "missing" if raw is None else "corrupt"
        if raw is not None:
            note["salvage"] = _salvage(raw)
            note["file"] = path.name + ".migrated"
    for record in threads.values():
        if isinstance(record.get("lastUpdated"), str) and record["lastUpdated"]:
            record["lastUpdated"] = canonical_time(record["lastUpdated"])
    db.executemany(
        "INSERT INTO threads (uuid, status, record) VALUES (?, ?, ?)",
        [
            (uuid, _status(rec), json.dumps(rec, ensure_ascii=False))
            for uuid, rec in threads.items()
        ],
    )
    db.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
        (IMPORT_KEY, json.dumps(note, ensure_ascii=False)),
    )
    for old in (path, jpath):
        if old.exists():
            retire(old)


def _status(record: Record) -> str:
    status = record.get("status")
    return status if isinstance(status, str) else ""


def _apply(threads: dict[str, Record], changes: list[tuple[str, Any]]) -> None:
    for uuid, record in changes:
        if isinstance(record, dict):
            threads[uuid] = record
        elif record is None:
            threads.pop(uuid, None)


def _parse(raw: bytes) -> tuple[dict[str, Record], bool] | None:
    """(records, legacy?) of a v1 or flat document; None when it is not a state file."""
    try:
        doc = json.loads(raw.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError included
        return None
    if not isinstance(doc, dict):
        return None
    if "version" in doc and isinstance(doc.get("threads"), dict):
        version = doc["version"]
        if not isinstance(version, int) or isinstance(version, bool):
            return None
        if version > VERSION:
            # Written by a newer tool: neither corrupt nor ours to import (nor to retire).
            raise ArchiveError(
                f"batch state is version {version}, newer than this tool understands ({VERSION})"
            )
        threads, legacy = doc["threads"], False
    else:
        threads, legacy = doc, True  # the earlier tool's flat {uuid: record}
    if not all(isinstance(key, str) and isinstance(rec, dict) for key, rec in threads.items()):
        return None
    return dict(threads), legacy


def _salvage(raw: bytes) -> dict[str, Record]:
    """From a corrupt but parseable file: the records that still look like records."""
    try:
        doc = json.loads(raw.decode("utf-8"))
    except ValueError:
        return {}
    if not isinstance(doc, dict):
        return {}
    inner = doc.get("threads")
    threads: dict[Any, Any] = inner if isinstance(inner, dict) else doc
    return {
        key: rec
        for key, rec in threads.items()
        if isinstance(key, str) and isinstance(rec, dict) and rec.get("status") in STATUSES
    }
