"""conversation.md: header, every turn's query and full answer, background appendix (§6.3)."""

from __future__ import annotations

from pplx_export.models import AppendixItem, Turn
from pplx_export.render.background import background_log, launcher_line
from pplx_export.render.context import Ctx
from pplx_export.render.files import file_line
from pplx_export.render.page import front_matter, nav_line, source_count, turn_file
from pplx_export.render.plan import plan_block, plan_goals, step_titles
from pplx_export.render.text import (
    OBSIDIAN,
    escape_inline,
    finish,
    join_blocks,
    link,
    one_line,
    quote,
    step_time,
    ts,
)
from pplx_export.render.tree import nested
from pplx_export.render.turn import linked_answer, rewritten_note, turn_answer, turn_heading

# A thread with more turns than this gets a turn list under its header.
TURN_LIST_FROM = 4
# Words of a query the turn list shows.
QUERY_WORDS = 12


def header(ctx: Ctx) -> str:
    """Front matter, title and one header line: date, mode and space once, then author,
    turn and source counts, then the links."""
    lb, conv = ctx.labels, ctx.conv
    facts = [
        f"{lb.author}{lb.sep}{conv.author}" if conv.author else "",
        f"{lb.turns}{lb.sep}{len(conv.turns)}",
        f"{lb.sources_count}{lb.sep}{source_count(ctx)}",
    ]
    title = one_line(conv.title) or lb.untitled
    return join_blocks(
        [
            front_matter(conv, title),
            f"# {title}",
            nav_line(ctx, "conversation.md", [f for f in facts if f]),
            turn_list(ctx),
        ]
    )


def first_words(text: str, n: int = QUERY_WORDS) -> str:
    words = text.split()
    return " ".join(words[:n]) + (" …" if len(words) > n else "")


def turn_list(ctx: Ctx) -> str:
    """`- Turn N · date · first words of the query`, each linked to its turn file, for a
    thread long enough that paging turn by turn is slow."""
    turns = ctx.conv.turns
    if len(turns) < TURN_LIST_FROM:
        return ""
    lb = ctx.labels
    lines = []
    for turn in turns:
        when = ts(turn.created_us)[:10]
        label = f"{lb.turn} {turn.index}" + (f" · {when}" if when else "")
        words = first_words(turn.query) or lb.empty
        lines.append(f"- {link(label, turn_file(turn.index), ctx.flavor)} · {escape_inline(words)}")
    return "\n".join(lines)


def appendix_item(ctx: Ctx, item: AppendixItem) -> str:
    """One background run: a single status line (status, interruption, model, time with
    one end value: the run's completion, else its last update), the launcher, the run.
    The interruption tag is the fold's summary's."""
    lb = ctx.labels
    wp = item.payload
    facts = [f"{lb.status}{lb.sep}`{wp.status or lb.unknown}`"]
    facts += lb.code_facts(("locked_reason", item.locked_reason), (lb.model, wp.model))
    start = step_time(wp.started_at)
    if wp.completed_at:
        facts.append(f"{lb.time}{lb.sep}{start or '?'} → {step_time(wp.completed_at)}")
    else:
        if start:
            facts.append(f"{lb.time}{lb.sep}{start} →")
        if item.updated:
            facts.append(f"{lb.last_update}{lb.sep}{step_time(item.updated)}")
    line = " · ".join(facts)
    bg = {item.bg_uuid} - {""}
    block = nested(
        ctx, wp, 0, frozenset({id(wp)}), lb.background_task, item.locked_reason, meta_line=line
    )
    # The plan without the goals the run shows as steps (computed only when it has one).
    titles = step_titles([wp]) if plan_goals(ctx, bg, "background_entries") else None
    return join_blocks(
        [
            launcher_line(ctx, wp.id, with_time=False, headline=wp.headline),
            block,
            plan_block(ctx, bg, titles=titles, shown_md=block),
            background_log(ctx, item.log, block),
        ]
    )


APPENDIX = "appendix"  # memo key: the appendix, rendered once for sources.md and the page


def appendix(ctx: Ctx) -> str:
    """`## Background tasks`: the runs no turn can claim, shown on conversation.md only."""
    if not ctx.conv.appendix:
        return ""
    done: str | None = ctx.memo.get(APPENDIX)
    if done is not None:
        return done
    lb = ctx.labels
    blocks = [lb.appendix_heading, quote(lb.appendix_note)]
    blocks += [appendix_item(ctx, item) for item in ctx.conv.appendix]
    ctx.memo[APPENDIX] = done = join_blocks(blocks)
    return done


def turn_notes(ctx: Ctx, turn: Turn) -> str:
    """What the compact view says of a turn besides query and answer: its interruption and
    where its sub-agent work is (a stub turn's work is only in its turn file)."""
    lb = ctx.labels
    notes = []
    tag = lb.tag(turn.metadata.wf_status, turn.metadata.locked_reason)
    if tag:
        notes.append(tag)
    if turn.stub_runs:
        target = link(lb.stub_work_link, turn_file(turn.index), ctx.flavor)
        notes.append(lb.stub_work.format(link=target))
    if tag and ctx.flavor == OBSIDIAN:
        # Obsidian shows an interruption as a warning callout (its own colour and icon).
        return quote("[!warning] " + " · ".join(notes))
    return quote(" · ".join(notes)) if notes else ""


def notification_only(ctx: Ctx, turn: Turn) -> bool:
    """A subagent_result turn whose work is all in its sub-agent runs: no query, no answer,
    nothing lost to an unread shape, no media, no rewrite note."""
    return bool(
        turn.stub_runs
        and not turn.query.strip()
        and not turn_answer(turn).strip()
        and not turn.metadata.imported_from
        and not turn.media
        and not turn.losses
        and not rewritten_note(ctx, turn)
    )


def render_conversation(ctx: Ctx) -> str:
    lb = ctx.labels
    blocks = [header(ctx)]
    for turn in ctx.conv.turns:
        head = [turn_heading(ctx, turn, "##", turn_file(turn.index)), turn_notes(ctx, turn)]
        if notification_only(ctx, turn):
            # A sub-agent's report with no query and no answer of its own: the note that
            # sends the reader to its turn file is all there is to say ("(empty)" and
            # "(none)" under two headings said nothing).
            blocks += head
            continue
        blocks += [
            *head,
            f"### {lb.query}",
            turn.query.strip("\n") if turn.query.strip() else lb.empty,
            f"### {lb.answer}",
            rewritten_note(ctx, turn),
            linked_answer(ctx, turn, inline=True, top=4),
        ]
    blocks.append(appendix(ctx))
    blocks.append(thread_files(ctx))
    return finish(join_blocks(blocks))


def thread_files(ctx: Ctx) -> str:
    """`## Files`: every file of the thread, each with a link to the turn that made it."""
    if not ctx.files:
        return ""
    lb = ctx.labels
    turns = {t.uuid: t.index for t in ctx.conv.turns if t.uuid}
    lines = []
    for f in ctx.files.items:
        n = turns.get(f.entry_uuid)
        where = link(f"{lb.turn} {n}", turn_file(n), ctx.flavor) if n is not None else ""
        lines.append(file_line(lb, ctx.files, f, ctx.page, where, ctx.flavor))
    return join_blocks([f"## {lb.files}", "\n".join(lines)])
