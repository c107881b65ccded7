"""Answer-variant side effects (protocol §5.8): the WARNING line and the log.

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

from pplx_export.store.docs import connect
from pplx_export.util.jsontypes import JSON
from pplx_export.util.timefmt import format_utc

log = logging.getLogger("pplx_export.variants")


def variant_records(web_uuid: str, title: str, variants: list[JSON]) -> list[JSON]:
    """The log records (without `detected_at`/`source`) for a thread's registered variants."""
    out = []
    for v in variants:
        out.append(
            {
                "web_uuid": web_uuid,
                "uuid8": web_uuid[:8],
                "title": title,
                "entry_uuid": str(v.get("entry_uuid") or ""),
                "sibling_uuid": str(v.get("sibling_uuid") or ""),
                "selection_status": str(v.get("selection_status") or ""),
                "experiment_role": str(v.get("experiment_role") or ""),
            }
        )
    return out


def warn_variants(records: list[JSON]) -> None:
    # One line format for the whole tool: the parser owns it (protocol §5.8). Imported here:
    # the parser package is not free to import, and a no-op re-render never warns.
    from pplx_export.parse.variants import variant_log_line

    for r in records:
        log.warning("%s", variant_log_line(r["web_uuid"], r["title"], r))


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
    with connect(Path(root), write=False) as db:
        if db is None:
            return []
        rows = db.execute("SELECT record FROM answer_variants ORDER BY seq").fetchall()
    return [bytes(r[0]) for r in rows]
