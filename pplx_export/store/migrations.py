"""The state store's migrations, in order (see store/db.py).

Each one is a named function registered with `@migration`; importing this module registers
them all. Append new ones at the end; a released migration is never edited or reordered.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from pplx_export.store.db import migration


@migration("meta")
def m001_meta(db: sqlite3.Connection, root: Path) -> None:
    # Small key/value facts about the archive (schema notes, when it was migrated).
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
