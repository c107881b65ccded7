"""Plan goals (entry `plan` / `plan_block`), looked up by entry uuid.

The parser reads the goals of every entry of both raw responses (`ThreadViews.plans`), so
none is lost, even those that are not the answer fallback.
"""

from __future__ import annotations

from pplx_export.render.context import Ctx
from pplx_export.render.text import details


def plan_goals(ctx: Ctx, uuids: set[str], section: str = "entries") -> list[str]:
    """Distinct goal descriptions of the entries (of `section`) whose uuid is in `uuids`.
    The result is shared (memoised per thread): callers must not modify it."""
    key = ("plan_goals", section, frozenset(uuids))
    cached: list[str] | None = ctx.memo.get(key)
    if cached is None:
        cached = ctx.memo[key] = _plan_goals(ctx, uuids, section)
    return cached


def _plan_goals(ctx: Ctx, uuids: set[str], section: str) -> list[str]:
    out: list[str] = []
    if not uuids:
        return out
    for plan in ctx.conv.views.plans_of(section):
        if not plan.ids.isdisjoint(uuids):
            out += [g for g in plan.goals if g not in out]
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
    return details(ctx.labels.plan + ctx.labels.par(str(len(goals))), "\n".join(blocks), ctx.flavor)
