"""What every page of a thread starts with: YAML front matter and a navigation line.

The front matter (title, url, uuid, mode, space, created, updated, tags) is read by
Obsidian, Dataview, static-site generators and GitHub; every value is written as a JSON
string, which YAML reads as a double-quoted scalar. The navigation line gives the thread's
date, mode and space, a link back to the thread on perplexity.ai and links between the
thread's pages (conversation.md, the previous and next turn, sources.md, report.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from json.encoder import encode_basestring

from pplx_export.models import Conversation
from pplx_export.render.context import Ctx
from pplx_export.render.files import relative
from pplx_export.render.text import link, one_line
from pplx_export.util.timefmt import format_utc, parse_time, us_to_iso

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


def iso_time(value: str) -> str:
    """A stamp as ISO 8601 UTC (`2035-12-26T00:03:00Z`): thread.json files of the earlier
    tool hold `2035-12-26 00:03 UTC`, which YAML readers and Dataview take for text. An
    unreadable value is kept as it is (never dropped); fractions of a second are kept when
    there are any."""
    moment = parse_time(value)
    if moment is None:
        return value
    if moment.microsecond:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return format_utc(moment)


def front_matter(conv: Conversation, title: str) -> str:
    """The `---` block; `title` is the page's own (the thread title, with the turn for a
    turn file). `aliases` names the thread, so Obsidian's quick switcher and graph show
    it rather than the file name every thread shares (`conversation`, `turn_0001`).
    Keys without a value (no space, no creation time) are left out."""
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
        ("updated", iso_time(conv.last_updated)),
    ]
    lines = ["---", *(f"{key}: {_scalar(value)}" for key, value in fields if value)]
    alias = one_line(title)
    if alias:
        lines.append(f"aliases: [{_scalar(alias)}]")
    lines.append("tags: [" + ", ".join(_scalar(t) for t in tags) + "]")
    return "\n".join([*lines, "---"])


def turn_file(index: int) -> str:
    return f"turns/turn_{index:04d}.md"


# ctx.memo key: how many web pages the thread's pages show (None until counted).
SOURCE_COUNT = "source_count"


def source_count(ctx: Ctx) -> int:
    count: int = ctx.memo.get(SOURCE_COUNT, 0)
    return count


def drop_sources_link(ctx: Ctx, here: str, text: str) -> str:
    """The page at `here` without its navigation line's link to sources.md (written before
    the thread's sources were counted, and there are none)."""
    target = link(ctx.labels.sources_title, relative("sources.md", here), ctx.flavor)
    return text.replace(f" · {target}", "", 1)


# A thread directory is `⟨account⟩/⟨mode⟩/⟨dir⟩` under the archive root (product.md §3).
ROOT_FROM_THREAD = "../../../"
ARCHIVE_INDEX = "index.md"


def to_root(here: str, rel: str) -> str:
    """`rel` (relative to the archive root) as seen from the thread page at `here`."""
    return "../" * here.count("/") + ROOT_FROM_THREAD + rel


def nav_line(ctx: Ctx, here: str, facts: Sequence[str] = ()) -> str:
    """`> date · mode · space · facts · links` for the page at `here` (a path relative to
    the thread directory): the space's page, the thread on perplexity.ai, the archive's
    index, then the thread's other pages. One line: the page's only header quote."""
    lb, conv = ctx.labels, ctx.conv
    date = (created_iso(conv) or iso_time(conv.last_updated))[:10]
    parts = [x for x in (date, conv.mode) if x]
    if conv.space is not None and conv.space.title.strip():
        name = one_line(conv.space.title)
        if ctx.space_page:
            name = link(name, to_root(here, ctx.space_page), ctx.flavor)
        parts.append(f"{lb.space}{lb.sep}{name}")
    parts += facts
    if conv.url.startswith(("https://", "http://")):
        parts.append(link(lb.nav_open, conv.url))
    parts.append(link(lb.nav_index, to_root(here, ARCHIVE_INDEX), ctx.flavor))
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
    if ctx.memo.get(SOURCE_COUNT) != 0:
        pages.append((lb.sources_title, "sources.md"))
    if conv.report is not None:
        pages.append((lb.report_title, "report.md"))
    parts += [link(name, relative(rel, here), ctx.flavor) for name, rel in pages if rel != here]
    return "> " + " · ".join(parts)
