"""Sub-agent steps (§6.6.1-6.6.2) and the stub-turn sub-agent section (§6.4)."""

from __future__ import annotations

from pplx_export.models import SubAgent, Turn, WfPayload, WfStep
from pplx_export.render.background import background_log, background_payloads, launcher_line
from pplx_export.render.context import Ctx
from pplx_export.render.latex import norm
from pplx_export.render.plan import plan_block
from pplx_export.render.steps import novel_steps, render_steps
from pplx_export.render.text import (
    WORK_TOP,
    bold,
    demote,
    details,
    join_blocks,
    link,
    model_links,
    one_line,
    quote,
    time_range,
)
from pplx_export.render.tree import nested, nested_body, render_item


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


def _sub_body(ctx: Ctx, sub: SubAgent, wp: WfPayload) -> list[str]:
    """Prompt, plan, work process, conclusion and citations of a mapped sub-agent."""
    lb = ctx.labels
    meta = [f"{lb.run_id}{lb.sep}`{sub.sub_id}`"]
    if sub.status:
        meta.append(f"{lb.status}{lb.sep}`{sub.status}`")
    if wp.model:
        meta.append(f"{lb.model}{lb.sep}`{wp.model}`")
    blocks = [quote(" · ".join(meta)), launcher_line(ctx, sub.sub_id)]
    prompt = sub.prompt or wp.prompt
    if prompt.strip():
        blocks.append(f"**{lb.prompt}{lb.colon}**\n\n" + quote(prompt.strip("\n")))
    blocks.append(plan_block(ctx, {sub.thread_uuid} - {""}, skip=sub.answer))
    # Two copies of the run exist: the workflow payload in the launching turn (titled steps,
    # may lag) and the background entry's step log (the parser's sub.steps). The payload is
    # shown first; the log adds what the payload lacks (everything, when the payload is empty).
    copies = [p for p in background_payloads(ctx, sub.sub_id) if p.steps]
    primary = copies[0] if copies else wp
    seen = frozenset({id(wp), *(id(c) for c in copies)})
    parts, conclusion, cited = nested_body(ctx, primary, 0, seen)
    shown_md = join_blocks(parts)
    for other in [*copies[1:], wp] if copies else []:
        more, more_conclusion, more_cited = nested_body(ctx, other, 0, seen, shown_md)
        conclusion = conclusion if conclusion.strip() else more_conclusion
        cited += [c for c in more_cited if c not in cited]
        parts += more
        shown_md = join_blocks(parts)
    if parts:
        n = len(primary.steps)
        blocks.append(
            details(
                lb.subagent_payload_steps + lb.par(lb.steps_n.format(n=n)), shown_md, ctx.flavor
            )
        )
    # Citations are listed once at the end; they count as shown for the step log too.
    extra = novel_steps(ctx, sub.steps, join_blocks([shown_md, *cited]))
    rendered = render_steps(ctx, extra)
    if rendered:
        blocks.append(
            details(
                lb.subagent_steps + lb.par(lb.steps_n.format(n=len(extra))), rendered, ctx.flavor
            )
        )
    answer = sub.answer if sub.answer.strip() else conclusion
    if answer.strip():
        blocks.append(
            f"**{lb.subagent_conclusion}{lb.colon}**\n\n"
            + demote(model_links(norm(answer.strip("\n"))), WORK_TOP)
        )
    if conclusion.strip() and answer.strip() != conclusion.strip():
        blocks.append(demote(model_links(norm(conclusion.strip("\n"))), WORK_TOP))
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
        blocks += _sub_body(ctx, sub, wp)
    elif wp.steps:
        blocks.append(nested(ctx, wp, 0, frozenset({id(wp)}), lb.subagent, lr))
    elif wp.prompt.strip():
        blocks.append(f"**{lb.prompt}{lb.colon}**\n\n" + quote(wp.prompt.strip("\n")))
    # Other items on the step (not the anchor payloads) and further payloads.
    for item in step.items:
        wpi = item.workflow
        if wpi is not None and wpi is wp:
            continue
        if wpi is not None and wpi.is_anchor and wpi.id in ctx.sub_map:
            other = ctx.sub_map[wpi.id]
            blocks.append(bold(f"{lb.subagent}{lb.sep}{one_line(other.headline)}"))
            blocks += _sub_body(ctx, other, wpi)
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
        blocks += [launcher_line(ctx, wp.id), block, background_log(ctx, run.log, block)]
    return join_blocks(blocks)
