"""turns/turn_NNNN.md: query, plan, complete work process, answer, citations (§6.4)."""

from __future__ import annotations

from pplx_export.models import Turn
from pplx_export.parse.mode_tables import WORKFLOW_MODES
from pplx_export.render.cite import (
    citation_lines,
    definitions,
    footnote_definitions,
    footnote_markers,
    link_markers,
    turn_cites,
)
from pplx_export.render.context import Ctx
from pplx_export.render.council import folded_answers, folded_models, split_council_log
from pplx_export.render.files import file_lines, relative, unlinked
from pplx_export.render.latex import norm
from pplx_export.render.media import media_section, with_inline_media
from pplx_export.render.page import front_matter, nav_line, turn_file
from pplx_export.render.plan import plan_block, plan_goals, step_titles
from pplx_export.render.steps import Shown, novel_steps, render_steps
from pplx_export.render.subagents import render_stub_section
from pplx_export.render.text import (
    OBSIDIAN,
    demote,
    finish,
    join_blocks,
    link,
    model_links,
    one_line,
    quote,
    ts,
)
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
    headings) and its `[n]` markers made links to the turn's sources. A turn that lost its
    answer or sources to a shape this version does not read says so (§9.1), never "(none)"."""
    notes = join_blocks([imported_note(ctx, turn), loss_notes(ctx, turn)])
    answer = turn_answer(turn)
    if not answer.strip() and notes:
        return join_blocks([with_inline_media(ctx, turn, ""), notes])
    md = with_inline_media(ctx, turn, demote(answer_md(ctx, answer), top))
    cites = turn_cites(ctx, turn)
    if ctx.flavor == OBSIDIAN:
        prefix = footnote_prefix(ctx, turn, inline)
        md = footnote_markers(md, cites, prefix)
        if inline:
            # conversation.md holds several answers: each defines its footnotes under it.
            md = join_blocks([md, footnote_definitions(cites, md, prefix)])
    else:
        md = link_markers(md, cites, inline)
    return join_blocks([md, notes]) if notes else md


def footnote_prefix(ctx: Ctx, turn: Turn, inline: bool) -> str:
    """What keeps the footnote labels of one page unique: a turn file holds one answer
    (`[^3]`); conversation.md holds every turn's (`[^2-3]`, unless there is only one)."""
    return f"{turn.index}-" if inline and len(ctx.conv.turns) > 1 else ""


def imported_note(ctx: Ctx, turn: Turn) -> str:
    """A turn recovered from Perplexity's own data export (§9.8): its `[n]` markers stay
    as text, since the export carries no sources to link them to."""
    return quote(ctx.labels.answer_imported) if turn.metadata.imported_from else ""


def loss_notes(ctx: Ctx, turn: Turn) -> str:
    lb = ctx.labels
    lines = [
        (lb.answer_lost if loss.kind == "answer" else lb.sources_lost).format(
            size=f"{loss.size:,}", where=loss.where
        )
        for loss in turn.losses
    ]
    return join_blocks([quote(line) for line in lines])


def related_section(ctx: Ctx, turn: Turn) -> str:
    """`## Related`: the next questions the platform suggested (`related_queries`)."""
    if not turn.related:
        return ""
    return join_blocks(
        [f"## {ctx.labels.related}", "\n".join(f"- {one_line(q)}" for q in turn.related)]
    )


def rewritten_note(ctx: Ctx, turn: Turn) -> str:
    """A note above an answer the platform replaced with an experiment variant (§5.8)."""
    ids = {turn.uuid, turn.backend_uuid} - {""}
    for record in ctx.conv.answer_variants:
        if record.get("entry_uuid") in ids:
            if ctx.memo.get(HAND_ARCHIVED):
                target = link(VARIANT_FILE, relative(VARIANT_FILE, ctx.page), ctx.flavor)
                return quote(ctx.labels.answer_rewritten_kept.format(link=target))
            return quote(ctx.labels.answer_rewritten)
    return ""


# The file a user saves the original of a rewritten answer in, beside conversation.md, and
# the ctx.memo key that says the thread has one (render_thread's `variant_saved`).
VARIANT_FILE = "rewritten_answer_variant.md"
HAND_ARCHIVED = "variant_saved"


def turn_heading(ctx: Ctx, turn: Turn, level: str, target: str = "") -> str:
    """`## Turn N — time`; with `target`, the heading is a link to the turn's own page
    (conversation.md: one click to any turn's work process)."""
    when = ts(turn.created_us)
    text = f"{ctx.labels.turn} {turn.index}" + (f" — {when}" if when else "")
    return f"{level} {link(text, target, ctx.flavor) if target else text}"


def work_process(ctx: Ctx, turn: Turn) -> str:
    lb = ctx.labels
    if ctx.conv.mode in WORKFLOW_MODES and turn.workflow is not None:
        wf_md = render_wf_block(ctx, turn.workflow)
        # A council model's answer is on the page with its `[n]` made links: compared as
        # written, so the step log's copy of it is not taken for something new.
        answers = folded_answers(ctx, turn.workflow)
        extra = novel_steps(ctx, turn.steps, "\n".join([wf_md, ctx.answer, answers]))
        folded = folded_models(turn.workflow)
        if folded and any(s.step_type == "COUNCIL_RESEARCH" for s in extra):
            # A council model's step-log entry goes into that model's own fold, where a
            # reader following the model looks for it, not into a section of its own.
            shown = Shown("\n".join([wf_md, ctx.answer, turn.query]))
            extra, moved = split_council_log(extra, folded, shown)
            wf_md = render_wf_block(ctx, turn.workflow, moved)
        if not extra:
            return wf_md
        log = join_blocks([f"## {lb.step_log}", quote(lb.step_log_note), render_steps(ctx, extra)])
        return join_blocks([wf_md, log])
    steps = render_steps(ctx, turn.steps)
    return join_blocks([f"## {lb.work_process}", steps]) if steps else ""


def turn_files(ctx: Ctx, turn: Turn, page: str) -> str:
    """`## Files`: what the turn produced that no step of the page has linked already."""
    files = unlinked(ctx.labels, ctx.files, ctx.files.of_entry(turn.uuid), ctx.page, page)
    if not files:
        return ""
    lines = file_lines(ctx.labels, ctx.files, files, ctx.page, ctx.flavor)
    return join_blocks([f"## {ctx.labels.files}", lines])


def render_turn(ctx: Ctx, turn: Turn) -> str:
    lb = ctx.labels
    answer = turn_answer(turn)
    ctx = ctx.with_turn(answer, turn.metadata.locked_reason)
    shown_answer = linked_answer(ctx, turn, inline=False, top=3)
    here = turn_file(turn.index)
    title = f"{one_line(ctx.conv.title) or lb.untitled} · {lb.turn} {turn.index}"
    work = work_process(ctx, turn)
    stubs = render_stub_section(ctx, turn)
    # A computer or council plan shows only goals that are not a step's title (deep-research
    # and study plans are the only outline of their research: kept whole).
    titles = None
    uuids = {turn.uuid} - {""}
    if ctx.conv.mode in WORKFLOW_MODES and plan_goals(ctx, uuids, "entries"):
        payloads = [turn.workflow, *(run.payload for run in turn.stub_runs)]
        titles = step_titles(payloads, turn.steps)
    blocks = [
        front_matter(ctx.conv, title),
        turn_heading(ctx, turn, "#"),
        nav_line(ctx, here),
        f"## {lb.query}",
        turn.query.strip("\n") if turn.query.strip() else lb.empty,
        plan_block(
            ctx,
            uuids,
            skip=answer,
            section="entries",
            titles=titles,
            shown_md=join_blocks([work, stubs]) if titles is not None else "",
        ),
        work,
        stubs,
        f"## {lb.answer}",
        rewritten_note(ctx, turn),
        shown_answer,
        media_section(ctx, turn),
        related_section(ctx, turn),
    ]
    if ctx.files.of_entry(turn.uuid):  # most turns made no file: no need to join the page
        blocks.append(turn_files(ctx, turn, join_blocks(blocks)))
    cites = turn_cites(ctx, turn)
    if cites:
        blocks += [
            f"## {lb.turn_citations}",
            citation_lines(cites),
            footnote_definitions(cites, shown_answer)
            if ctx.flavor == OBSIDIAN
            else definitions(cites, shown_answer),
        ]
    return finish(join_blocks(blocks))
