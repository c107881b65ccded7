"""turns/turn_NNNN.md: query, plan, complete work process, answer, citations (§6.4)."""

from __future__ import annotations

from pplx_export.models import Turn
from pplx_export.parse.mode_tables import WORKFLOW_MODES
from pplx_export.render.cite import citation_lines, definitions, link_markers, turn_cites
from pplx_export.render.context import Ctx
from pplx_export.render.latex import norm
from pplx_export.render.page import front_matter, nav_line, turn_file
from pplx_export.render.plan import plan_block
from pplx_export.render.steps import novel_steps, render_steps
from pplx_export.render.subagents import render_stub_section
from pplx_export.render.text import demote, finish, join_blocks, model_links, one_line, quote, ts
from pplx_export.render.workflow import render_wf_block


def turn_answer(turn: Turn) -> str:
    return turn.display_answer if turn.display_answer.strip() else turn.answer


def answer_md(ctx: Ctx, text: str) -> str:
    """The answer as shown; conversation.md and the turn file show the same one, and LaTeX
    normalisation of a long answer is worth doing once (memoised per thread)."""
    if not text.strip():
        return ctx.labels.none
    key = ("answer_md", text)
    md: str | None = ctx.memo.get(key)
    if md is None:
        md = ctx.memo[key] = model_links(norm(text.strip("\n")))
    return md


def linked_answer(ctx: Ctx, turn: Turn, inline: bool, top: int) -> str:
    """The answer with its headings from level `top` down (below the page's turn and Answer
    headings) and its `[n]` markers made links to the turn's sources."""
    md = demote(answer_md(ctx, turn_answer(turn)), top)
    return link_markers(md, turn_cites(ctx, turn), inline)


def rewritten_note(ctx: Ctx, turn: Turn) -> str:
    """A note above an answer the platform replaced with an experiment variant (§5.8)."""
    ids = {turn.uuid, turn.backend_uuid} - {""}
    for record in ctx.conv.answer_variants:
        if record.get("entry_uuid") in ids:
            return quote(ctx.labels.answer_rewritten)
    return ""


def turn_heading(ctx: Ctx, turn: Turn, level: str) -> str:
    when = ts(turn.created_us)
    return f"{level} {ctx.labels.turn} {turn.index}" + (f" — {when}" if when else "")


def work_process(ctx: Ctx, turn: Turn) -> str:
    lb = ctx.labels
    if ctx.conv.mode in WORKFLOW_MODES and turn.workflow is not None:
        wf_md = render_wf_block(ctx, turn.workflow)
        extra = novel_steps(ctx, turn.steps, wf_md + "\n" + ctx.answer)
        if not extra:
            return wf_md
        log = join_blocks([f"## {lb.step_log}", quote(lb.step_log_note), render_steps(ctx, extra)])
        return join_blocks([wf_md, log])
    steps = render_steps(ctx, turn.steps)
    return join_blocks([f"## {lb.work_process}", steps]) if steps else ""


def render_turn(ctx: Ctx, turn: Turn) -> str:
    lb = ctx.labels
    answer = turn_answer(turn)
    ctx = ctx.with_turn(answer, turn.metadata.locked_reason)
    shown_answer = linked_answer(ctx, turn, inline=False, top=3)
    here = turn_file(turn.index)
    title = f"{one_line(ctx.conv.title) or lb.untitled} · {lb.turn} {turn.index}"
    blocks = [
        front_matter(ctx.conv, title),
        turn_heading(ctx, turn, "#"),
        nav_line(ctx, here),
        f"## {lb.query}",
        turn.query.strip("\n") if turn.query.strip() else lb.empty,
        plan_block(ctx, {turn.uuid} - {""}, skip=answer, section="entries"),
        work_process(ctx, turn),
        render_stub_section(ctx, turn),
        f"## {lb.answer}",
        rewritten_note(ctx, turn),
        shown_answer,
    ]
    cites = turn_cites(ctx, turn)
    if cites:
        blocks += [
            f"## {lb.turn_citations}",
            citation_lines(cites),
            definitions(cites, shown_answer),
        ]
    return finish(join_blocks(blocks))
