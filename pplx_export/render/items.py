"""Workflow items (protocol.md §3.7): one raw item dict -> Markdown."""

from __future__ import annotations

from typing import Any

from pplx_export.render.context import MAX_DEPTH, Ctx
from pplx_export.render.latex import norm
from pplx_export.render.text import (
    cell,
    chunks_text,
    details,
    fenced,
    join_blocks,
    link,
    model_links,
    quote,
    summary_text,
)
from pplx_export.util.lenient import as_dict, as_list, as_str, dicts, first_str

TEXT = "WORKFLOW_ITEM_TEXT"
SOURCES = "WORKFLOW_ITEM_SOURCES"
QUERIES = "WORKFLOW_ITEM_QUERIES"
WORKFLOW = "WORKFLOW_ITEM_WORKFLOW"
TODO_LIST = "WORKFLOW_ITEM_TODO_LIST"
TABLE = "WORKFLOW_ITEM_TABLE"
USER_QUESTIONS = "WORKFLOW_ITEM_USER_QUESTIONS"
USER_RESPONSE = "WORKFLOW_ITEM_USER_RESPONSE"
CONTENT = "WORKFLOW_ITEM_CONTENT"

_TODO_MARK = {"COMPLETED": "[x]", "IN_PROGRESS": "[/]"}


def payload(item: dict[str, Any], key: str) -> dict[str, Any]:
    return as_dict(as_dict(item.get("payload")).get(key))


def workflow_payload(item: dict[str, Any]) -> dict[str, Any]:
    return payload(item, "workflow_payload")


def is_anchor(wp: dict[str, Any]) -> bool:
    """A sub-agent launch: the payload carries its prompt or is flagged as the anchor."""
    chunks = [c for c in as_list(wp.get("objective_chunks")) if isinstance(c, str) and c]
    return bool(chunks) or bool(wp.get("is_background_anchor"))


def prompt_of(wp: dict[str, Any]) -> str:
    return "".join(c for c in as_list(wp.get("objective_chunks")) if isinstance(c, str))


def query_strings(value: Any) -> list[str]:
    out: list[str] = []
    for q in as_list(value):
        text = first_str(q, "query", "text") if isinstance(q, dict) else as_str(q)
        if text.strip():
            out.append(text)
    return out


def source_lines(sources: Any) -> list[str]:
    out: list[str] = []
    for s in dicts(sources):
        url = first_str(s, "url", "link")
        name = first_str(s, "name", "title")
        if url:
            out.append("- " + link(name, url))
        elif name.strip():
            out.append("- " + name.strip())
    return out


def sources_block(ctx: Ctx, sources: Any) -> str:
    lines = source_lines(sources)
    if not lines:
        return ""
    return details(ctx.labels.sources + ctx.labels.par(str(len(lines))), "\n".join(lines))


def render_text(ctx: Ctx, item: dict[str, Any]) -> str:
    tp = payload(item, "text_payload")
    text = chunks_text(tp)
    if not text.strip():
        return ""
    variant = as_str(tp.get("variant")) or as_str(item.get("variant"))
    if variant == "answer":
        # The turn's answer is shown in its own section; any other answer text stays here.
        if text.strip() == ctx.answer.strip():
            return ""
        return f"**{ctx.labels.intermediate_answer}{ctx.labels.colon}**\n\n" + model_links(
            norm(text)
        )
    if variant in ("thought", "thinking"):
        return quote(norm(text.strip("\n")))
    header = as_str(tp.get("header"))
    if header:
        # Headed monospace text (tool output) is folded in the web UI.
        return details(
            summary_text(header),
            fenced(text) if tp.get("is_mono") or header == "Output" else norm(text),
        )
    if tp.get("is_mono"):
        return fenced(text)
    return model_links(norm(text))


def render_sources(ctx: Ctx, item: dict[str, Any]) -> str:
    text = chunks_text(payload(item, "text_payload"))
    parts = [text.strip("\n")] if text.strip() else []
    parts.append(sources_block(ctx, payload(item, "sources_payload").get("sources")))
    return join_blocks(parts)


def render_queries(ctx: Ctx, item: dict[str, Any]) -> str:
    queries = query_strings(payload(item, "queries_payload").get("queries"))
    if not queries:
        return ""
    return f"**{ctx.labels.searching}{ctx.labels.colon}**\n\n" + "\n".join(
        f"- {q}" for q in queries
    )


def render_todo(ctx: Ctx, item: dict[str, Any]) -> str:
    tp = payload(item, "todo_list_payload")
    title = as_str(tp.get("title")).strip() or ctx.labels.task_list
    lines = [f"**{title}**", ""]
    for it in dicts(tp.get("items")):
        mark = _TODO_MARK.get(as_str(it.get("status")).upper(), "[ ]")
        lines.append(f"- {mark} {as_str(it.get('description')).strip()}")
    changes = []
    for d in dicts(as_dict(tp.get("diff")).get("items")):
        desc = as_str(d.get("description")).strip()
        action = as_str(d.get("action")).removeprefix("TODO_DIFF_").lower()
        status = as_str(d.get("new_status"))
        if desc or action:
            changes.append(f"- {action}: {desc}" + (f" → `{status}`" if status else ""))
    if changes:
        lines += ["", f"*{ctx.labels.todo_changes}:*", "", *changes]
    return "\n".join(lines).rstrip()


def render_table(item: dict[str, Any]) -> str:
    tp = payload(item, "table_payload")
    columns = [
        as_str(c) if not isinstance(c, dict) else first_str(c, "name", "title", "key")
        for c in as_list(tp.get("columns"))
    ]
    if not columns:
        return ""
    lines = [
        "| " + " | ".join(cell(c) for c in columns) + " |",
        "|" + "---|" * len(columns),
    ]
    for row in as_list(tp.get("rows")):
        if isinstance(row, dict):
            cells = row.get("cells")
            if isinstance(cells, dict):
                values = [cells.get(c) for c in columns]
                # Cells under keys that are not column names would otherwise vanish.
                values += [v for k, v in cells.items() if k not in columns]
            else:
                values = as_list(cells)
        else:
            values = as_list(row)
        values += [""] * (len(columns) - len(values))
        lines.append("| " + " | ".join(cell(v) for v in values) + " |")
    return "\n".join(lines)


def render_user_questions(ctx: Ctx, item: dict[str, Any]) -> str:
    """Both the observed `fields[].options[]` shape and the older `questions[]` shape."""
    lb = ctx.labels
    up = payload(item, "user_questions_payload")
    blocks: list[str] = []
    title = as_str(up.get("title")).strip()
    blocks.append(f"**{lb.asked_user}{lb.colon}**" + (f" {title}" if title else ""))
    for q in dicts(up.get("questions")):
        text = first_str(q, "question", "text").strip()
        if text:
            blocks.append(f"- {text}")
    for n, field in enumerate(dicts(up.get("fields")), 1):
        name = as_str(field.get("field_name")).strip()
        flags = [
            label
            for key, label in (
                ("allow_multichoice", lb.multichoice),
                ("allow_free_text", lb.free_text),
                ("allow_attachments", lb.attachments_allowed),
            )
            if field.get(key)
        ]
        lines = [f"{n}. **{name}**" + (f" *({', '.join(flags)})*" if flags else "")]
        for opt in dicts(field.get("options")):
            otitle = as_str(opt.get("title")).strip()
            desc = as_str(opt.get("description")).strip()
            if opt.get("is_free_text_selection") and not otitle:
                otitle = f"*{lb.free_text}*"
            if otitle or desc:
                lines.append(f"   - {otitle}" + (f" — {desc}" if desc else ""))
        blocks.append("\n".join(lines))
    if len(blocks) == 1 and not title:
        return ""
    return "\n\n".join(blocks)


def render_user_response(ctx: Ctx, item: dict[str, Any]) -> str:
    parts: list[str] = []
    for r in dicts(payload(item, "user_response_payload").get("responses")):
        q = as_str(r.get("question")).strip()
        a = as_str(r.get("answer")).strip()
        if q:
            parts.append(f"**{ctx.labels.question}{ctx.labels.colon}** {q}")
        if a:
            parts.append(f"**{ctx.labels.reply}{ctx.labels.colon}** {a}")
    return "\n\n".join(parts)


def render_content(item: dict[str, Any]) -> str:
    descs = [
        norm(as_str(e.get("description")).strip())
        for e in dicts(payload(item, "content_payload").get("entities"))
    ]
    return join_blocks(descs)


def render_workflow_item(ctx: Ctx, item: dict[str, Any], depth: int, seen: frozenset[str]) -> str:
    wp = workflow_payload(item)
    if as_str(wp.get("mode")) == "LLM_COUNCIL":
        return ""  # the council step renders it (council.py)
    if depth == 0 and is_anchor(wp) and as_str(wp.get("id")) in ctx.sub_map:
        return ""  # a top-level launch: the sub-agent step renders it from the sub-agent map
    if not dicts(wp.get("steps")) and not is_anchor(wp):
        headline = as_str(wp.get("headline")).strip()
        return ctx.labels.nested_empty + (f" {headline}" if headline else "")
    wid = as_str(wp.get("id"))
    if depth >= MAX_DEPTH or (wid and wid in seen):
        name = as_str(wp.get("headline")).strip() or ctx.labels.untitled
        return ctx.labels.recursion_limit.format(name=name)
    # Imported here: nested blocks render their own items through this module.
    from pplx_export.render.workflow import nested

    label = ctx.labels.subagent if is_anchor(wp) else ctx.labels.nested
    return nested(ctx, wp, depth, seen | {wid} if wid else seen, label)


def render_item(ctx: Ctx, item: Any, depth: int = 0, seen: frozenset[str] = frozenset()) -> str:
    """One workflow item; an unknown type renders a visible placeholder naming it."""
    if not isinstance(item, dict):
        return ""
    kind = as_str(item.get("type"))
    if kind == TEXT:
        return render_text(ctx, item)
    if kind == SOURCES:
        return render_sources(ctx, item)
    if kind == QUERIES:
        return render_queries(ctx, item)
    if kind == WORKFLOW:
        return render_workflow_item(ctx, item, depth, seen)
    if kind == TODO_LIST:
        return render_todo(ctx, item)
    if kind == TABLE:
        return render_table(item)
    if kind == USER_QUESTIONS:
        return render_user_questions(ctx, item)
    if kind == USER_RESPONSE:
        return render_user_response(ctx, item)
    if kind == CONTENT:
        return render_content(item)
    return f"*({kind or '?'}: {ctx.labels.unrendered})*"
