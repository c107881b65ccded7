"""Interruption classification (protocol.md §5.7)."""

from __future__ import annotations

from typing import Any

from pplx_export.models import Interruption
from pplx_export.util.lenient import as_dict, as_str, dicts

COMPLETED = "completed"
LIMIT_INTERRUPTED = "limit_interrupted"
AWAITING = "awaiting"
CANCELED = "canceled"
OTHER = "other"

SPENDING_LIMIT = "spending_limit_exceeded"


def classify(status: str | None, locked_reason: str | None = None) -> str:
    """Map a workflow status (+ locked_reason) to completed/limit_interrupted/awaiting/…"""
    value = (status or "").upper()
    if value in ("", "COMPLETED", "WORKFLOW_COMPLETED"):
        return COMPLETED
    if value == "WORKFLOW_AWAITING_NEXT_STEPS":
        return LIMIT_INTERRUPTED if locked_reason == SPENDING_LIMIT else AWAITING
    if value == "WORKFLOW_CANCELED":
        return CANCELED
    return OTHER


HEADLINE_LIMIT = 80


def _is_interrupted(kind: str) -> bool:
    return kind != COMPLETED


def build_registry(turns: list[Any], appendix: list[Any]) -> list[Interruption]:
    """`thread.json.interruptions` (§5.7): turns in index order, then every appendix item.

    Sub-agents come from each turn's anchored `sub_agents` (status/locked_reason already
    resolved from the background entry), stubs from `stub_wfs`.
    """
    out: list[Interruption] = []
    for turn in turns:
        loc = f"turn_{turn.index:04d}"
        meta = turn.metadata
        kind = classify(meta.wf_status, meta.locked_reason)
        if _is_interrupted(kind):
            out.append(Interruption(loc, kind, turn.query[:HEADLINE_LIMIT], meta.wf_status or ""))
        for sub in turn.sub_agents:
            if sub.is_council:
                continue
            kind = classify(sub.status, sub.locked_reason)
            if _is_interrupted(kind):
                out.append(Interruption(f"{loc}/subagent", kind, sub.headline, sub.status))
        for wp in turn.stub_wfs:
            status = as_str(wp.get("status"))
            kind = classify(status, meta.locked_reason)
            if _is_interrupted(kind):
                headline = as_str(wp.get("headline"))
                out.append(Interruption(f"{loc}/subagent_stub", kind, headline, status))
    for item in appendix:
        status = as_str(item.wp.get("status"))
        out.append(
            Interruption(
                "background_unassigned",
                classify(status, item.locked_reason),
                as_str(item.wp.get("headline")),
                status,
            )
        )
    return out


WORKFLOW_NOTE = "non-completed workflow"


def workflow_warnings(main_entries: list[Any], bg_entries: list[Any]) -> list[str]:
    """One line per non-completed workflow block of an entry or background entry."""
    lines = []
    for label, entries in (("entry", main_entries), ("background", bg_entries)):
        for entry in dicts(entries):
            for block in dicts(entry.get("blocks")):
                wf = as_dict(block.get("workflow_block"))
                status = as_str(wf.get("status"))
                kind = classify(status, as_str(entry.get("locked_reason")))
                if wf and _is_interrupted(kind):
                    uuid8 = as_str(entry.get("uuid"))[:8]
                    lines.append(f"{WORKFLOW_NOTE} {label}:{uuid8}: {status} ({kind})")
    return lines
