"""Interruption classification (protocol.md §5.7)."""

from __future__ import annotations

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
