"""Plain steps of an entry's `text` (protocol.md §3.5, §6.5): one Step -> Markdown."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pplx_export.models import CouncilModel, Step
from pplx_export.render.cite import link_markers_inline
from pplx_export.render.context import Ctx
from pplx_export.render.files import relative
from pplx_export.render.items import source_lines
from pplx_export.render.shown import Shown, item_atoms, step_atoms
from pplx_export.render.text import (
    WORK_TOP,
    demote,
    details,
    fenced,
    join_blocks,
    link,
    one_line,
    payload_fold,
    quote,
    step_time,
    summary_text,
)
from pplx_export.render.tree import render_item

__all__ = ["Shown", "council_model_body", "novel_steps", "render_step", "render_steps"]

SILENT = frozenset({"INITIAL_QUERY", "FINAL", ""})


def _tool(ctx: Ctx, step: Step, label: str) -> str:
    body = join_blocks([render_item(ctx, item) for item in step.body.items])
    if not body:
        return ""
    when = step_time(step.body.time)
    return f"**{label}**" + (ctx.labels.par(when) if when else "") + "\n\n" + body


def _code(ctx: Ctx, step: Step) -> str:
    lb, b = ctx.labels, step.body
    lang = b.language
    parts = []
    script = b.script.rstrip()
    if script:
        parts.append(
            f"**{lb.code}**" + (lb.par(lang) if lang else "") + "\n\n" + fenced(script, lang)
        )
    out = b.stdout.rstrip()
    if out:
        parts.append(f"**{lb.output}**\n\n" + fenced(out))
    err = b.stderr.rstrip()
    if err:
        parts.append(f"**{lb.error_output}**\n\n" + fenced(err))
    return join_blocks(parts)


def _council_round(step: Step) -> str:
    """A COUNCIL_ROUND's queries and numbered sources (the caller labels the round)."""
    lines = [f"- `{q}`" for q in step.body.queries]
    lines += [f"  {n}. {link(src.name, src.url)}" for n, src in step.body.numbered]
    return "\n".join(lines)


def _council_research(ctx: Ctx, step: Step) -> str:
    """The plain council step: every model's own search steps and answer, folded per model."""
    lb = ctx.labels
    query = step.body.research_query.strip()
    blocks = [f"**{lb.council_research}**" + (f"{lb.sep}{one_line(query)}" if query else "")]
    for state in step.body.models:
        summary = f"{lb.model}{lb.sep}{state.model}" + (
            lb.par(state.status) if state.status else ""
        )
        body = council_model_body(ctx, state)
        blocks.append(details(summary_text(summary), body, ctx.flavor))
    return join_blocks(blocks)


def council_model_body(ctx: Ctx, state: CouncilModel) -> str:
    """One model of a plain council step: its thought, its own steps (rounds numbered) and
    its answer. Also what a workflow model fold shows of the model's step-log entry."""
    lb = ctx.labels
    body = [quote(demote(state.mock_thought, WORK_TOP))] if state.mock_thought else []
    rounds = 0
    urls: dict[int, str] = {}  # the model's sources numbered on across its rounds
    for s in state.steps:
        if s.step_type == "SEARCH_RESULTS" and s.body.links:
            body.append(_numbered_results(ctx, s, urls))
            continue
        rendered = render_step(ctx, s)
        if s.step_type == "COUNCIL_ROUND" and rendered:
            rounds += 1
            rendered = f"**{lb.round_.format(n=rounds)}**\n\n" + rendered
        body.append(rendered)
    if state.answer.strip():
        answer = demote(state.answer.strip("\n"), WORK_TOP)
        # Its `[n]` count in its own sources (numbered above), not in the turn's answer's.
        answer = link_markers_inline(answer, urls)
        body.append(lb.labelled(lb.model_answer, answer))
    return join_blocks(body)


def _numbered_results(ctx: Ctx, step: Step, urls: dict[int, str]) -> str:
    """A council model's search results, numbered on from its earlier ones (as the model
    counts them in its `[n]`); `urls` gains each number's address."""
    lines = []
    for s in step.body.links:
        if s.url:
            n = len(urls) + 1
            urls[n] = s.url
            lines.append(f"{n}. {link(s.name, s.url)}")
        elif s.name.strip():
            lines.append(f"- {s.name.strip()}")
    title = ctx.labels.search_results + ctx.labels.par(str(len(lines)))
    return details(title, "\n".join(lines), ctx.flavor)


def _list(title: str, lines: list[str]) -> str:
    return f"**{title}**\n\n" + "\n".join(lines) if lines else ""


def render_step(ctx: Ctx, step: Step) -> str:
    """One plain step; "" for steps with nothing to show, a placeholder for unknown types."""
    lb, b = ctx.labels, step.body
    kind = step.step_type
    if kind in SILENT:
        return ""
    if kind == "ASI_TOOL_INPUT":
        return _tool(ctx, step, lb.tool_input)
    if kind == "ASI_TOOL_OUTPUT":
        return _tool(ctx, step, lb.tool_output)
    if kind == "THOUGHT":
        return (
            f"**{lb.thinking}**\n\n" + quote(demote(b.text.strip("\n"), WORK_TOP))
            if b.text.strip()
            else ""
        )
    if kind == "SEARCH_WEB":
        return _list(lb.web_search, [f"- {q}" for q in b.queries])
    if kind == "SEARCH_RESULTS":
        lines = source_lines(b.links)
        return (
            details(lb.search_results + lb.par(str(len(lines))), "\n".join(lines), ctx.flavor)
            if lines
            else ""
        )
    if kind == "GET_URL_CONTENT":
        return _list(lb.read_pages, [f"- {link(u, u)}" for u in b.urls])
    if kind in ("LOAD_SKILL", "LOAD_SKILL_RESPONSE"):
        return f"**{kind}**{lb.sep}" + ", ".join(b.names)
    if kind == "RESEARCH_ANSWER":
        line = f"**{lb.research_report}**{lb.sep}{one_line(b.title)}"
        extra = [f"`{b.file_name}`"] if b.file_name else []
        if ctx.conv.report is not None:
            # The archived report, not the signed URL (it expires).
            extra.append(link(lb.report_title, relative("report.md", ctx.page), ctx.flavor))
        elif b.url:
            extra.append(link(b.url, b.url))
        return line + (" — " + " · ".join(extra) if extra else "")
    if kind == "CODE":
        return _code(ctx, step)
    if kind == "ATTACHMENT":
        lines = []
        for a in b.links:
            if a.url:
                lines.append("- " + link(a.name, a.url))
            elif a.name:
                lines.append(f"- {a.name}")
        return _list(lb.attachments, lines)
    if kind == "URL_NAVIGATE":
        return _list(lb.open_pages, [f"- {link(u, u)}" for u in b.urls])
    if kind == "CREATE_CHART":
        caption = b.caption.strip()
        return f"**{lb.create_chart}**" + (f"{lb.sep}{caption}" if caption else "")
    if kind == "GENERATE_IMAGE_RESULTS":
        lines = [
            f"- {link(img.url, img.url)}"
            + (lb.par(f"{img.width}×{img.height}") if img.width and img.height else "")
            for img in b.images
        ]
        return _list(lb.images, lines)
    if kind == "COUNCIL_ROUND":
        return _council_round(step)
    if kind == "COUNCIL_RESEARCH":
        return _council_research(ctx, step)
    if kind == "TERMINATE" and set(step.content) <= {"goal_id"}:
        # The end marker of a pro search (§9.7) says nothing a reader needs; one that
        # carries more than its goal falls through, so what it carries is shown.
        return ""
    # The payload under the placeholder: what search finds in it, the reader sees.
    payload = step.content or {k: v for k, v in step.raw.items() if k != "step_type"}
    return join_blocks(
        [f"**{kind}** *({lb.unrendered})*", payload_fold(lb.payload_json, payload, ctx.flavor)]
    )


def render_steps(ctx: Ctx, steps: Sequence[Step]) -> str:
    """Every non-empty step rendering, separated by blank lines."""
    return join_blocks([render_step(ctx, s) for s in steps])


def novel_steps(ctx: Ctx, steps: Sequence[Step], shown_md: str) -> list[Step]:
    """The parts of `steps` whose content atoms are not all in `shown_md` (render/shown.py).

    Workflow blocks are a second, sometimes lagging copy of an entry's plain steps; rendering
    both in full would double every turn, rendering one alone can lose content. Tool steps
    are filtered item by item, list-like steps element by element, other steps whole.
    """
    return _novel(steps, Shown(shown_md))


def _novel(steps: Sequence[Step], shown: Shown) -> list[Step]:
    out: list[Step] = []
    for step in steps:
        kind, b = step.step_type, step.body
        if kind == "COUNCIL_RESEARCH":
            reduced = _novel_council(step, shown)
            if reduced is not None:
                out.append(reduced)
        elif kind in ("ASI_TOOL_INPUT", "ASI_TOOL_OUTPUT") and b.items:
            items = [i for i in b.items if not shown.covers(item_atoms(i))]
            if items:
                out.append(replace(step, body=replace(b, items=items)))
        # List-like steps are filtered element by element (blank elements count as shown).
        elif kind == "SEARCH_WEB":
            queries = [q for q in b.queries if q not in shown]
            if queries:
                out.append(replace(step, body=replace(b, queries=queries)))
        elif kind == "SEARCH_RESULTS":
            links = [r for r in b.links if not shown.covers((r.name, r.url))]
            if links:
                out.append(replace(step, body=replace(b, links=links)))
        elif kind in ("GET_URL_CONTENT", "URL_NAVIGATE"):
            urls = [u for u in b.urls if u not in shown]
            if urls:
                out.append(replace(step, body=replace(b, urls=urls)))
        elif not shown.covers(step_atoms((step,))):
            out.append(step)
    return out


def _novel_council(step: Step, shown: Shown) -> Step | None:
    """A COUNCIL_RESEARCH step reduced to the model steps and answers not yet shown."""
    models: list[CouncilModel] = []
    for state in step.body.models:
        steps = _novel(state.steps, shown)
        answer = "" if state.answer in shown else state.answer
        thought = "" if state.mock_thought in shown else state.mock_thought
        if steps or answer or thought:
            models.append(CouncilModel(state.model, thought, steps, answer, state.status))
    if not models:
        return None
    return replace(step, body=replace(step.body, models=models))
