"""Migration: `index/rendered.jsonl` (+ `rendered.journal`) into the `rendered` table.

The table is keyed by `key`, the thread directory `⟨account⟩/⟨mode⟩/⟨dir⟩` with its `/` as
NUL, as UTF-8 bytes: a BLOB compares bytewise, so `ORDER BY key` is the order in which
`archive/paths.walk_thread_dirs` lists an archive (by parts: "a/…" before "a-b/…"), and
`RenderState.join` reads the table in one ordered scan beside the listing. `record` is the
record as compact JSON bytes, decoded only by the worker that renders the thread.

The snapshot's lines are imported as they are (their records are compact JSON already); a
journal left by a killed run or by small exports is laid over them. An archive of an earlier
version may still hold `render_state.json` (format 1, one JSON object) and its journal
instead. Damaged lines are skipped with a warning: those threads count as changed, which costs
a render, never a wrong skip.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

from pplx_export.store import legacy_journal
from pplx_export.store.db import INDEX_DIR, retire
from pplx_export.util.jsonobj import loads_if

log = logging.getLogger(__name__)

SNAPSHOT = "rendered.jsonl"
SNAPSHOT_FORMAT = 2
LEGACY = "render_state.json"
LEGACY_FORMAT = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS rendered (
    key BLOB PRIMARY KEY,
    rel TEXT NOT NULL,
    record BLOB NOT NULL
) WITHOUT ROWID
"""


def sort_key(rel: str) -> bytes:
    """The table key of a thread directory: its parts joined by NUL (which no file name
    holds, so they compare as the parts do), UTF-8 (whose byte order is code point order)."""
    return rel.replace("/", "\0").encode("utf-8", "surrogatepass")


def dumps_compact(value: Any) -> bytes:
    # Imported here: `sort_key` is on the path of a no-op run, which must not import msgspec.
    from pplx_export.util.jsontext import dumps_compact as dumps

    return dumps(value)


def import_rendered(db: sqlite3.Connection, root: Path) -> None:
    db.execute(SCHEMA)
    index = Path(root) / INDEX_DIR
    olds = [
        old
        for name in (SNAPSHOT, LEGACY)
        for old in (index / name, legacy_journal.journal_path(index / name))
        if old.exists()
    ]
    if not olds:
        return  # a new archive, or this migration run twice: nothing to import, nothing to undo
    db.execute("DELETE FROM rendered")  # filled from scratch: a redone migration is idempotent
    records: dict[str, bytes] = {}
    snapshot = index / SNAPSHOT
    if snapshot.exists() or legacy_journal.journal_path(snapshot).exists():
        base = _read_snapshot(snapshot, records)
        _overlay(legacy_journal.journal_path(snapshot), base, records)
    else:
        legacy = index / LEGACY
        _overlay(legacy_journal.journal_path(legacy), _read_legacy(legacy, records), records)
    db.executemany(
        "INSERT OR REPLACE INTO rendered (key, rel, record) VALUES (?, ?, ?)",
        ((sort_key(rel), rel, record) for rel, record in records.items()),
    )
    for old in olds:
        retire(old)


def _read_snapshot(path: Path, records: dict[str, bytes]) -> str:
    """The records of a format-2 snapshot into `records`; its id ("" when it has none)."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below, read line by line
    except FileNotFoundError:
        return ""
    with fh:
        ident = _header(fh.readline())
        if not ident:
            log.warning("%s unreadable: every thread counts as changed", path)
            return ""
        skipped = 0
        for line in fh:
            raw, tab, record = line.rstrip(b"\n").partition(b"\t")
            rel = _string(raw) if tab and line.endswith(b"\n") else None
            if rel is None or not record:
                skipped += 1
                continue
            records[rel] = record
    if skipped:
        log.warning(
            "%s: %d line(s) garbled; skipped, those threads count as changed", path, skipped
        )
    return ident


def _header(raw: bytes) -> str:
    doc = loads_if(raw, dict)
    if doc is None or doc.get("rendered") != SNAPSHOT_FORMAT:
        return ""
    ident = doc.get("id")
    return ident if isinstance(ident, str) else ""


def _string(raw: bytes) -> str | None:
    """The JSON string `raw` holds, or None."""
    return loads_if(raw, str)


def _read_legacy(path: Path, records: dict[str, bytes]) -> str:
    """The records of a format-1 `render_state.json` into `records`; its digest."""
    raw = legacy_journal.read(path)
    if raw is None:
        return ""
    try:
        doc = json.loads(raw)
    except ValueError as exc:  # UnicodeDecodeError included
        log.warning("%s unreadable (%s): every thread counts as changed", path, exc)
        return legacy_journal.digest(raw)
    found = doc.get("threads") if isinstance(doc, dict) else None
    if isinstance(doc, dict) and doc.get("format") == LEGACY_FORMAT and isinstance(found, dict):
        for rel, entry in found.items():
            if isinstance(rel, str) and entry is not None:
                records[rel] = dumps_compact(entry)
    return legacy_journal.digest(raw)


def _overlay(jpath: Path, base: str, records: dict[str, bytes]) -> None:
    """A journal's changes on top of the snapshot named `base` (a stale one is dropped:
    only a cache, it costs re-renders, nothing else)."""
    data = legacy_journal.read(jpath)
    if data is None:
        return
    replay = legacy_journal.parse(data, base, jpath)
    if replay.stale:
        log.warning("%s belongs to another snapshot; not replayed", jpath)
        return
    for rel, value in replay.changes:
        _set(records, rel, value)


def _set(records: dict[str, bytes], rel: str, value: Any) -> None:
    if value is None:
        records.pop(rel, None)
    else:
        records[rel] = dumps_compact(value)
