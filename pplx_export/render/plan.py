"""Plan goals (entry `plan` / `plan_block`), looked up by entry uuid.

The parser reads the goals of every entry of both raw responses (`ThreadViews.plans`), so
none is lost, even those that are not the answer fallback.
"""

from __future__ import annotations

from collections.abc import Iterable

from pplx_export.models import Step, WfPayload
from pplx_export.render.context import Ctx
from pplx_export.render.text import details, squash, squash_lines


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
    ctx: Ctx,
    uuids: set[str],
    skip: str = "",
    section: str = "background_entries",
    titles: frozenset[str] | None = None,
    shown_md: str = "",
) -> str:
    """The folded plan list ("" when there are no goals besides the answer itself). With
    `titles` (`step_titles` of the page's work process), only the goals that are not a
    step's title (nor, with `shown_md`, a whole line of it): a computer or council plan
    mostly repeats them."""
    goals = [g for g in plan_goals(ctx, uuids, section) if g.strip() != skip.strip()]
    if titles is not None:
        goals = [g for g in goals if squash(g) not in titles]
        if goals and shown_md:
            on_page = shown_lines(shown_md)  # only when goals are left: a pass over the page
            goals = [g for g in goals if squash(g) not in on_page]
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


def step_titles(payloads: Iterable[WfPayload | None], steps: Iterable[Step] = ()) -> frozenset[str]:
    """Squashed titles and headlines of every step of the payloads (nested runs too) and
    of the plain steps: what a plan goal repeats when the page shows it as a step."""
    out: set[str] = set()
    todo = [wp for wp in payloads if wp is not None]
    seen: set[int] = set()
    while todo:
        wp = todo.pop()
        if id(wp) in seen:
            continue
        seen.add(id(wp))
        out.add(squash(wp.headline))
        for step in wp.steps:
            out.add(squash(step.title))
            todo += [item.workflow for item in step.items if item.workflow is not None]
    for plain in steps:
        title = plain.content.get("title") if isinstance(plain.content, dict) else None
        if isinstance(title, str):
            out.add(squash(title))
    out.discard("")
    return frozenset(out)


def shown_lines(md: str) -> frozenset[str]:
    """Squashed lines of rendered Markdown: a goal equal to one of them is shown already
    (a step's thought, a quoted line), unlike a goal that is only part of a longer line."""
    return frozenset(squash_lines(md)) - {""}
