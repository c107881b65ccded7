"""Answer variants a write found (protocol §5.8): the log records and the WARNING line. The
log itself is the state store's (store/variants.py), appended by the pipeline after a write."""

from __future__ import annotations

import logging

from pplx_export.util.jsontypes import JSON

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
