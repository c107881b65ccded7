"""Citation markers: the answer's `[n]` become links to the turn's n-th source.

An answer counts its sources in its own list (the FINAL step's `web_results`, else the
entry's `sources`: `Turn.answer_sources`); the turn's other citations follow it, numbered
on. The turn file keeps every marker where it stands and makes it a reference link
(`[\\[n\\]]`, defined at the end of the file), so the answer's text reads as sent; the
compact conversation.md, which holds several answers, links each marker inline. Markers in
code (fenced blocks, code spans) and numbers the turn has no source for stay as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from pplx_export.models import Citation, Turn
from pplx_export.render.context import Ctx
from pplx_export.render.text import FENCE, link, link_target, link_text

# A run of markers such as `[1][2]`; not a link's label (`][1]`), an escaped bracket, a
# link (`[1](`), a reference definition (`[1]:`) or the text of a longer bracket (`[1][x]`).
_RUN = re.compile(r"(?<![\\\]!])((?:\[\d{1,3}\])+)(?![(:\[])")
_MARK = re.compile(r"\[(\d{1,3})\]")
_CODE_SPAN = re.compile(r"(`+)(?:.*?[^`])?\1(?!`)")


def numbered(turn: Turn) -> list[tuple[int, Citation]]:
    """The turn's citations with their numbers: the answer's own list first (a place without
    a URL keeps its number), then the turn's other citations numbered on."""
    own = turn.answer_sources or turn.citations
    out = [(n, c) for n, c in enumerate(own, 1) if c.url]
    urls = {c.url for c in own}
    n = len(own)
    for c in turn.citations:
        if c.url not in urls:
            urls.add(c.url)
            n += 1
            out.append((n, c))
    return out


def turn_cites(ctx: Ctx, turn: Turn) -> list[tuple[int, Citation]]:
    """`numbered(turn)`, memoised: conversation.md, the turn file and sources.md show it."""
    key = ("cites", turn.index)
    cites: list[tuple[int, Citation]] | None = ctx.memo.get(key)
    if cites is None:
        cites = ctx.memo[key] = numbered(turn)
    return cites


def marker_label(n: int) -> str:
    return f"\\[{n}\\]"


def citation_lines(cites: list[tuple[int, Citation]]) -> str:
    return "\n".join(f"- {marker_label(n)} {link(c.name, c.url)}" for n, c in cites)


def definitions(cites: list[tuple[int, Citation]], md: str) -> str:
    """Reference definitions for the markers that `md` uses."""
    return "\n".join(
        f"[{marker_label(n)}]: {link_target(c.url)}"
        for n, c in cites
        if f"[{marker_label(n)}]" in md
    )


def footnote(n: int, prefix: str = "") -> str:
    """The obsidian flavour's marker for source n: a native footnote, `[^n]`; `prefix`
    keeps the labels of several answers on one page apart (`[^2-1]`: turn 2, source 1)."""
    return f"[^{prefix}{n}]"


def footnote_definitions(cites: list[tuple[int, Citation]], md: str, prefix: str = "") -> str:
    """`[^n]: [title]( url )` for each footnote `md` uses, once, in source order.

    The spaces inside the parentheses change nothing for a reader with footnotes, and keep a
    plain CommonMark reader (no footnotes) from taking the line for a link reference
    definition whose destination is `[title](url)` (it is one when the title has no space,
    as CJK titles often have not): `[^n]` then stays text instead of a broken link."""
    return "\n".join(
        f"{footnote(n, prefix)}: [{link_text(c.name or c.url)}]( {link_target(c.url)} )"
        for n, c in cites
        if footnote(n, prefix) in md
    )


def footnote_markers(md: str, cites: list[tuple[int, Citation]], prefix: str = "") -> str:
    """`md` with each `[n]` that has a source made a footnote reference (`[^n]`, Obsidian's
    own): its reading view numbers them and lists the sources under the page."""
    known = {n for n, _ in cites}
    if not known:
        return md

    def run(m: re.Match[str]) -> str:
        out = ""
        was_note = True
        for x in _MARK.finditer(m.group(1)):
            is_note = int(x.group(1)) in known
            # A number without a source stays text: a space keeps `[1][^2]` from reading
            # as a reference link.
            if out and not (is_note and was_note):
                out += " "
            out += footnote(int(x.group(1)), prefix) if is_note else x.group(0)
            was_note = is_note
        return out

    return _rewrite(md, run)


def _rewrite(md: str, sub: Callable[[re.Match[str]], str]) -> str:
    if "[" not in md:
        return md
    out: list[str] = []
    fence = ""
    for line in md.split("\n"):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = ""
            out.append(line)
            continue
        if m:
            fence = m.group(1)
            out.append(line)
            continue
        if "[" not in line:
            out.append(line)
            continue
        pieces: list[str] = []
        last = 0
        for span in _CODE_SPAN.finditer(line):
            pieces.append(_RUN.sub(sub, line[last : span.start()]))
            pieces.append(span.group(0))
            last = span.end()
        pieces.append(_RUN.sub(sub, line[last:]))
        out.append("".join(pieces))
    return "\n".join(out)


def link_markers(md: str, cites: list[tuple[int, Citation]], inline: bool) -> str:
    """`md` with each `[n]` that has a source made a link: inline (`[\\[n\\]](url)`) or a
    reference (`[\\[n\\]]`, adjacent ones a space apart so no two read as one link)."""
    urls = {n: c.url for n, c in cites}
    if not urls:
        return md

    def one(m: re.Match[str]) -> str:
        n = int(m.group(1))
        url = urls.get(n)
        if url is None:
            return m.group(0)
        if inline:
            return f"[{marker_label(n)}]({link_target(url)})"
        return f"[{marker_label(n)}]"

    def run(m: re.Match[str]) -> str:
        parts = [one(x) for x in _MARK.finditer(m.group(1))]
        return "".join(parts) if inline else " ".join(parts)

    return _rewrite(md, run)


def rewrite_markers(md: str, one: Callable[[int], str | None]) -> str:
    """`md` with each `[n]` outside code written as `one(n)` says (kept as it is on None):
    marker forms other than the turn's own (render/council.py)."""

    def run(m: re.Match[str]) -> str:
        parts = []
        for x in _MARK.finditer(m.group(1)):
            written = one(int(x.group(1)))
            parts.append(x.group(0) if written is None else written)
        return "".join(parts)

    return _rewrite(md, run)


def link_markers_inline(md: str, urls: Mapping[int, str]) -> str:
    """`md` with each `[n]` that `urls` has written as an inline link to it; the others
    stay text."""
    if not urls:
        return md
    return rewrite_markers(
        md, lambda n: f"[{marker_label(n)}]({link_target(urls[n])})" if n in urls else None
    )
