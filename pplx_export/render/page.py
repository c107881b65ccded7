"""What every page of a thread starts with: YAML front matter and a navigation line.

The front matter (title, url, uuid, mode, space, created, updated, tags) is read by
Obsidian, Dataview, static-site generators and GitHub; every value is written as a JSON
string, which YAML reads as a double-quoted scalar. The navigation line gives the thread's
date, mode and space, a link back to the thread on perplexity.ai and links between the
thread's pages (conversation.md, the previous and next turn, sources.md, report.md).
"""

from __future__ import annotations

import re
from json.encoder import encode_basestring

from pplx_export.models import Conversation
from pplx_export.render.context import Ctx
from pplx_export.render.files import relative
from pplx_export.render.text import link, one_line
from pplx_export.util.timefmt import us_to_iso

# Line breaks YAML sees that JSON leaves unescaped.
_YAML_BREAKS = {"\u0085": "\\N", "\u2028": "\\L", "\u2029": "\\P"}
_TAG_UNSAFE = re.compile(r"[^\w/-]+")


def _scalar(value: str) -> str:
    # encode_basestring is what json.dumps(value, ensure_ascii=False) runs for a str,
    # without an encoder object per call (a re-render writes ~35 scalars per thread).
    text = encode_basestring(value)
    if "\u0085" in text or "\u2028" in text or "\u2029" in text:
        for char, escape in _YAML_BREAKS.items():
            text = text.replace(char, escape)
    return text


def _tag(prefix: str, value: str) -> str:
    return prefix + (_TAG_UNSAFE.sub("-", value.strip()).strip("-") or "untitled")


def created_iso(conv: Conversation) -> str:
    stamps = [t.created_us for t in conv.turns if t.created_us is not None]
    return us_to_iso(min(stamps)) if stamps else ""


def front_matter(conv: Conversation, title: str) -> str:
    """The `---` block; `title` is the page's own (the thread title, with the turn for a
    turn file)."""
    space = conv.space.title if conv.space is not None else ""
    tags = ["perplexity", _tag("mode/", conv.mode)]
    if conv.space is not None and (conv.space.slug or space):
        tags.append(_tag("space/", conv.space.slug or space))
    fields = [
        ("title", one_line(title)),
        ("url", conv.url),
        ("uuid", conv.web_uuid),
        ("mode", conv.mode),
        ("space", one_line(space)),
        ("created", created_iso(conv)),
        ("updated", conv.last_updated),
    ]
    lines = ["---", *(f"{key}: {_scalar(value)}" for key, value in fields)]
    lines.append("tags: [" + ", ".join(_scalar(t) for t in tags) + "]")
    return "\n".join([*lines, "---"])


def turn_file(index: int) -> str:
    return f"turns/turn_{index:04d}.md"


def nav_line(ctx: Ctx, here: str) -> str:
    """`> date · mode · space · links` for the page at `here` (a path relative to the
    thread directory): the thread on perplexity.ai, then the thread's other pages."""
    lb, conv = ctx.labels, ctx.conv
    date = (created_iso(conv) or conv.last_updated)[:10]
    parts = [x for x in (date, conv.mode) if x]
    if conv.space is not None and conv.space.title.strip():
        parts.append(f"{lb.space}{lb.sep}{one_line(conv.space.title)}")
    if conv.url.startswith(("https://", "http://")):
        parts.append(link(lb.nav_open, conv.url))
    pages: list[tuple[str, str]] = [(lb.nav_conversation, "conversation.md")]
    files = [turn_file(t.index) for t in conv.turns]
    if here in files:
        at = files.index(here)
        if at > 0:
            pages.append((f"← {lb.turn} {conv.turns[at - 1].index}", files[at - 1]))
        if at < len(files) - 1:
            pages.append((f"{lb.turn} {conv.turns[at + 1].index} →", files[at + 1]))
    elif files:
        pages.append((f"{lb.turn} {conv.turns[0].index} →", files[0]))
    pages.append((lb.sources_title, "sources.md"))
    if conv.report is not None:
        pages.append((lb.report_title, "report.md"))
    parts += [link(name, relative(rel, here), ctx.flavor) for name, rel in pages if rel != here]
    return "> " + " · ".join(parts)
