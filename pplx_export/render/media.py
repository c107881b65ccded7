"""Images and videos with an answer (`media_items`, §9.7) and charts generated inside it:
embedded where the archive holds the file, linked to where they were found otherwise (a
thread file not downloaded yet is named with the reason, as in the Files list).

A chart the answer shows between two of its Markdown blocks (`ask_text_N_images`) stands
before the answer line that follows it there (`MediaItem.anchor`), or below the answer when
that line is not found; the other items are listed in the turn's media section.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

from pplx_export.models import LocalFile, MediaItem, Turn
from pplx_export.render.context import Ctx
from pplx_export.render.files import is_image, missing_reason, relative
from pplx_export.render.text import image, join_blocks, link, outside_fences, squash

# An anchor this short (letters and digits) may match an unrelated line: only an exact
# match counts then, not a line that starts with it.
_PREFIX_MIN = 12


def media_label(item: MediaItem) -> str:
    return item.title or item.kind or item.url


def shown_as(ctx: Ctx, item: MediaItem) -> tuple[str, LocalFile | None]:
    """(Markdown of the item's name, the thread's file it is): linked to the archived file
    when there is one, to its URL when it is no file of the thread (a web image). A thread
    file the archive lacks is named with the reason: its URL is a signed link that expires
    (and a credential while it lasts), which the archive never shows."""
    label = media_label(item)
    f = ctx.files.at_url(item.url)
    if f is None:
        return link(label, item.url, ctx.flavor), None
    if f.path:
        return link(label, relative(f.path, ctx.page), ctx.flavor), f
    return f"*{label}* · {missing_reason(ctx.labels, f)}", f


def media_md(ctx: Ctx, item: MediaItem) -> str:
    """An item standing in the answer: the archived image embedded, else its link."""
    named, f = shown_as(ctx, item)
    if f is not None and f.path and is_image(f.path):
        return image(media_label(item), relative(f.path, ctx.page), ctx.flavor)
    return named


def media_line(ctx: Ctx, item: MediaItem) -> str:
    """A list item: the item, its kind and the page it was found on; an archived image is
    also embedded (as the thread's files are)."""
    named, f = shown_as(ctx, item)
    kind = f" ({item.kind})" if item.kind and item.title else ""
    host = urlsplit(item.source).hostname or item.source
    page = f" — {link(host, item.source, ctx.flavor)}" if item.source else ""
    line = f"- {named}{kind}{page}"
    if f is not None and f.path and is_image(f.path):
        line += "\n\n  " + image(media_label(item), relative(f.path, ctx.page), ctx.flavor)
    return line


def media_section(ctx: Ctx, turn: Turn) -> str:
    """The images and videos attached to the answer that it does not show inline."""
    items = [m for m in turn.media if not m.inline]
    if not items:
        return ""
    return join_blocks([f"## {ctx.labels.media}", "\n".join(media_line(ctx, m) for m in items)])


def anchor_line(lines: Sequence[str], anchor: str) -> int | None:
    """The index of the answer line the anchor names (outside code), compared on letters
    and digits: the answer's headings, formulas and markers are rewritten by then."""
    want = squash(anchor)
    if not want:
        return None
    for n, line in outside_fences(lines):
        have = squash(line)
        if have == want or (len(want) >= _PREFIX_MIN and have.startswith(want)):
            return n
    return None


def with_inline_media(ctx: Ctx, turn: Turn, md: str) -> str:
    """`md` (the answer) with its inline charts where the answer showed them."""
    items = [m for m in turn.media if m.inline]
    if not items:
        return md
    lines = md.split("\n")
    before: dict[int, list[str]] = {}
    below: list[str] = []
    for item in items:
        n = anchor_line(lines, item.anchor)
        (below if n is None else before.setdefault(n, [])).append(media_md(ctx, item))
    out: list[str] = []
    for n, line in enumerate(lines):
        for shown in before.get(n, []):
            if out and out[-1].strip():
                out.append("")
            out += [shown, ""]
        out.append(line)
    return join_blocks(["\n".join(out), *below])
