"""Plan goals (entry `plan` / `plan_block`), looked up in the raw responses by entry uuid.

The model keeps both raw responses on the Conversation for offline re-rendering; plan goals
are read from there so none is lost, even those that are not the answer fallback.
"""

from __future__ import annotations

from typing import Any

from pplx_export.render.context import Ctx
from pplx_export.render.text import details
from pplx_export.util.lenient import as_dict, as_str, decode_json, dicts


def _goals(entry: dict[str, Any]) -> list[str]:
    plans = [decode_json(entry.get("plan"))]
    plans += [as_dict(b).get("plan_block") for b in dicts(entry.get("blocks"))]
    out: list[str] = []
    for plan in plans:
        for goal in dicts(as_dict(plan).get("goals")):
            desc = as_str(goal.get("description")).strip("\n")
            if desc.strip():
                out.append(desc)
    return out


def plan_goals(ctx: Ctx, uuids: set[str], section: str = "entries") -> list[str]:
    """Distinct goal descriptions of the entries (of `section`) whose uuid is in `uuids`.
    The result is shared (memoised per thread): callers must not modify it."""
    key = ("plan_goals", section, frozenset(uuids))
    cached: list[str] | None = ctx.memo.get(key)
    if cached is None:
        cached = ctx.memo[key] = _plan_goals(ctx, uuids, section)
    return cached


def _plan_goals(ctx: Ctx, uuids: set[str], section: str) -> list[str]:
    if not uuids:
        return []
    key = ("plan_entries", section)
    index: list[tuple[set[str], list[str]]] | None = ctx.memo.get(key)
    if index is None:
        # Both raw responses' entries of the section that have goals, with their ids, in
        # order, once per thread (most entries have none, so lookups are usually free).
        index = ctx.memo[key] = [
            (ids, goals)
            for raw in (ctx.conv.raw_plain, ctx.conv.raw_blocks)
            for entry in dicts(as_dict(raw).get(section))
            if (goals := _goals(entry))
            for ids in [{as_str(entry.get("uuid")), as_str(entry.get("backend_uuid"))}]
        ]
    out: list[str] = []
    for ids, goals in index:
        if not ids.isdisjoint(uuids):
            out += [g for g in goals if g not in out]
    return out


def plan_block(
    ctx: Ctx, uuids: set[str], skip: str = "", section: str = "background_entries"
) -> str:
    """The folded plan list ("" when there are no goals besides the answer itself)."""
    goals = [g for g in plan_goals(ctx, uuids, section) if g.strip() != skip.strip()]
    if not goals:
        return ""
    blocks = []
    for n, goal in enumerate(goals, 1):
        lines = goal.strip("\n").split("\n")
        pad = " " * (len(str(n)) + 2)
        blocks.append(
            f"{n}. {lines[0]}" + "".join(f"\n{pad}{ln}" if ln else "\n" for ln in lines[1:])
        )
    return details(ctx.labels.plan + ctx.labels.par(str(len(goals))), "\n".join(blocks))
