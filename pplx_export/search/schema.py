"""`index/search.sqlite`: the schema, and opening it for reading or writing.

Plain tables with foreign keys, and one FTS5 table per searchable table with that table as
its external content (`<table>_fts`, content=`<table>`), the layout Datasette recognises:
`datasette index/search.sqlite` browses the rows and offers full-text search on each.

    meta(key, value)                  schema version, tokenizer, when it was built
    threads(id, uuid, dir, account, author, export_via, mode, title, space, space_title,
            date, updated, url, n_turns, signature)
    turns(id, thread_id -> threads, turn, file, query, answer, work, agents, council)
    sources(id, thread_id -> threads, turn, title, url)
    reports(id, thread_id -> threads, file, title, body)
    threads_fts(title)  turns_fts(query, answer, work, agents, council)
    sources_fts(title, url)  reports_fts(title, body)

Text columns hold the text as indexed: Chinese and Japanese with a space between characters
(search/text.py explains why; `plain()` removes them for display).
Triggers keep each FTS table in step with its content table. `signature` is what the
thread's input files looked like when it was indexed: their sizes and mtimes, then `#` and
a digest of their content (see search/index.py).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

SCHEMA_VERSION = "1"
DB_NAME = "search.sqlite"
TOKENIZE = "porter unicode61 remove_diacritics 2"

# (table, its FTS columns): the FTS tables, in the order results are merged.
FTS_TABLES: dict[str, tuple[str, ...]] = {
    "threads": ("title",),
    "turns": ("query", "answer", "work", "agents", "council"),
    "sources": ("title", "url"),
    "reports": ("title", "body"),
}

_TABLES = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE threads (
    id INTEGER PRIMARY KEY,
    uuid TEXT NOT NULL UNIQUE,
    dir TEXT NOT NULL UNIQUE,
    account TEXT NOT NULL,
    author TEXT NOT NULL,
    export_via TEXT NOT NULL,
    mode TEXT NOT NULL,
    title TEXT NOT NULL,
    space TEXT NOT NULL,
    space_title TEXT NOT NULL,
    date TEXT NOT NULL,
    updated TEXT NOT NULL,
    url TEXT NOT NULL,
    n_turns INTEGER NOT NULL,
    signature TEXT NOT NULL
);
CREATE TABLE turns (
    id INTEGER PRIMARY KEY,
    thread_id INTEGER NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
    turn INTEGER NOT NULL,
    file TEXT NOT NULL,
    query TEXT NOT NULL,
    answer TEXT NOT NULL,
    work TEXT NOT NULL,
    agents TEXT NOT NULL,
    council TEXT NOT NULL
);
CREATE TABLE sources (
    id INTEGER PRIMARY KEY,
    thread_id INTEGER NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
    turn INTEGER NOT NULL,
    title TEXT NOT NULL,
    url TEXT NOT NULL
);
CREATE TABLE reports (
    id INTEGER PRIMARY KEY,
    thread_id INTEGER NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
    file TEXT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX turns_thread ON turns(thread_id);
CREATE INDEX sources_thread ON sources(thread_id);
CREATE INDEX reports_thread ON reports(thread_id);
CREATE INDEX threads_mode_date ON threads(mode, date);
"""


def fts_ddl() -> str:
    return "".join(
        f"CREATE VIRTUAL TABLE {t}_fts USING fts5({', '.join(cols)}, content='{t}', "
        f"content_rowid='id', tokenize='{TOKENIZE}');\n"
        for t, cols in FTS_TABLES.items()
    )


def trigger_ddl() -> str:
    """The triggers that keep every `<table>_fts` in step with `<table>` (external content)."""
    out = []
    for t, cols in FTS_TABLES.items():
        names = ", ".join(cols)
        new = ", ".join(f"new.{c}" for c in cols)
        old = ", ".join(f"old.{c}" for c in cols)
        out.append(
            f"CREATE TRIGGER {t}_ai AFTER INSERT ON {t} BEGIN "
            f"INSERT INTO {t}_fts(rowid, {names}) VALUES (new.id, {new}); END;\n"
            f"CREATE TRIGGER {t}_ad AFTER DELETE ON {t} BEGIN "
            f"INSERT INTO {t}_fts({t}_fts, rowid, {names}) VALUES ('delete', old.id, {old}); END;\n"
        )
    return "".join(out)


def db_path(root: Path) -> Path:
    return Path(root) / "index" / DB_NAME


def _uri_path(path: Path) -> str:
    """The path part of a file: URI. On POSIX that is quote(), which pathname2url calls,
    without importing urllib.request (20 ms of a search's start-up)."""
    if os.name == "nt":  # drive letters and backslashes
        from urllib.request import pathname2url

        return pathname2url(str(path))
    return quote(str(path))


def connect_ro(path: Path) -> sqlite3.Connection:
    """Read-only: searching never writes (no journal, no -wal file, no lock held long)."""
    conn = sqlite3.connect(f"file:{_uri_path(path)}?mode=ro", uri=True)
    conn.execute("PRAGMA query_only = ON")
    return conn


def connect_rw(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    # Derived data: no fsync per commit (every export commits). A killed process still
    # leaves a consistent file (the journal rolls back); a power cut may damage it, and a
    # damaged index is rebuilt from the archive when it is next opened or searched.
    conn.execute("PRAGMA synchronous = OFF")
    return conn


def schema_version(conn: sqlite3.Connection) -> str | None:
    """The schema version recorded in `meta`, None when there is none. Raises
    sqlite3.DatabaseError for a file that is not a database (or a damaged one)."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.OperationalError:  # no meta table: not our database
        return None
    return str(row[0]) if row else None


def create_schema(conn: sqlite3.Connection, *, triggers: bool = True) -> None:
    conn.executescript(_TABLES + fts_ddl() + (trigger_ddl() if triggers else ""))
    conn.executemany(
        "INSERT INTO meta(key, value) VALUES (?, ?)",
        [("schema_version", SCHEMA_VERSION), ("tokenizer", TOKENIZE + " + CJK segmentation")],
    )
