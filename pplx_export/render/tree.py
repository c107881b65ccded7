"""The workflow tree: one recursive dispatch over items and the nested payloads they carry.

`render_item` dispatches on the item kind; a WORKFLOW item renders its payload as a nested
block (`nested`), whose items come back through `render_item` one level deeper. The
recursion stays in this module, so the modules around it (steps, council, sub-agents,
background) import it and nothing here imports them.
"""

from __future__ import annotations

from pplx_export.models import WfItem, WfPayload, WfStep
from pplx_export.parse.views import (
    CONTENT,
    QUERIES,
    SOURCES,
    TABLE,
    TEXT,
    TODO_LIST,
    USER_QUESTIONS,
    USER_RESPONSE,
    WORKFLOW,
)
from pplx_export.render.context import MAX_DEPTH, Ctx
from pplx_export.render.items import (
    render_content,
    render_queries,
    render_sources,
    render_table,
    render_text,
    render_todo,
    render_user_questions,
    render_user_response,
    shared_files,
)
from pplx_export.render.labels import EN, Labels
from pplx_export.render.latex import norm
from pplx_export.render.shown import Shown, item_atoms
from pplx_export.render.text import (
    bold,
    details,
    join_blocks,
    link,
    one_line,
    payload_fold,
    quote,
    summary_text,
    time_range,
    work_md,
)

COUNCIL_MODE = "LLM_COUNCIL"
# What an item without a workflow payload reads as where one is looked for.
NO_PAYLOAD = WfPayload(raw={})


def render_item(ctx: Ctx, item: WfItem, depth: int = 0, seen: frozenset[int] = frozenset()) -> str:
    """One workflow item; an unknown type renders a visible placeholder naming it."""
    kind = item.kind
    if kind == TEXT:
        return render_text(ctx, item)
    if kind == SOURCES:
        return render_sources(ctx, item)
    if kind == QUERIES:
        return render_queries(ctx, item)
    if kind == WORKFLOW:
        return render_workflow_item(ctx, item.workflow or NO_PAYLOAD, depth, seen)
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
    lb = ctx.labels
    head = f"*{lb.par(f'{kind or chr(63)}{lb.sep}{lb.unrendered}').strip()}*"
    # The payload under the placeholder: what search finds in it, the reader sees.
    payload = {k: v for k, v in item.raw.items() if k != "type"}
    return join_blocks([head, payload_fold(lb.payload_json, payload, ctx.flavor)])


def render_workflow_item(ctx: Ctx, wp: WfPayload, depth: int, seen: frozenset[int]) -> str:
    if wp.mode == COUNCIL_MODE:
        return ""  # the council step renders it (council.py)
    if depth == 0 and wp.is_anchor and wp.id in ctx.sub_map:
        return ""  # a top-level launch: the sub-agent step renders it from the sub-agent map
    if not wp.steps and not wp.is_anchor:
        headline = wp.headline.strip()
        return ctx.labels.nested_empty + (f" {headline}" if headline else "")
    if id(wp) in seen:  # the same object again: only a cyclic Python value can do this
        name = wp.headline.strip() or ctx.labels.untitled
        return ctx.labels.recursion_limit.format(name=name)
    if depth >= MAX_DEPTH:
        return flattened(ctx, wp, seen)
    label = ctx.labels.subagent if wp.is_anchor else ctx.labels.nested
    return nested(ctx, wp, depth, seen | {id(wp)}, label)


def flattened(ctx: Ctx, top: WfPayload, seen: frozenset[int]) -> str:
    """Levels past MAX_DEPTH folds, as one flat list instead of more nested folds: every
    level's headline, prompt, steps and conclusion, in document order. A loop with its own
    stack, so no payload depth can reach Python's recursion limit, and nothing is dropped."""
    lb = ctx.labels
    out: list[str] = []
    stack: list[tuple[WfPayload, frozenset[int]]] = [(top, seen)]
    while stack:
        wp, path = stack.pop()
        if id(wp) in path:
            out.append(lb.recursion_limit.format(name=wp.headline.strip() or lb.untitled))
            continue
        path = path | {id(wp)}
        label = lb.subagent if wp.is_anchor else lb.nested
        head = bold(f"{label}{lb.sep}{one_line(wp.headline) or lb.untitled}")
        tag = lb.tag(wp.status, ctx.locked_reason)
        blocks = [f"{head} · {tag}" if tag else head]
        if wp.prompt.strip():
            blocks.append(lb.labelled(lb.prompt, quote(wp.prompt.strip("\n"))))
        children: list[WfPayload] = []
        conclusion = conclusion_of(wp)
        inner = ctx.with_answer(conclusion, lb.to_conclusion)  # shown once, below
        for step in wp.steps:
            parts = []
            for item in step.items:
                if item.kind == WORKFLOW:
                    if item.workflow is not None and item.workflow.mode != COUNCIL_MODE:
                        children.append(item.workflow)
                    continue
                rendered = render_item(inner, item, MAX_DEPTH, path)
                if rendered.strip():
                    parts.append(rendered)
            label_line = step_label(step, lb)
            if label_line or parts:
                blocks.append(join_blocks([label_line, *parts]))
        if conclusion.strip():
            blocks.append(lb.labelled(lb.conclusion, work_md(conclusion.strip("\n"))))
        out.append(join_blocks(blocks))
        # Children next, in their order (a stack: pushed last to first).
        stack += [(child, path) for child in reversed(children)]
    return join_blocks(out)


def drop_repeated_label(lb: Labels, title: str, body: str) -> str:
    """`body` without its leading `**Searching:**` / `**Asked the user:**` label when the
    step's `title` already says it (a step titled from its kind, or `Searching …`). The
    platform titles steps in its own words, English in every capture so far: a Chinese page
    drops its label under an English title that says the same."""
    folded = title.casefold()
    for label, english in ((lb.searching, EN.searching), (lb.asked_user, EN.asked_user)):
        bold_label = f"**{label}{lb.colon}**"
        if body.startswith(bold_label) and (
            folded.startswith(label.casefold()) or folded.startswith(english.casefold())
        ):
            return body[len(bold_label) :].lstrip(" \n")
    return body


def step_label(step: WfStep, lb: Labels) -> str:
    """`**title** (`tool`)` for a step inside a nested block ("" when it has neither)."""
    title = one_line(step.title)
    tool = step.tool_name
    label = bold(title)
    if tool:
        label += lb.par(f"`{tool}`") if label else lb.par(f"`{tool}`").strip()
    return label


def _kind_title(lb: Labels, step: WfStep) -> str:
    """A title for a step that has none, from what it holds: a step of thoughts reads
    `Thinking`, a step of answer text `Answer text` (a bare `### Step 3` says nothing)."""
    kinds = {
        item.text.variant if item.kind == TEXT else item.kind
        for item in step.items
        if item.kind != TEXT or item.text.text.strip()
    }
    if kinds and kinds <= {"thought", "thinking"}:
        return lb.thinking
    if kinds == {"answer"}:
        return lb.intermediate_answer
    for item in step.items:
        if item.kind == WORKFLOW and item.workflow is not None:
            return one_line(item.workflow.headline) or lb.nested
        named = {USER_QUESTIONS: lb.asked_user, TODO_LIST: lb.task_list, QUERIES: lb.searching}
        if item.kind in named:
            return named[item.kind]
    return ""


def step_heading(ctx: Ctx, i: int, step: WfStep, title: str = "") -> str:
    """`### Step i · title (`tool`) — start → end · tag`."""
    lb = ctx.labels
    title = title or one_line(step.title)
    if not title and step.tool_name == "share_file":
        title = lb.shared_files
    elif not title and not step.tool_name:
        title = _kind_title(lb, step)
    head = f"### {lb.step} {i}" + (f" · {title}" if title else "")
    if step.tool_name:
        head += lb.par(f"`{step.tool_name}`")
    head += time_range(step.started_at, step.completed_at)
    tag = lb.tag(step.status, ctx.locked_reason)
    if tag:
        head += f" · {tag}"
    return head


def conclusion_of(wp: WfPayload) -> str:
    """The payload's last non-blank answer text (the nested run's conclusion)."""
    found = ""
    for step in wp.steps:
        for item in step.items:
            if item.kind == TEXT and item.text.variant == "answer" and item.text.text.strip():
                found = item.text.text
    return found


def nested_steps(
    ctx: Ctx,
    wp: WfPayload,
    depth: int,
    seen: frozenset[int],
    shown_md: str | None = None,
    answer: str = "",
) -> tuple[list[tuple[str, str]], str, list[str]]:
    """((step time, body part) per shown step, conclusion, citation lines) of a nested
    workflow payload; the time is the step's end, else its start, else "".

    With `shown_md`, items whose content atoms are all already there are left out (a second
    copy of the same run); step titles stay so the outline of the run remains visible.
    `answer` is the run's answer shown below the steps when the payload has no conclusion of
    its own (a sub-agent's mapped answer).
    """
    shown = Shown(shown_md) if shown_md is not None else None
    conclusion = conclusion_of(wp)
    # A text equal to the conclusion shown below the steps points to it instead.
    inner = ctx.with_answer(conclusion if conclusion.strip() else answer, ctx.labels.to_conclusion)
    parts: list[tuple[str, str]] = []
    cited: list[str] = []
    urls: set[str] = set()
    for step in wp.steps:
        step_parts: list[str] = []
        for item in step.items:
            if item.kind == SOURCES:
                text = item.text.text
                if text.strip():
                    step_parts.append(norm(text.strip("\n")))
                for s in item.sources:
                    if s.url and s.url not in urls:
                        urls.add(s.url)
                        cited.append("- " + link(s.name, s.url))
                # The step's own files stay with it (an edit step links the diff it made).
                files = shared_files(inner, item)
                if files:
                    step_parts.append(files)
                continue
            if shown is not None and shown.covers(item_atoms(item)):
                continue
            rendered = render_item(inner, item, depth + 1, seen)
            if not step_parts:
                rendered = drop_repeated_label(ctx.labels, one_line(step.title), rendered)
            if rendered.strip():
                step_parts.append(rendered)
        label = step_label(step, ctx.labels)
        tag = ctx.labels.tag(step.status, ctx.locked_reason)
        if tag:
            label = f"{label} · {tag}" if label else tag
        if shown is not None and not step_parts and (not label or label in shown):
            continue  # a second copy's step with nothing new
        if label or step_parts:
            parts.append((step.completed_at or step.started_at, join_blocks([label, *step_parts])))
    return parts, conclusion, cited


def nested(
    ctx: Ctx,
    wp: WfPayload,
    depth: int,
    seen: frozenset[int],
    label: str,
    locked_reason: str | None = None,
    meta_line: str | None = None,
) -> str:
    """A nested workflow payload as a folded block with its conclusion and citations.
    `meta_line` replaces the run's status/model/time line (a caller that shows the run's
    status and time once, with the end value it knows best)."""
    lb = ctx.labels
    lr = ctx.locked_reason if locked_reason is None else locked_reason
    ctx = ctx.with_locked_reason(lr)
    timed, conclusion, cited = nested_steps(ctx, wp, depth, seen)
    parts = [text for _, text in timed]
    stat = (
        lb.steps_n.format(n=len(parts))  # the steps shown
        + " · "
        + (lb.has_conclusion if conclusion else lb.no_conclusion)
    )
    if cited:
        stat += " · " + lb.citations_n.format(n=len(cited))
    tag = lb.tag(wp.status, lr)
    if tag:
        stat += f" · {tag}"
    headline = wp.headline.strip() or lb.untitled
    summary = summary_text(f"{label}{lb.sep}{headline}{lb.par(stat)}")

    meta = lb.code_facts((lb.status, wp.status), (lb.model, wp.model))
    span = time_range(wp.started_at, wp.completed_at)
    if span:
        meta.append(f"{lb.time}{lb.sep}{span.removeprefix(' — ')}")
    if meta_line is not None:
        meta = [meta_line] if meta_line else []
    blocks = [quote(" · ".join(meta))] if meta else []
    if wp.prompt.strip():
        blocks.append(lb.labelled(lb.prompt, quote(wp.prompt.strip("\n"))))
    blocks += parts if parts else [lb.no_steps]
    if conclusion.strip():
        blocks.append(lb.labelled(lb.conclusion, work_md(conclusion.strip("\n"))))
    if cited:
        blocks.append(lb.labelled(lb.cited, "\n".join(cited)))
    return details(summary, join_blocks(blocks), ctx.flavor)
