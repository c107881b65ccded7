"""Council steps (§6.6.3): one folded block per model with its rounds, sources and answer."""

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
    summary_text,
)
from pplx_export.render.workflow import conclusion_of, step_heading
from pplx_export.util.lenient import as_str, dicts, first_str


def council_payloads(step: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        wp
        for wp in (it.workflow_payload(item) for item in dicts(step.get("items")))
        if as_str(wp.get("mode")) == "LLM_COUNCIL"
    ]


def _payload_body(ctx: Ctx, wp: dict[str, Any], answer: str) -> tuple[list[str], int, int]:
    """Every step of a model's run: queries, numbered sources, other items.

    Rendered from the payload itself rather than the parser's rounds, which keep only the
    last query group before each source list.
    """
    inner = ctx.with_answer(answer)
    blocks: list[str] = []
    n_queries = n_sources = 0
    for step in dicts(wp.get("steps")):
        parts: list[str] = []
        for item in dicts(step.get("items")):
            kind = as_str(item.get("type"))
            if kind == it.QUERIES:
                queries = it.query_strings(it.payload(item, "queries_payload").get("queries"))
                n_queries += len(queries)
                if queries:
                    parts.append("\n".join(f"- `{q}`" for q in queries))
            elif kind == it.SOURCES:
                text = chunks_text(it.payload(item, "text_payload"))
                if text.strip():
                    parts.append(text.strip("\n"))
                lines = []
                for s in dicts(it.payload(item, "sources_payload").get("sources")):
                    url = first_str(s, "url", "link")
                    if url:
                        n_sources += 1
                        lines.append(f"{n_sources}. {link(first_str(s, 'name', 'title'), url)}")
                if lines:
                    parts.append("\n".join(lines))
            else:
                rendered = it.render_item(inner, item)
                if rendered.strip():
                    parts.append(rendered)
        title = one_line(as_str(step.get("title")))
        if title or parts:
            blocks.append(join_blocks([f"**{title}**" if title else "", *parts]))
    return blocks, n_queries, n_sources


def _model_block(ctx: Ctx, wp: dict[str, Any]) -> str:
    lb = ctx.labels
    model = as_str(wp.get("model"))
    sub = ctx.sub_map.get(model) if model else None
    answer = sub.answer if sub is not None and sub.answer.strip() else ""
    if not answer:
        answer = conclusion_of(wp)
    body, n_queries, n_sources = _payload_body(ctx, wp, answer)
    name = one_line((sub.headline if sub else "") or as_str(wp.get("headline")) or model)
    stat = [
        lb.queries_n.format(n=n_queries),
        lb.sources_n.format(n=n_sources),
        lb.answer_chars.format(n=len(answer)),
    ]
    tag = lb.tag(as_str(wp.get("status")), ctx.locked_reason)
    if tag:
        stat.append(tag)
    blocks = [f"{lb.model}: `{model}`" if model else "", *body]
    if answer.strip():
        blocks.append(f"**{lb.answer}{lb.colon}**\n\n" + model_links(norm(answer.strip("\n"))))
    return details(summary_text(name + lb.par(" · ".join(stat))), join_blocks(blocks))


def render_council_step(ctx: Ctx, i: int, step: dict[str, Any]) -> str:
    lb = ctx.labels
    title = one_line(as_str(step.get("title")))
    head = step_heading(ctx, i, step, title=f"{lb.council}" + (f"{lb.sep}{title}" if title else ""))
    # step_heading appends the tool name; the council label already says what it is.
    head = head.replace(" (`council_research`)", "")
    payloads = council_payloads(step)
    blocks = [head]
    models = [as_str(wp.get("model")) for wp in payloads if as_str(wp.get("model"))]
    if models:
        blocks.append(f"**{lb.models}{lb.colon}** " + " · ".join(f"`{m}`" for m in models))
    blocks += [_model_block(ctx, wp) for wp in payloads]
    for item in dicts(step.get("items")):
        if as_str(it.workflow_payload(item).get("mode")) != "LLM_COUNCIL":
            blocks.append(it.render_item(ctx, item))
    return join_blocks(blocks)
