"""Council steps (§6.6.3): one folded block per model with its rounds, sources and answer."""

from __future__ import annotations

from pplx_export.models import WfPayload, WfStep
from pplx_export.parse.views import QUERIES, SOURCES
from pplx_export.render.context import Ctx
from pplx_export.render.text import (
    bold,
    details,
    join_blocks,
    link,
    one_line,
    summary_text,
    work_md,
)
from pplx_export.render.tree import COUNCIL_MODE, conclusion_of, render_item, step_heading


def council_payloads(step: WfStep) -> list[WfPayload]:
    return [
        wp for item in step.items if (wp := item.workflow) is not None and wp.mode == COUNCIL_MODE
    ]


def _payload_body(ctx: Ctx, wp: WfPayload, answer: str) -> tuple[list[str], int, int]:
    """Every step of a model's run: queries, numbered sources, other items.

    Rendered from the payload itself rather than the parser's rounds, which keep only the
    last query group before each source list.
    """
    inner = ctx.with_answer(answer)
    blocks: list[str] = []
    n_queries = n_sources = rounds = 0
    for step in wp.steps:
        parts: list[str] = []
        searched = False
        for item in step.items:
            if item.kind == QUERIES:
                n_queries += len(item.queries)
                searched = searched or bool(item.queries)
                if item.queries:
                    parts.append("\n".join(f"- `{q}`" for q in item.queries))
            elif item.kind == SOURCES:
                text = item.text.text
                if text.strip():
                    parts.append(text.strip("\n"))
                lines = []
                for s in item.sources:
                    if s.url:
                        n_sources += 1
                        lines.append(f"{n_sources}. {link(s.name, s.url)}")
                if lines:
                    searched = True
                    parts.append("\n".join(lines))
            else:
                rendered = render_item(inner, item)
                if rendered.strip():
                    parts.append(rendered)
        title = one_line(step.title)
        if searched:
            # A search step of the model's run is one council round: numbered, so the rounds
            # of the three models can be told apart and compared.
            rounds += 1
            label = ctx.labels.round_.format(n=rounds)
            title = f"{label} · {title}" if title else label
        if title or parts:
            blocks.append(join_blocks([bold(title), *parts]))
    return blocks, n_queries, n_sources


def _model_block(ctx: Ctx, wp: WfPayload) -> str:
    lb = ctx.labels
    model = wp.model
    sub = ctx.sub_map.get(model) if model else None
    answer = sub.answer if sub is not None and sub.answer.strip() else ""
    if not answer:
        answer = conclusion_of(wp)
    body, n_queries, n_sources = _payload_body(ctx, wp, answer)
    name = one_line((sub.headline if sub else "") or wp.headline or model)
    stat = [
        lb.queries_n.format(n=n_queries),
        lb.sources_n.format(n=n_sources),
        lb.answer_chars.format(n=len(answer)),
    ]
    tag = lb.tag(wp.status, ctx.locked_reason)
    if tag:
        stat.append(tag)
    blocks = [f"{lb.model}{lb.sep}`{model}`" if model else "", *body]
    if answer.strip():
        blocks.append(lb.labelled(lb.model_answer, work_md(answer.strip("\n"))))
    return details(summary_text(name + lb.par(" · ".join(stat))), join_blocks(blocks), ctx.flavor)


def render_council_step(ctx: Ctx, i: int, step: WfStep) -> str:
    lb = ctx.labels
    title = one_line(step.title)
    head = step_heading(ctx, i, step, title=f"{lb.council}" + (f"{lb.sep}{title}" if title else ""))
    # step_heading appends the tool name; the council label already says what it is.
    head = head.replace(lb.par("`council_research`"), "")
    payloads = council_payloads(step)
    blocks = [head]
    models = [wp.model for wp in payloads if wp.model]
    if models:
        blocks.append(f"**{lb.models}{lb.colon}** " + " · ".join(f"`{m}`" for m in models))
    blocks += [_model_block(ctx, wp) for wp in payloads]
    for item in step.items:
        if item.workflow is None or item.workflow.mode != COUNCIL_MODE:
            blocks.append(render_item(ctx, item))
    return join_blocks(blocks)
