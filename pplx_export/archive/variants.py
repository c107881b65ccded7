"""Answer-variant side effects (protocol §5.8): the WARNING line and the JSONL log.

The log is one JSON object per `(web_uuid, entry_uuid)` pair, appended only for new pairs.
It is rewritten atomically (read, add, replace), which keeps it whole after a crash; corrupt
lines from an older writer are kept verbatim and skipped when reading keys.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path

from pplx_export.util.atomic import atomic_write_bytes
from pplx_export.util.jsontypes import JSON
from pplx_export.util.timefmt import format_utc

log = logging.getLogger("pplx_export.variants")

LOG_NAME = "index/answer_variants_log.jsonl"


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
    """Append the records whose `(web_uuid, entry_uuid)` pair is new; return those."""
    if not records:
        return []
    path = Path(root) / LOG_NAME
    try:
        existing = path.read_bytes()
    except FileNotFoundError:
        existing = b""
    known: set[tuple[str, str]] = set()
    for line in existing.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue  # tolerated: a torn line of an older, non-atomic writer
        if isinstance(doc, dict):
            known.add((str(doc.get("web_uuid")), str(doc.get("entry_uuid"))))
    stamp = format_utc(now or datetime.now(UTC))
    new: list[JSON] = []
    for r in records:
        key = (str(r["web_uuid"]), str(r["entry_uuid"]))
        if key in known:
            continue
        known.add(key)
        new.append({"detected_at": stamp, "source": source, **r})
    if new:
        if existing and not existing.endswith(b"\n"):
            existing += b"\n"
        lines = b"".join(json.dumps(n, ensure_ascii=False).encode() + b"\n" for n in new)
        atomic_write_bytes(path, existing + lines, durable=True)
    return new
