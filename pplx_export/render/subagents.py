"""Sub-agent steps (§6.6.1-6.6.2) and the stub-turn sub-agent section (§6.4)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pplx_export.models import Step, SubAgent, Turn, WfPayload, WfStep
from pplx_export.render.background import background_log, background_payloads, launcher_line
from pplx_export.render.context import Ctx
from pplx_export.render.items import is_the_answer
from pplx_export.render.plan import plan_block, plan_goals, step_titles
from pplx_export.render.shown import Shown
from pplx_export.render.steps import novel_steps, render_step, render_steps
from pplx_export.render.text import (
    bold,
    details,
    join_blocks,
    link,
    one_line,
    quote,
    time_range,
    work_md,
)
from pplx_export.render.tree import nested, nested_steps, render_item
from pplx_export.util.timefmt import parse_iso


def anchor_payloads(step: WfStep) -> list[WfPayload]:
    """The workflow payloads on a step's items that launch a sub-agent."""
    return [wp for item in step.items if (wp := item.workflow) is not None and wp.is_anchor]


def is_subagent_step(step: WfStep) -> bool:
    return (
        step.tool_name == "run_subagent"
        or step.icon == "subagent"
        or any(item.workflow is not None and item.workflow.is_anchor for item in step.items)
    )


def sub_id(step: WfStep, wp: WfPayload) -> str:
    return wp.id or step.id.removesuffix(":workflow")


def interleave(
    ctx: Ctx, timed: Sequence[tuple[str, str]], steps: Sequence[Step]
) -> tuple[list[str], list[Step]]:
    """The payload's step parts (`nested_steps`) with each log step rendered after the last
    part that ended at or before it (before the first when it is earlier than all), and
    the log steps that have no time to place them by (all of them when no part has one)."""
    moments: list[datetime | None] = []
    last: datetime | None = None
    for end, _ in timed:
        last = parse_iso(end) or last
        moments.append(last)
    if last is None:
        return [text for _, text in timed], list(steps)
    after: dict[int, list[str]] = {}
    rest: list[Step] = []
    for step in steps:
        at = parse_iso(step.body.time or step.timestamp)
        if at is None:
            rest.append(step)
            continue
        place = -1
        for i, moment in enumerate(moments):
            if moment is not None and moment <= at:
                place = i
        after.setdefault(place, []).append(render_step(ctx, step))
    out = list(after.get(-1, ()))
    for i, (_, text) in enumerate(timed):
        out.append(text)
        out += after.get(i, ())
    return out, rest


def _sub_body(ctx: Ctx, sub: SubAgent, wp: WfPayload, headline: str) -> list[str]:
    """Prompt, plan, work process, conclusion and citations of a mapped sub-agent."""
    lb = ctx.labels
    meta = [f"{lb.run_id}{lb.sep}`{sub.sub_id}`"]
    meta += lb.code_facts((lb.status, sub.status), (lb.model, wp.model))
    blocks = [quote(" · ".join(meta)), launcher_line(ctx, sub.sub_id, headline=headline)]
    # Two copies of the run exist: the workflow payload in the launching turn (titled steps,
    # may lag) and the background entry's step log (the parser's sub.steps). The payload is
    # shown first; the log adds what the payload lacks (everything, when the payload is empty).
    copies = [p for p in background_payloads(ctx, sub.sub_id) if p.steps]
    # The copies can word the task differently (the launch's short objective, the run's
    # own): each distinct wording once.
    prompts: list[str] = []
    for prompt in (sub.prompt, wp.prompt, *(c.prompt for c in copies)):
        if prompt.strip() and prompt not in Shown("\n".join(prompts)):
            prompts.append(prompt.strip("\n"))
    if prompts:
        blocks.append(lb.labelled(lb.prompt, quote("\n\n".join(prompts))))
    plan_at = len(blocks)  # the plan goes here, once the steps it may repeat are known
    primary = copies[0] if copies else wp
    seen = frozenset({id(wp), *(id(c) for c in copies)})
    parts, conclusion, cited = nested_steps(ctx, primary, 0, seen, answer=sub.answer)
    shown_md = join_blocks([text for _, text in parts])
    for other in [*copies[1:], wp] if copies else []:
        more, more_conclusion, more_cited = nested_steps(
            ctx, other, 0, seen, shown_md, answer=sub.answer
        )
        conclusion = conclusion if conclusion.strip() else more_conclusion
        cited += [c for c in more_cited if c not in cited]
        parts += more
        shown_md = join_blocks([text for _, text in parts])
    # Citations are listed once at the end; they count as shown for the step log too.
    extra = novel_steps(ctx, sub.steps, join_blocks([shown_md, *cited]))
    # What only the log has goes where it happened among the payload's steps; what has no
    # time to place it by stays in a fold of its own.
    body, extra = interleave(ctx, parts, extra)
    # The goals its steps do not show (as a title or a line of their own): the plan mostly
    # repeats them.
    uuids = {sub.thread_uuid} - {""}
    if plan_goals(ctx, uuids, "background_entries"):
        titles = step_titles([wp, *copies], sub.steps)
        shown = join_blocks(body)
        blocks.insert(
            plan_at, plan_block(ctx, uuids, skip=sub.answer, titles=titles, shown_md=shown)
        )
    if body:
        n = len(primary.steps)
        blocks.append(
            details(
                lb.subagent_payload_steps + lb.par(lb.steps_n.format(n=n)),
                join_blocks(body),
                ctx.flavor,
            )
        )
    rendered = render_steps(ctx, extra)
    if rendered:
        blocks.append(
            details(
                lb.subagent_steps + lb.par(lb.steps_n.format(n=len(extra))), rendered, ctx.flavor
            )
        )
    answer = sub.answer if sub.answer.strip() else conclusion
    if is_the_answer(ctx, answer):
        # The run's answer is the turn's final answer (a turn that only waits for its
        # sub-agent): shown once, in the Answer section.
        blocks.append(f"**{lb.subagent_conclusion}{lb.colon}** *{lb.to_answer}*")
    elif answer.strip():
        blocks.append(lb.labelled(lb.subagent_conclusion, work_md(answer.strip("\n"))))
    if (
        conclusion.strip()
        and answer.strip() != conclusion.strip()
        and not is_the_answer(ctx, conclusion)
    ):
        blocks.append(work_md(conclusion.strip("\n")))
    lines = ["- " + link(c.name, c.url) for c in sub.sources if c.url]
    known = set(lines)
    lines += [c for c in cited if c not in known]
    if lines:
        blocks.append(
            details(lb.subagent_sources + lb.par(str(len(lines))), "\n".join(lines), ctx.flavor)
        )
    return blocks


def render_subagent_step(ctx: Ctx, i: int, step: WfStep) -> str:
    lb = ctx.labels
    anchors = anchor_payloads(step) or [item.workflow or WfPayload({}) for item in step.items]
    wp = anchors[0] if anchors else WfPayload({})
    sid = sub_id(step, wp)
    sub = ctx.sub_map.get(sid)
    if sub is not None:
        headline = sub.headline or wp.headline or step.title
        status, lr = sub.status, sub.locked_reason
        start = sub.started_at or wp.started_at or step.started_at
        end = sub.completed_at or wp.completed_at
    else:
        headline = wp.headline or step.title
        status, lr = wp.status, ctx.locked_reason
        start = wp.started_at or step.started_at
        end = wp.completed_at or step.completed_at
    head = f"### {lb.step} {i} · {lb.subagent}{lb.sep}{one_line(headline)}" + time_range(start, end)
    tag = lb.tag(status, lr)
    if tag:
        head += f" · {tag}"
    blocks = [head]
    if sub is not None:
        blocks += _sub_body(ctx, sub, wp, headline)
    elif wp.steps:
        blocks.append(nested(ctx, wp, 0, frozenset({id(wp)}), lb.subagent, lr))
    elif wp.prompt.strip():
        blocks.append(lb.labelled(lb.prompt, quote(wp.prompt.strip("\n"))))
    # Other items on the step (not the anchor payloads) and further payloads.
    for item in step.items:
        wpi = item.workflow
        if wpi is not None and wpi is wp:
            continue
        if wpi is not None and wpi.is_anchor and wpi.id in ctx.sub_map:
            other = ctx.sub_map[wpi.id]
            blocks.append(bold(f"{lb.subagent}{lb.sep}{one_line(other.headline)}"))
            blocks += _sub_body(ctx, other, wpi, other.headline)
            continue
        blocks.append(render_item(ctx, item))
    return join_blocks(blocks)


def render_stub_section(ctx: Ctx, turn: Turn) -> str:
    """`## Sub-agent work (k)` for a subagent_result turn with time-matched payloads."""
    if not turn.stub_runs:
        return ""
    lb = ctx.labels
    count = lb.subagent_count.format(n=len(turn.stub_runs))
    blocks = [f"## {lb.subagent_work}{lb.par(count)}", quote(lb.stub_note)]
    for run in turn.stub_runs:
        wp = run.payload
        block = nested(ctx, wp, 0, frozenset({id(wp)}), lb.subagent, turn.metadata.locked_reason)
        # When the run's own status line gives its time, the launcher's title only.
        own_time = bool(time_range(wp.started_at, wp.completed_at))
        blocks += [
            launcher_line(ctx, wp.id, with_time=not own_time, headline=wp.headline),
            block,
            background_log(ctx, run.log, block),
        ]
    return join_blocks(blocks)
