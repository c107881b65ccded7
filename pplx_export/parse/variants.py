"""Answer-rewrite variants (`side_by_side_metadata`, protocol.md §5.8)."""

from __future__ import annotations

import json
from typing import Any

from pplx_export.util.lenient import as_str, dicts

UNSPECIFIED = "SELECTION_STATUS_UNSPECIFIED"
CONTROL_PREFIX = "[control]"
_TIME_MARKERS = ("time", "date", "_us", "_at")


def is_variant(meta: Any) -> bool:
    """The narrowed criterion: a sibling, and either a real selection or a non-control role."""
    if not isinstance(meta, dict) or not as_str(meta.get("sibling_uuid")):
        return False
    selection = as_str(meta.get("selection_status"))
    role = as_str(meta.get("experiment_role"))
    return (bool(selection) and selection != UNSPECIFIED) or not role.startswith(CONTROL_PREFIX)


def variant_record(entry: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = entry["side_by_side_metadata"]
    record: dict[str, Any] = {
        "entry_uuid": as_str(entry.get("uuid")),
        "sibling_uuid": as_str(meta.get("sibling_uuid")),
        "selection_status": as_str(meta.get("selection_status")),
        "experiment_role": as_str(meta.get("experiment_role")),
    }
    if meta.get("experiment_override"):
        record["experiment_override"] = meta["experiment_override"]
    for key, value in meta.items():
        if isinstance(key, str) and key not in record and any(m in key for m in _TIME_MARKERS):
            record[key] = value
    if entry.get("updated_datetime"):
        record["entry_updated"] = entry["updated_datetime"]
    return record


def find_variants(entries: list[Any]) -> list[dict[str, Any]]:
    return [variant_record(e) for e in dicts(entries) if is_variant(e.get("side_by_side_metadata"))]


VARIANT_GUIDANCE = (
    "the platform replaced this answer with an experiment variant; "
    "the original sibling answer cannot be fetched (403) and is not archived"
)


def variant_log_line(
    web_uuid: str, title: str, record: dict[str, Any], guidance: str = VARIANT_GUIDANCE
) -> str:
    """The §5.8 `ANSWER_VARIANT_DETECTED …` warning line for one record."""
    return (
        f"ANSWER_VARIANT_DETECTED thread={web_uuid} uuid8={web_uuid[:8]} "
        f"title={json.dumps(title, ensure_ascii=False)} entry={record.get('entry_uuid', '')} "
        f"sibling={record.get('sibling_uuid', '')} "
        f"selection_status={record.get('selection_status') or 'UNSPECIFIED'} "
        f"experiment_role={record.get('experiment_role', '')} | {guidance}"
    )
