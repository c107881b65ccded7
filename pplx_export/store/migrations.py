"""The state store's migrations, in order (see store/db.py).

Each one is a named function registered with `@migration`; importing this module registers
them all. Append new ones at the end; a released migration is never edited or reordered.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from pplx_export.store.db import INDEX_DIR, migration, retire

# The files of index/ that became documents (store/docs.py), by key: `<key>.json` each.
DOC_FILES = (
    "raw_check",
    "official_import",
    "sync_runs",
    "index_state",
    "last_ask",
    "auto_commit",
)
SPACE_FILES = ("spaces_cache", "spaces_pages", "spaces_stamp", "space_meta")
CREDIT_USAGE_PREFIX = "credit_usage_"


@migration("meta")
def m001_meta(db: sqlite3.Connection, root: Path) -> None:
    # Small key/value facts about the archive (schema notes, when it was migrated).
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")


@migration("batch_state")
def m002_batch_state(db: sqlite3.Connection, root: Path) -> None:
    # What happened to every thread: `index/batch_state.json` and its journal (batch_import).
    from pplx_export.store.batch_import import import_batch_state

    import_batch_state(db, root)


@migration("rendered")
def m003_rendered(db: sqlite3.Connection, root: Path) -> None:
    # What each thread directory was last rendered from: `index/rendered.jsonl` and its
    # journal, or the earlier `render_state.json` (rendered_import).
    from pplx_export.store.rendered_import import import_rendered

    import_rendered(db, root)


# -- small documents (store/docs.py): one file each under index/ before ------------------------

DOCS_TABLE = "CREATE TABLE IF NOT EXISTS docs (key TEXT PRIMARY KEY, value BLOB NOT NULL)"


def _import_file(db: sqlite3.Connection, path: Path, key: str) -> None:
    """Copy an old file's bytes into `docs` as they are (its module reads them with the
    same lenient code as before, so a damaged file is judged the same way), then retire it."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    db.execute("INSERT OR REPLACE INTO docs (key, value) VALUES (?, ?)", (key, data))
    retire(path)


@migration("docs")
def m004_docs(db: sqlite3.Connection, root: Path) -> None:
    # Run and import bookkeeping, the raw-file check record and credit usage per account.
    db.execute(DOCS_TABLE)
    index = root / INDEX_DIR
    for name in DOC_FILES:
        _import_file(db, index / f"{name}.json", name)
    if index.is_dir():
        for path in sorted(index.glob(f"{CREDIT_USAGE_PREFIX}*.json")):
            account = path.name[len(CREDIT_USAGE_PREFIX) : -len(".json")]
            if account and path.is_file():
                _import_file(db, path, f"credit_usage/{account}")


@migration("space caches")
def m005_space_caches(db: sqlite3.Connection, root: Path) -> None:
    # The spaces/ build's caches and the fetched space metadata. The space_<slug>.json
    # listings stay files: like library_<account>.json they are what `space-index` exports.
    db.execute(DOCS_TABLE)
    for name in SPACE_FILES:
        _import_file(db, root / INDEX_DIR / f"{name}.json", name)


@migration("relations cache")
def m006_relations_cache(db: sqlite3.Connection, root: Path) -> None:
    # The snapshot is a document; the journal a re-render appends to is a table (a run adds
    # rows without rewriting the snapshot, `relations` folds them in and deletes them).
    db.execute(DOCS_TABLE)
    db.execute(
        "CREATE TABLE IF NOT EXISTS relation_facts_journal "
        "(seq INTEGER PRIMARY KEY AUTOINCREMENT, line BLOB NOT NULL)"
    )
    index = root / INDEX_DIR
    _import_file(db, index / "relations_cache.json", "relations_cache")
    journal = index / "relations_cache.jsonl"
    try:
        data = journal.read_bytes()
    except FileNotFoundError:
        return
    db.executemany(
        "INSERT INTO relation_facts_journal (line) VALUES (?)",
        ((line,) for line in data.splitlines() if line.strip()),
    )
    retire(journal)


@migration("answer variants")
def m007_answer_variants(db: sqlite3.Connection, root: Path) -> None:
    # The answer-variant log: one row per (web_uuid, entry_uuid), in the order detected.
    # Lines that do not parse (a torn line of an older writer) are kept as they were.
    db.execute(
        "CREATE TABLE IF NOT EXISTS answer_variants (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
        "web_uuid TEXT, entry_uuid TEXT, record BLOB NOT NULL, UNIQUE (web_uuid, entry_uuid))"
    )
    path = root / INDEX_DIR / "answer_variants_log.jsonl"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            doc = None
        if isinstance(doc, dict):
            key = (str(doc.get("web_uuid")), str(doc.get("entry_uuid")))
            db.execute(
                "INSERT OR IGNORE INTO answer_variants (web_uuid, entry_uuid, record) "
                "VALUES (?, ?, ?)",
                (*key, line),
            )
        else:
            db.execute("INSERT INTO answer_variants (record) VALUES (?)", (line,))
    retire(path)


@migration("search pending")
def m008_search_pending(db: sqlite3.Connection, root: Path) -> None:
    # Thread directories whose search-index update failed. Kept here, not in search.sqlite:
    # the note is taken exactly when that database could not be written.
    db.execute("CREATE TABLE IF NOT EXISTS search_pending (rel TEXT PRIMARY KEY)")
    path = root / INDEX_DIR / "search_pending.txt"
    try:
        text = path.read_text("utf-8", errors="replace")
    except FileNotFoundError:
        return
    db.executemany(
        "INSERT OR IGNORE INTO search_pending (rel) VALUES (?)",
        ((line,) for line in text.splitlines() if line),
    )
    retire(path)
