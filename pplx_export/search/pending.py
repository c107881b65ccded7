"""Thread directories whose search-index update failed (a full disk, a locked database)
after their thread was written: they may hold rows of an earlier version, which
`repair_missing` cannot tell from current ones without a stat of every thread.

Kept in the state store's `search_pending` table (`index/search_pending.txt` before), not in
search.sqlite: the note is taken exactly when that database could not be written.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from pplx_export.store.db import transaction
from pplx_export.store.docs import connect

log = logging.getLogger(__name__)


def note_pending(root: Path, rel: str) -> None:
    """Remember that `rel` still needs indexing (its update failed). Raises OSError when
    even that cannot be written: the caller then must not count the thread as done."""
    with connect(Path(root), write=True) as db:
        assert db is not None
        db.execute("INSERT OR IGNORE INTO search_pending (rel) VALUES (?)", (rel,))


def pending_rels(root: Path) -> set[str]:
    """The directories noted; empty when the store cannot be read (a debug line says so)."""
    try:
        with connect(Path(root), write=False) as db:
            if db is None:
                return set()
            return {str(r[0]) for r in db.execute("SELECT rel FROM search_pending")}
    except OSError as exc:
        log.debug("search index: pending list unreadable: %s", exc)
        return set()


def clear_pending(root: Path, rels: Iterable[str] | None = None) -> None:
    """Forget `rels` (all when None): indexed now, or left to a full rebuild. Best-effort:
    a note kept too long only costs one more update of that thread."""
    try:
        with connect(Path(root), write=True) as db:
            assert db is not None
            with transaction(db):
                if rels is None:
                    db.execute("DELETE FROM search_pending")
                else:
                    db.executemany("DELETE FROM search_pending WHERE rel = ?", ((r,) for r in rels))
    except OSError as exc:
        log.debug("search index: pending list not cleared: %s", exc)
