"""Workflow blocks (computer/council): step dispatch and nested workflow blocks (§6.6)."""

from __future__ import annotations

from typing import Any

from pplx_export.render import items as it
from pplx_export.render.context import Ctx
from pplx_export.render.latex import norm
from pplx_export.render.text import (
    chunks_text,
    details,
    join_blocks,
    link,
    model_links,
    one_line,
    quote,
    summary_text,
    time_range,
)
from pplx_export.util.lenient import as_dict, as_list, as_str, dicts, first_str


def step_label(ctx: Ctx, step: dict[str, Any]) -> str:
    """`**title** (`tool`)` for a step inside a nested block ("" when it has neither)."""
    title = one_line(as_str(step.get("title")))
    tool = as_str(step.get("tool_name"))
    label = f"**{title}**" if title else ""
    if tool:
        label += f" (`{tool}`)" if label else f"(`{tool}`)"
    return label


def conclusion_of(wp: dict[str, Any]) -> str:
    """The payload's last non-blank answer text (the nested run's conclusion)."""
    found = ""
    for step in dicts(wp.get("steps")):
        for item in dicts(step.get("items")):
            if as_str(item.get("type")) != it.TEXT:
                continue
            tp = it.payload(item, "text_payload")
            text = chunks_text(tp)
            variant = as_str(tp.get("variant")) or as_str(item.get("variant"))
            if variant == "answer" and text.strip():
                found = text
    return found


def nested_body(
    ctx: Ctx,
    wp: dict[str, Any],
    depth: int,
    seen: frozenset[str],
    shown_md: str | None = None,
) -> tuple[list[str], str, list[str]]:
    """(body parts, conclusion, citation lines) of a nested workflow payload.

    With `shown_md`, items whose content is already there are left out (a second copy of
    the same run); step titles stay so the outline of the run remains visible.
    """
    # Imported here: steps.py renders workflow items, which render nested blocks.
    from pplx_export.render.steps import Shown, content_only

    shown = Shown(shown_md) if shown_md is not None else None
    bare = content_only(ctx)
    conclusion = conclusion_of(wp)
    inner = ctx.with_answer(conclusion)
    parts: list[str] = []
    cited: list[str] = []
    urls: set[str] = set()
    for step in dicts(wp.get("steps")):
        step_parts: list[str] = []
        for item in dicts(step.get("items")):
            if as_str(item.get("type")) == it.SOURCES:
                text = chunks_text(it.payload(item, "text_payload"))
                if text.strip():
                    step_parts.append(norm(text.strip("\n")))
                for s in dicts(it.payload(item, "sources_payload").get("sources")):
                    url = first_str(s, "url", "link")
                    if url and url not in urls:
                        urls.add(url)
                        cited.append("- " + link(first_str(s, "name", "title"), url))
                continue
            if shown is not None and it.render_item(bare, item, depth + 1, seen) in shown:
                continue
            rendered = it.render_item(inner, item, depth + 1, seen)
            if rendered.strip():
                step_parts.append(rendered)
        label = step_label(ctx, step)
        tag = ctx.labels.tag(as_str(step.get("status")), ctx.locked_reason)
        if tag:
            label = f"{label} · {tag}" if label else tag
        if shown is not None and not step_parts and (not label or label in shown):
            continue  # a second copy's step with nothing new
        if label or step_parts:
            parts.append(join_blocks([label, *step_parts]))
    return parts, conclusion, cited


def nested(
    ctx: Ctx,
    wp: dict[str, Any],
    depth: int,
    seen: frozenset[str],
    label: str,
    locked_reason: str | None = None,
) -> str:
    """A nested workflow payload as a folded block with its conclusion and citations."""
    lb = ctx.labels
    lr = ctx.locked_reason if locked_reason is None else locked_reason
    ctx = ctx.with_locked_reason(lr)
    parts, conclusion, cited = nested_body(ctx, wp, depth, seen)
    n_steps = len(dicts(wp.get("steps")))
    stat = (
        lb.steps_n.format(n=n_steps)
        + " · "
        + (lb.has_conclusion if conclusion else lb.no_conclusion)
    )
    if cited:
        stat += " · " + lb.citations_n.format(n=len(cited))
    tag = lb.tag(as_str(wp.get("status")), lr)
    if tag:
        stat += f" · {tag}"
    headline = as_str(wp.get("headline")).strip() or lb.untitled
    summary = summary_text(f"{label}{lb.sep}{headline}{lb.par(stat)}")

    meta = []
    status = as_str(wp.get("status"))
    if status:
        meta.append(f"{lb.status}: `{status}`")
    model = as_str(wp.get("model"))
    if model:
        meta.append(f"{lb.model}: `{model}`")
    span = time_range(wp.get("started_at"), wp.get("completed_at"))
    if span:
        meta.append(f"{lb.time}:{span.removeprefix(' —')}")
    blocks = [quote(" · ".join(meta))] if meta else []
    prompt = it.prompt_of(wp)
    if prompt.strip():
        blocks.append(f"**{lb.prompt}{lb.colon}**\n\n" + quote(prompt.strip("\n")))
    blocks += parts if parts else [lb.no_steps]
    if conclusion.strip():
        blocks.append(
            f"**{lb.conclusion}{lb.colon}**\n\n" + model_links(norm(conclusion.strip("\n")))
        )
    if cited:
        blocks.append(f"**{lb.sources}{lb.colon}**\n\n" + "\n".join(cited))
    return details(summary, join_blocks(blocks))


def step_heading(ctx: Ctx, i: int, step: dict[str, Any], title: str = "") -> str:
    """`### Step i · title (`tool`) — start → end · tag`."""
    lb = ctx.labels
    title = title or one_line(as_str(step.get("title")))
    head = f"### {lb.step} {i}" + (f" · {title}" if title else "")
    tool = as_str(step.get("tool_name"))
    if tool:
        head += f" (`{tool}`)"
    head += time_range(step.get("started_at"), step.get("completed_at"))
    tag = lb.tag(as_str(step.get("status")), ctx.locked_reason)
    if tag:
        head += f" · {tag}"
    return head


def render_generic_step(ctx: Ctx, i: int, step: dict[str, Any]) -> str:
    body = [it.render_item(ctx, item) for item in as_list(step.get("items"))]
    return join_blocks([step_heading(ctx, i, step), *body])


def render_wf_step(ctx: Ctx, i: int, step: Any) -> str:
    """One top-level workflow step: council, sub-agent, or generic."""
    # Imported here: both modules render their bodies through this one.
    from pplx_export.render import council, subagents

    if not isinstance(step, dict):
        return ""
    if as_str(step.get("tool_name")) == "council_research":
        return council.render_council_step(ctx, i, step)
    if subagents.is_subagent_step(step):
        return subagents.render_subagent_step(ctx, i, step)
    return render_generic_step(ctx, i, step)


def render_wf_block(ctx: Ctx, wf: dict[str, Any]) -> str:
    """`## Work process (N steps · STATUS · tag)` and every step of a workflow block."""
    lb = ctx.labels
    steps = as_list(wf.get("steps"))
    status = as_str(wf.get("status"))
    stat = [lb.steps_n.format(n=len(steps))]
    if status:
        stat.append(status)
    tag = lb.tag(status, ctx.locked_reason)
    if tag:
        stat.append(tag)
    blocks = [f"## {lb.work_process}{lb.par(' · '.join(stat))}"]
    headline = as_str(as_dict(wf).get("headline")).strip()
    if headline:
        blocks.append(f"**{one_line(headline)}**")
    blocks += [render_wf_step(ctx, i, step) for i, step in enumerate(steps, 1)]
    return join_blocks(blocks)
