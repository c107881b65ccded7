"""Plain steps of an entry's `text` (protocol.md §3.5, §6.5): one Step -> Markdown."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from pplx_export.models import Citation, Step
from pplx_export.render import items as it
from pplx_export.render.context import Ctx
from pplx_export.render.text import (
    SQUASH_SURE,
    details,
    fenced,
    join_blocks,
    link,
    one_line,
    quote,
    squash,
    squashed_on_page,
    step_time,
    summary_text,
)
from pplx_export.util.lenient import as_dict, as_list, as_str, dicts, first_str

SILENT = frozenset({"INITIAL_QUERY", "FINAL", ""})


def _strings(value: Any) -> list[str]:
    return [v for v in (as_str(x) for x in as_list(value)) if v.strip()]


def _tool(ctx: Ctx, step: Step, label: str) -> str:
    body = join_blocks(
        [it.render_item(ctx, item) for item in as_list(step.content.get("workflow_items"))]
    )
    if not body:
        return ""
    when = step_time(step.content.get("timestamp") or step.timestamp)
    return f"**{label}**" + (f" ({when})" if when else "") + "\n\n" + body


def _code(ctx: Ctx, c: dict[str, Any]) -> str:
    lb = ctx.labels
    lang = as_str(c.get("language"))
    parts = []
    script = as_str(c.get("script")).rstrip()
    if script:
        parts.append(
            f"**{lb.code}**" + (f" ({lang})" if lang else "") + "\n\n" + fenced(script, lang)
        )
    out = as_str(c.get("stdout")).rstrip()
    if out:
        parts.append(f"**{lb.output}**\n\n" + fenced(out))
    err = (as_str(c.get("stderr")) or as_str(c.get("error"))).rstrip()
    if err:
        parts.append(f"**{lb.error_output}**\n\n" + fenced(err))
    return join_blocks(parts)


def _council_round(ctx: Ctx, step: Step) -> str:
    lines = [f"- `{q}`" for q in it.query_strings(step.content.get("queries"))]
    for n, src in enumerate(as_list(step.content.get("sources")), 1):
        if isinstance(src, Citation):
            lines.append(f"  {n}. {link(src.name, src.url)}")
        elif isinstance(src, dict):
            lines.append(
                f"  {n}. {link(first_str(src, 'name', 'title'), first_str(src, 'url', 'link'))}"
            )
    return "\n".join(lines)


def step_from_dict(raw: dict[str, Any]) -> Step:
    """A plain step nested inside another step's raw dict (council model states)."""
    return Step(
        step_type=first_str(raw, "step_type", "type"),
        content=as_dict(raw.get("content")),
        uuid=first_str(raw, "uuid", "id"),
        raw=raw,
    )


def _council_research(ctx: Ctx, step: Step) -> str:
    """The plain council step: every model's own search steps and answer, folded per model."""
    lb = ctx.labels
    raw = step.raw or step.content
    query = as_str(raw.get("research_query")).strip()
    blocks = [f"**{lb.council_research}**" + (f": {one_line(query)}" if query else "")]
    for model, state in as_dict(raw.get("model_states")).items():
        st = as_dict(state)
        body = [quote(as_str(st.get("mock_thought")))] if as_str(st.get("mock_thought")) else []
        body += [render_step(ctx, step_from_dict(s)) for s in dicts(st.get("steps"))]
        answer = "".join(c for c in as_list(st.get("answer_chunks")) if isinstance(c, str))
        if answer.strip():
            body.append(f"**{lb.answer}{lb.colon}**\n\n" + answer.strip("\n"))
        status = as_str(st.get("status"))
        summary = f"{lb.model}: {model}" + (f" ({status})" if status else "")
        blocks.append(details(summary_text(summary), join_blocks(body)))
    return join_blocks(blocks)


def render_step(ctx: Ctx, step: Step) -> str:
    """One plain step; "" for steps with nothing to show, a placeholder for unknown types."""
    lb = ctx.labels
    kind = step.step_type
    c = as_dict(step.content)
    if kind in SILENT:
        return ""
    if kind == "ASI_TOOL_INPUT":
        return _tool(ctx, step, lb.tool_input)
    if kind == "ASI_TOOL_OUTPUT":
        return _tool(ctx, step, lb.tool_output)
    if kind == "THOUGHT":
        text = as_str(c.get("thought")) or as_str(c.get("text"))
        return f"**{lb.thinking}**\n\n" + quote(text.strip("\n")) if text.strip() else ""
    if kind == "SEARCH_WEB":
        queries = it.query_strings(c.get("queries"))
        return f"**{lb.web_search}**\n\n" + "\n".join(f"- {q}" for q in queries) if queries else ""
    if kind == "SEARCH_RESULTS":
        lines = it.source_lines(c.get("web_results"))
        return (
            details(lb.search_results + lb.par(str(len(lines))), "\n".join(lines)) if lines else ""
        )
    if kind == "GET_URL_CONTENT":
        urls = [first_str(p, "url", "link") for p in dicts(c.get("pages"))]
        urls = [u for u in urls if u]
        return (
            f"**{lb.read_pages}**\n\n" + "\n".join(f"- {link(u, u)}" for u in urls) if urls else ""
        )
    if kind in ("LOAD_SKILL", "LOAD_SKILL_RESPONSE"):
        names = _strings(c.get("skill_names")) or _strings(c.get("loaded_skills"))
        return f"**{kind}**: " + ", ".join(names)
    if kind == "RESEARCH_ANSWER":
        title = one_line(as_str(c.get("title")))
        line = f"**{lb.research_report}**: {title}"
        name, url = as_str(c.get("file_name")), as_str(c.get("url"))
        extra = [f"`{name}`"] if name else []
        if url:
            extra.append(link(url, url))
        return line + (" — " + " · ".join(extra) if extra else "")
    if kind == "CODE":
        return _code(ctx, c)
    if kind == "ATTACHMENT":
        lines = []
        for a in dicts(c.get("attachments")):
            name, url = first_str(a, "name", "title"), first_str(a, "url", "link")
            if url:
                lines.append("- " + link(name, url))
            elif name:
                lines.append(f"- {name}")
        return f"**{lb.attachments}**\n\n" + "\n".join(lines) if lines else ""
    if kind == "URL_NAVIGATE":
        urls = _strings(c.get("urls"))
        return (
            f"**{lb.open_pages}**\n\n" + "\n".join(f"- {link(u, u)}" for u in urls) if urls else ""
        )
    if kind == "CREATE_CHART":
        caption = as_str(c.get("caption")).strip()
        return f"**{lb.create_chart}**" + (f": {caption}" if caption else "")
    if kind == "GENERATE_IMAGE_RESULTS":
        lines = []
        for img in dicts(c.get("image_results")):
            url = first_str(img, "url", "image_url")
            if not url:
                continue
            w, h = as_str(img.get("image_width")), as_str(img.get("image_height"))
            lines.append(f"- {link(url, url)}" + (f" ({w}×{h})" if w and h else ""))
        return f"**{lb.images}**\n\n" + "\n".join(lines) if lines else ""
    if kind == "COUNCIL_ROUND":
        return _council_round(ctx, step)
    if kind == "COUNCIL_RESEARCH":
        return _council_research(ctx, step)
    return f"**{kind}** *({lb.unrendered})*"


def render_steps(ctx: Ctx, steps: list[Step]) -> str:
    """Every non-empty step rendering, separated by blank lines."""
    return join_blocks([render_step(ctx, s) for s in steps])


# List-like steps are filtered element by element: (content key, element -> its text).
_ELEMENTS: dict[str, tuple[str, Any]] = {
    "SEARCH_WEB": (
        "queries",
        lambda q: first_str(q, "query", "text") if isinstance(q, dict) else as_str(q),
    ),
    "SEARCH_RESULTS": (
        "web_results",
        lambda r: first_str(as_dict(r), "name", "title") + first_str(as_dict(r), "url", "link"),
    ),
    "GET_URL_CONTENT": ("pages", lambda p: first_str(as_dict(p), "url", "link")),
    "URL_NAVIGATE": ("urls", as_str),
}


def content_only(ctx: Ctx) -> Ctx:
    """The same context with every label blank: renders content without decoration."""
    return ctx.content_only()


class Shown:
    """Is a text already on the page? Compared on letters and digits only; short texts must
    appear verbatim as whole words, so "ok" is not hidden by "broken"."""

    def __init__(self, md: str) -> None:
        self.md = md
        self._squashed: str | None = None

    @property
    def squashed(self) -> str:
        # Squashing the whole page is most of a check's cost, and most checks never need it
        # (see the verbatim test below): done on first need.
        if self._squashed is None:
            self._squashed = squash(self.md)
        return self._squashed

    def __contains__(self, text: str) -> bool:
        sq = squash(text)
        if not sq:
            return True
        if len(sq) >= SQUASH_SURE:
            # Most checks find the text verbatim; the squashed page is made on first need.
            return squashed_on_page(text, sq, self.md) or sq in self.squashed
        word = text.strip()
        if word not in self.md:  # a plain substring test first: the regex scans the page
            return False
        pattern = r"(?<!\w)" + re.escape(word) + r"(?!\w)"
        return re.search(pattern, self.md) is not None


def novel_steps(ctx: Ctx, steps: list[Step], shown_md: str) -> list[Step]:
    """The parts of `steps` whose content is not already in `shown_md`.

    Workflow blocks are a second, sometimes lagging copy of an entry's plain steps; rendering
    both in full would double every turn, rendering one alone can lose content. Tool steps
    are filtered item by item, list-like steps element by element, other steps whole.
    """
    return _novel(ctx, steps, Shown(shown_md))


def _novel(ctx: Ctx, steps: list[Step], shown: Shown) -> list[Step]:
    bare = content_only(ctx)
    out: list[Step] = []
    for step in steps:
        kind = step.step_type
        items = as_list(step.content.get("workflow_items"))
        if kind == "COUNCIL_RESEARCH":
            reduced = _novel_council(ctx, step, shown)
            if reduced is not None:
                out.append(reduced)
        elif kind in ("ASI_TOOL_INPUT", "ASI_TOOL_OUTPUT") and items:
            keep = [i for i in items if it.render_item(bare, i) not in shown]
            if keep:
                out.append(replace(step, content={**step.content, "workflow_items": keep}))
        elif kind in _ELEMENTS:
            key, text_of = _ELEMENTS[kind]
            elems = [e for e in as_list(step.content.get(key)) if text_of(e) not in shown]
            if elems:
                out.append(replace(step, content={**step.content, key: elems}))
        elif render_step(bare, step) not in shown:
            out.append(step)
    return out


def _novel_council(ctx: Ctx, step: Step, shown: Shown) -> Step | None:
    """A COUNCIL_RESEARCH step reduced to the model steps and answers not yet shown."""
    raw = dict(step.raw or step.content)
    states: dict[str, Any] = {}
    for model, state in as_dict(raw.get("model_states")).items():
        st = dict(as_dict(state))
        inner = _novel(ctx, [step_from_dict(s) for s in dicts(st.get("steps"))], shown)
        st["steps"] = [{**s.raw, "content": s.content} for s in inner]
        answer = "".join(c for c in as_list(st.get("answer_chunks")) if isinstance(c, str))
        if answer in shown:
            st["answer_chunks"] = []
        if as_str(st.get("mock_thought")) in shown:
            st["mock_thought"] = ""
        if st["steps"] or st.get("answer_chunks") or st.get("mock_thought"):
            states[model] = st
    if not states:
        return None
    raw["model_states"] = states
    return replace(step, raw=raw)
