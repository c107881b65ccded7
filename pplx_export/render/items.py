"""Workflow items (protocol.md §3.7) that hold no nested workflow: one WfItem -> Markdown.

The item dispatch, and the nested workflows it recurses into, are in tree.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from pplx_export.models import Link, WfItem
from pplx_export.render.context import Ctx
from pplx_export.render.files import shared_lines
from pplx_export.render.latex import norm
from pplx_export.render.page import turn_file
from pplx_export.render.text import (
    WORK_TOP,
    bold,
    cell,
    demote,
    details,
    fenced,
    join_blocks,
    link,
    quote,
    squash,
    summary_text,
    work_md,
)


def source_lines(sources: Sequence[Link]) -> list[str]:
    out: list[str] = []
    for s in sources:
        if s.url:
            out.append("- " + link(s.name, s.url))
        elif s.name.strip():
            out.append("- " + s.name.strip())
    return out


def sources_block(ctx: Ctx, sources: Sequence[Link]) -> str:
    lines = source_lines(sources)
    if not lines:
        return ""
    return details(
        ctx.labels.sources + ctx.labels.par(str(len(lines))), "\n".join(lines), ctx.flavor
    )


def is_the_answer(ctx: Ctx, text: str) -> bool:
    """`text` is the answer shown elsewhere on the page (`ctx.answer`), up to layout."""
    answer = ctx.answer
    # Copies differ in blank lines or list markers at most: most texts are told apart by
    # their length alone, before any copy of either is made.
    if abs(len(text) - len(answer)) > len(answer) // 8 + 16 or not answer.strip():
        return False
    if text.strip() == answer.strip():
        return True
    # Then on letters and digits (the answer's squash memoised per thread).
    key = ("squash", answer)
    sq: str | None = ctx.memo.get(key)
    if sq is None:
        sq = ctx.memo[key] = squash(answer)
    return bool(sq) and squash(text) == sq


def render_text(ctx: Ctx, item: WfItem) -> str:
    tp = item.text
    text = tp.text
    if not text.strip():
        return ""
    variant = tp.variant
    if is_the_answer(ctx, text):
        # The answer is shown once, where answers are (the turn's Answer section, a run's
        # conclusion): an answer item says nothing here, any other text (a thought that is
        # the final answer) leaves a pointer.
        return "" if variant == "answer" or not ctx.pointer else f"*{ctx.pointer}*"
    if variant == "answer":
        return ctx.labels.labelled(ctx.labels.intermediate_answer, work_md(text))
    if variant in ("thought", "thinking"):
        return quote(demote(norm(text.strip("\n")), WORK_TOP))
    header = tp.header
    if header:
        # Headed monospace text (tool output) is folded in the web UI; a tool's input is the
        # code it ran, verbatim, whatever `is_mono` says.
        verbatim = tp.is_mono or bool(tp.code) or header == "Output"
        return details(
            summary_text(_header_label(ctx, header)),
            fenced(text, tp.code) if verbatim else norm(text),
            ctx.flavor,
        )
    if tp.is_mono or tp.code:
        return fenced(text, tp.code)
    return work_md(text)


def _header_label(ctx: Ctx, header: str) -> str:
    """The web UI's fold headers in the page's language (others as they are)."""
    known = {"Output": ctx.labels.output, "Input": ctx.labels.input_}
    return known.get(header, header)


def render_sources(ctx: Ctx, item: WfItem) -> str:
    text = item.text.text
    parts = [text.strip("\n")] if text.strip() else []
    parts.append(sources_block(ctx, item.sources))
    parts.append(shared_files(ctx, item))
    return join_blocks(parts)


def shared_files(ctx: Ctx, item: WfItem) -> str:
    """The files a SOURCES item carries (a `share_file` step, the diff an `edit` step
    made), linked where they were produced; "" when the page lists them with the answer."""
    if not item.asset_uuids or _with_the_answer(ctx, item):
        return ""
    return shared_lines(ctx.labels, ctx.files, item.asset_uuids, ctx.page, ctx.flavor)


def _with_the_answer(ctx: Ctx, item: WfItem) -> bool:
    """The files attached to the turn's answer (an `answer` SOURCES item) whose turn file is
    this page: the page lists them under the answer (`## Files`), not in the work process."""
    if item.text.variant != "answer":
        return False
    turns = {t.uuid: t.index for t in ctx.conv.turns if t.uuid}
    for uuid in item.asset_uuids:
        found = ctx.files.by_uuid.get(uuid)
        if not found:
            return False
        for f in found:
            n = turns.get(f.entry_uuid)
            if n is None or turn_file(n) != ctx.page:
                return False
    return True


def render_queries(ctx: Ctx, item: WfItem) -> str:
    if not item.queries:
        return ""
    return ctx.labels.labelled(ctx.labels.searching, "\n".join(f"- {q}" for q in item.queries))


def render_todo(ctx: Ctx, item: WfItem) -> str:
    todo = item.todo
    title = todo.title.strip() or ctx.labels.task_list
    lines = [bold(title), ""]
    for entry in todo.entries:
        status = entry.status.upper()
        # GitHub and CommonMark task lists know only `[ ]` and `[x]`: in-progress is an open
        # box that says so.
        mark = "[x]" if status == "COMPLETED" else "[ ]"
        note = f"*{ctx.labels.in_progress}* " if status == "IN_PROGRESS" else ""
        lines.append(f"- {mark} {note}{entry.description.strip()}")
    # An item added with the status the list shows says nothing the list does not: only
    # the changes that carry information (status changes, removals, other additions).
    listed = {(e.description.strip(), e.status.upper()) for e in todo.entries}
    changes = []
    for d in todo.changes:
        desc = d.description.strip()
        action = d.action.removeprefix("TODO_DIFF_").lower()
        if action == "added" and (desc, d.new_status.upper()) in listed:
            continue
        if desc or action:
            changes.append(
                f"- {action}{ctx.labels.sep}{desc}"
                + (f" → `{d.new_status}`" if d.new_status else "")
            )
    if changes:
        lines += ["", f"*{ctx.labels.todo_changes}{ctx.labels.colon}*", "", *changes]
    return "\n".join(lines).rstrip()


def render_table(item: WfItem) -> str:
    table = item.table
    if not table.columns:
        return ""
    lines = [
        "| " + " | ".join(cell(c) for c in table.columns) + " |",
        "|" + "---|" * len(table.columns),
    ]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.rows]
    return "\n".join(lines)


def render_user_questions(ctx: Ctx, item: WfItem) -> str:
    """Both the observed `fields[].options[]` shape and the older `questions[]` shape."""
    lb = ctx.labels
    up = item.questions
    blocks: list[str] = []
    title = up.title.strip()
    blocks.append(f"**{lb.asked_user}{lb.colon}**" + (f" {title}" if title else ""))
    for question in up.questions:
        text = question.strip()
        if text:
            blocks.append(f"- {text}")
    for n, field in enumerate(up.fields, 1):
        name = field.name.strip()
        flags = [
            label
            for on, label in (
                (field.multichoice, lb.multichoice),
                (field.free_text, lb.free_text),
                (field.attachments, lb.attachments_allowed),
            )
            if on
        ]
        aside = lb.par(", ".join(flags)).strip()
        lines = [f"{n}. **{name}**" + (f" *{aside}*" if flags else "")]
        for opt in field.options:
            otitle = opt.title.strip()
            desc = opt.description.strip()
            if opt.free_text_selection and not otitle:
                if field.free_text:
                    continue  # the question's aside says it already
                otitle = f"*{lb.free_text}*"
            if otitle or desc:
                lines.append(f"   - {otitle}" + (f" — {desc}" if desc else ""))
        blocks.append("\n".join(lines))
    if len(blocks) == 1 and not title:
        return ""
    return "\n\n".join(blocks)


def render_user_response(ctx: Ctx, item: WfItem) -> str:
    parts: list[str] = []
    for r in item.replies:
        q, a = r.question.strip(), r.answer.strip()
        if q:
            parts.append(f"**{ctx.labels.question}{ctx.labels.colon}** {q}")
        if a:
            parts.append(f"**{ctx.labels.reply}{ctx.labels.colon}** {a}")
    return "\n\n".join(parts)


def render_content(item: WfItem) -> str:
    return join_blocks([norm(desc.strip()) for desc in item.entities])
