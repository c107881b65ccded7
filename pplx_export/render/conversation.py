"""conversation.md: header, every turn's query and full answer, background appendix (§6.3)."""

from __future__ import annotations

from pplx_export.models import AppendixItem, Turn
from pplx_export.render.background import background_log, launcher_line
from pplx_export.render.context import Ctx
from pplx_export.render.page import front_matter, nav_line, turn_file
from pplx_export.render.plan import plan_block
from pplx_export.render.text import finish, join_blocks, link, one_line, quote, step_time
from pplx_export.render.tree import nested
from pplx_export.render.turn import linked_answer, rewritten_note, turn_heading


def header(ctx: Ctx) -> str:
    lb, conv = ctx.labels, ctx.conv
    facts = [
        f"{lb.mode}: {conv.mode}",
        f"{lb.author}: {conv.author}",
        f"{lb.turns}: {len(conv.turns)}",
        f"{lb.citations}: {len(conv.citations)}",
    ]
    if conv.space is not None and conv.space.title:
        facts.append(f"{lb.space}: {one_line(conv.space.title)}")
    title = one_line(conv.title) or lb.untitled
    return join_blocks(
        [
            front_matter(conv, title),
            f"# {title}",
            nav_line(ctx, "conversation.md"),
            "> " + " | ".join(facts),
        ]
    )


def appendix_item(ctx: Ctx, item: AppendixItem) -> str:
    lb = ctx.labels
    wp = item.payload
    facts = [f"{lb.status}: `{wp.status or lb.unknown}`"]
    tag = lb.tag(wp.status, item.locked_reason)
    if tag:
        facts.append(tag)
    if item.locked_reason:
        facts.append(f"locked_reason: `{item.locked_reason}`")
    start = step_time(wp.started_at)
    end = step_time(wp.completed_at or item.updated)
    if start or end:
        facts.append(f"{lb.time}: {start or '?'} → {end or '?'}")
    block = nested(ctx, wp, 0, frozenset({id(wp)}), lb.background_task, item.locked_reason)
    return join_blocks(
        [
            quote(" · ".join(facts)),
            launcher_line(ctx, wp.id),
            block,
            plan_block(ctx, {item.bg_uuid} - {""}),
            background_log(ctx, item.log, block),
        ]
    )


def appendix(ctx: Ctx) -> str:
    if not ctx.conv.appendix:
        return ""
    lb = ctx.labels
    blocks = [lb.appendix_heading, quote(lb.appendix_note)]
    blocks += [appendix_item(ctx, item) for item in ctx.conv.appendix]
    return join_blocks(blocks)


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
    return quote(" · ".join(notes)) if notes else ""


def render_conversation(ctx: Ctx) -> str:
    lb = ctx.labels
    blocks = [header(ctx)]
    for turn in ctx.conv.turns:
        blocks += [
            turn_heading(ctx, turn, "##"),
            turn_notes(ctx, turn),
            f"### {lb.query}",
            turn.query.strip("\n") if turn.query.strip() else lb.empty,
            f"### {lb.answer}",
            rewritten_note(ctx, turn),
            linked_answer(ctx, turn, inline=True, top=4),
        ]
    blocks.append(appendix(ctx))
    return finish(join_blocks(blocks))
