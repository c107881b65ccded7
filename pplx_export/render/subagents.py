"""Sub-agent steps (§6.6.1-6.6.2) and the stub-turn sub-agent section (§6.4)."""

from __future__ import annotations

from typing import Any

from pplx_export.models import SubAgent, Turn
from pplx_export.render import items as it
from pplx_export.render.background import background_log, background_payloads, launcher_line
from pplx_export.render.context import Ctx
from pplx_export.render.latex import norm
from pplx_export.render.plan import plan_block
from pplx_export.render.steps import novel_steps, render_steps
from pplx_export.render.text import (
    details,
    join_blocks,
    link,
    model_links,
    one_line,
    quote,
    time_range,
)
from pplx_export.render.workflow import nested, nested_body
from pplx_export.util.lenient import as_list, as_str, dicts


def anchor_payloads(step: dict[str, Any]) -> list[dict[str, Any]]:
    """The workflow payloads on a step's items that launch a sub-agent."""
    return [
        wp
        for wp in (it.workflow_payload(item) for item in dicts(step.get("items")))
        if it.is_anchor(wp)
    ]


def is_subagent_step(step: dict[str, Any]) -> bool:
    return (
        as_str(step.get("tool_name")) == "run_subagent"
        or as_str(step.get("icon")) == "subagent"
        or any(it.is_anchor(it.workflow_payload(item)) for item in dicts(step.get("items")))
    )


def sub_id(step: dict[str, Any], wp: dict[str, Any]) -> str:
    return as_str(wp.get("id")) or as_str(step.get("id")).removesuffix(":workflow")


def _sub_body(ctx: Ctx, sub: SubAgent, wp: dict[str, Any]) -> list[str]:
    """Prompt, plan, work process, conclusion and citations of a mapped sub-agent."""
    lb = ctx.labels
    meta = [f"{lb.run_id}: `{sub.sub_id}`"]
    if sub.status:
        meta.append(f"{lb.status}: `{sub.status}`")
    model = as_str(wp.get("model"))
    if model:
        meta.append(f"{lb.model}: `{model}`")
    blocks = [quote(" · ".join(meta)), launcher_line(ctx, sub.sub_id)]
    prompt = sub.prompt or it.prompt_of(wp)
    if prompt.strip():
        blocks.append(f"**{lb.prompt}{lb.colon}**\n\n" + quote(prompt.strip("\n")))
    blocks.append(plan_block(ctx, {sub.thread_uuid} - {""}, skip=sub.answer))
    # Two copies of the run exist: the workflow payload in the launching turn (titled steps,
    # may lag) and the background entry's step log (the parser's sub.steps). The payload is
    # shown first; the log adds what the payload lacks (everything, when the payload is empty).
    seen = frozenset({sub.sub_id})
    copies = [p for p in background_payloads(ctx, sub.sub_id) if dicts(p.get("steps"))]
    primary = copies[0] if copies else wp
    parts, conclusion, cited = nested_body(ctx, primary, 0, seen)
    shown_md = join_blocks(parts)
    for other in [*copies[1:], wp] if copies else []:
        more, more_conclusion, more_cited = nested_body(ctx, other, 0, seen, shown_md)
        conclusion = conclusion if conclusion.strip() else more_conclusion
        cited += [c for c in more_cited if c not in cited]
        parts += more
        shown_md = join_blocks(parts)
    if parts:
        n = len(dicts(primary.get("steps")))
        blocks.append(details(lb.subagent_payload_steps + lb.par(lb.steps_n.format(n=n)), shown_md))
    # Citations are listed once at the end; they count as shown for the step log too.
    extra = novel_steps(ctx, sub.steps, join_blocks([shown_md, *cited]))
    rendered = render_steps(ctx, extra)
    if rendered:
        blocks.append(
            details(lb.subagent_steps + lb.par(lb.steps_n.format(n=len(extra))), rendered)
        )
    answer = sub.answer if sub.answer.strip() else conclusion
    if answer.strip():
        blocks.append(f"**{lb.conclusion}{lb.colon}**\n\n" + model_links(norm(answer.strip("\n"))))
    if conclusion.strip() and answer.strip() != conclusion.strip():
        blocks.append(model_links(norm(conclusion.strip("\n"))))
    lines = ["- " + link(c.name, c.url) for c in sub.sources if c.url]
    known = set(lines)
    lines += [c for c in cited if c not in known]
    if lines:
        blocks.append(details(lb.sources + lb.par(str(len(lines))), "\n".join(lines)))
    return blocks


def render_subagent_step(ctx: Ctx, i: int, step: dict[str, Any]) -> str:
    lb = ctx.labels
    anchors = anchor_payloads(step) or [it.workflow_payload(i_) for i_ in dicts(step.get("items"))]
    wp = anchors[0] if anchors else {}
    sid = sub_id(step, wp)
    sub = ctx.sub_map.get(sid)
    if sub is not None:
        headline = sub.headline or as_str(wp.get("headline")) or as_str(step.get("title"))
        status, lr = sub.status, sub.locked_reason
        start = sub.started_at or as_str(wp.get("started_at")) or as_str(step.get("started_at"))
        end = sub.completed_at or as_str(wp.get("completed_at"))
    else:
        headline = as_str(wp.get("headline")) or as_str(step.get("title"))
        status, lr = as_str(wp.get("status")), ctx.locked_reason
        start = as_str(wp.get("started_at")) or as_str(step.get("started_at"))
        end = as_str(wp.get("completed_at")) or as_str(step.get("completed_at"))
    head = f"### {lb.step} {i} · {lb.subagent}{lb.sep}{one_line(headline)}" + time_range(start, end)
    tag = lb.tag(status, lr)
    if tag:
        head += f" · {tag}"
    blocks = [head]
    if sub is not None:
        blocks += _sub_body(ctx, sub, wp)
    else:
        if wp and dicts(wp.get("steps")):
            seen = frozenset({sid} - {""})
            blocks.append(nested(ctx, wp, 0, seen, lb.subagent, lr))
        elif it.prompt_of(wp).strip():
            blocks.append(f"**{lb.prompt}{lb.colon}**\n\n" + quote(it.prompt_of(wp).strip("\n")))
    # Other items on the step (not the anchor payloads) and further payloads.
    for item in as_list(step.get("items")):
        wpi = it.workflow_payload(item) if isinstance(item, dict) else {}
        if wpi is wp:
            continue
        if wpi and it.is_anchor(wpi) and as_str(wpi.get("id")) in ctx.sub_map:
            other = ctx.sub_map[as_str(wpi.get("id"))]
            blocks.append(f"**{lb.subagent}: {one_line(other.headline)}**")
            blocks += _sub_body(ctx, other, wpi)
            continue
        blocks.append(it.render_item(ctx, item))
    return join_blocks(blocks)


def render_stub_section(ctx: Ctx, turn: Turn) -> str:
    """`## Sub-agent work (k)` for a subagent_result turn with time-matched payloads."""
    if not turn.stub_wfs:
        return ""
    lb = ctx.labels
    count = lb.subagent_count.format(n=len(turn.stub_wfs))
    blocks = [f"## {lb.subagent_work}{lb.par(count)}", quote(lb.stub_note)]
    for wp in turn.stub_wfs:
        seen = frozenset({as_str(wp.get("id"))} - {""})
        block = nested(ctx, wp, 0, seen, lb.subagent, turn.metadata.locked_reason)
        blocks += [launcher_line(ctx, as_str(wp.get("id"))), block, background_log(ctx, wp, block)]
    return join_blocks(blocks)
