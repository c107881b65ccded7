"""The parts of `status` that the upkeep commands feed: tombstones and credit usage.

Zero network, read-only, like the rest of `status`. Kept apart from
commands/inspect/status.py, which only calls `upkeep_status` and `print_upkeep`.

* `tombstoned`: every thread in state `deleted` (the batch saw ENTRY_DELETED, or
  `sync-deleted --online` confirmed it), newest deletion first; its local files are kept.
* `credit_usage`: per account (every `credit_usage/<account>` document), the threads with
  a known usage, the total in credits (cents / 100) and the total per archive mode.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pplx_export.store.batch_state import BatchState
from pplx_export.store.credit_usage import load_usage, usage_accounts
from pplx_export.util.lenient import as_str

CENTS_PER_CREDIT = 100


def _tombstones(state: BatchState) -> list[dict[str, Any]]:
    rows = [
        {
            "uuid": uuid,
            "title": as_str(record.get("title")),
            "deleted_at": as_str(record.get("deleted_at")),
            "note": as_str(record.get("note")),
        }
        for uuid, record in state.threads.items()
        if as_str(record.get("status")) == "deleted"
    ]
    rows.sort(key=lambda r: (r["deleted_at"], r["uuid"]), reverse=True)
    return rows


def _credits(cents: float) -> float:
    return round(cents / CENTS_PER_CREDIT, 2)


def _usage(root: Path) -> list[dict[str, Any]]:
    out = []
    for account in usage_accounts(root):
        records = load_usage(root, account, repair=False)
        total = 0.0
        by_mode: dict[str, float] = {}
        known = forbidden = 0
        for record in records.values():
            cents = record.get("usage_cents")
            if isinstance(cents, int | float) and not isinstance(cents, bool):
                known += 1
                total += cents
                mode = as_str(record.get("mode")) or "unknown"
                by_mode[mode] = by_mode.get(mode, 0.0) + cents
            elif as_str(record.get("error")).startswith("forbidden"):
                forbidden += 1
        out.append(
            {
                "account": account,
                "threads": known,
                "forbidden": forbidden,
                "credits": _credits(total),
                "credits_by_mode": {m: _credits(c) for m, c in sorted(by_mode.items())},
            }
        )
    return out


def upkeep_status(root: Path, state: BatchState) -> dict[str, Any]:
    """The keys `status` adds: `tombstoned` and `credit_usage` (see module doc)."""
    return {"tombstoned": _tombstones(state), "credit_usage": _usage(root)}


def print_upkeep(doc: dict[str, Any], say: Callable[[str], None]) -> None:
    usage = doc.get("credit_usage") or []
    for acc in usage:
        modes = ", ".join(f"{m} {c:g}" for m, c in acc["credits_by_mode"].items())
        say(
            f"\ncredits used by {acc['account']}: {acc['credits']:g} over {acc['threads']} "
            f"thread(s)" + (f" ({modes})" if modes else "")
        )
    tombstoned = doc.get("tombstoned") or []
    if tombstoned:
        say(f"\ndeleted on Perplexity, kept here ({len(tombstoned)}):")
        for row in tombstoned:
            say(f"  {row['deleted_at'][:19] or '-':19}  {row['uuid']}  {row['title']}")
