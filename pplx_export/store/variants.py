"""The answer-variant log (protocol §5.8); the WARNING line is archive/variant_hits.py's.

The log is the state store's `answer_variants` table (`index/answer_variants_log.jsonl`
before): one JSON object per `(web_uuid, entry_uuid)` pair, added only for new pairs, in one
committed transaction per thread. Corrupt lines an older writer left in the file were
imported verbatim and are kept, in their place.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path

from pplx_export.store.docs import connect, journal_bytes
from pplx_export.util.jsontypes import JSON
from pplx_export.util.timefmt import format_utc

log = logging.getLogger("pplx_export.variants")


def append_variant_log(
    root: Path, records: list[JSON], *, source: str, now: datetime | None = None
) -> list[JSON]:
    """Add the records whose `(web_uuid, entry_uuid)` pair is new; return those. Raises
    OSError (StoreError) when the log cannot be written, as the file write did."""
    if not records:
        return []
    stamp = format_utc(now or datetime.now(UTC))
    new: list[JSON] = []
    with connect(Path(root), write=True) as db:
        assert db is not None
        db.execute("BEGIN IMMEDIATE")
        try:
            for r in records:
                rec = {"detected_at": stamp, "source": source, **r}
                cur = db.execute(
                    "INSERT OR IGNORE INTO answer_variants (web_uuid, entry_uuid, record) "
                    "VALUES (?, ?, ?)",
                    (str(r["web_uuid"]), str(r["entry_uuid"]), _line(rec)),
                )
                if cur.rowcount > 0:
                    new.append(rec)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    return new


def _line(record: JSON) -> bytes:
    return json.dumps(record, ensure_ascii=False).encode("utf-8")


def variant_log_lines(root: Path) -> list[bytes]:
    """The log as the JSONL file held it: one line per record, oldest first."""
    return journal_bytes(root, "answer_variants", "record")
