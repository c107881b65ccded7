"""sources.json and sources.md: the thread-level citation list (§5.3, §6.8)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from pplx_export.models import Citation
from pplx_export.render.cite import citation_lines, turn_cites
from pplx_export.render.context import Ctx
from pplx_export.render.page import front_matter, nav_line, turn_file
from pplx_export.render.text import finish, join_blocks, link, one_line
from pplx_export.util.jsontext import dumps_indented


def sources_json(citations: list[Citation]) -> str:
    doc = {
        "count": len(citations),
        "sources": [
            {"name": c.name, "url": c.url, "snippet": c.snippet, "timestamp": c.timestamp}
            for c in citations
        ],
    }
    return dumps_indented(doc, 1) + "\n"


# A Markdown link to a web page, as the renderer writes them (`link`): escaped brackets in
# the label, the target bare or in angle brackets.
_WEB_LINK = re.compile(r"\[((?:[^\]\\]|\\.)*)\]\((<https?://[^>\n]*>|https?://[^)\s]*)\)")
_UNESCAPE = re.compile(r"\\(.)")


# A fenced code block (its closing fence the same character, at least as long): links
# inside one are text, not links.
_FENCED = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^ {0,3}\1[`~]*[ \t]*$|\Z)", re.M | re.S)


def web_links(md: str) -> list[tuple[str, str]]:
    """(label, url) of every web link of a page outside fenced code, first one per URL."""
    if "](http" not in md and "](<http" not in md:
        return []
    if "```" in md or "~~~" in md:
        md = _FENCED.sub("", md)
    seen: dict[str, str] = {}
    for label, url in _WEB_LINK.findall(md):
        url = url.strip("<>")
        if url not in seen:
            seen[url] = _UNESCAPE.sub(r"\1", label) if "\\" in label else label
    return [(label, url) for url, label in seen.items()]


# Per turn: (index, the answer's numbered citations, the other web pages it shows).
Found = list[tuple[int, list[tuple[int, Citation]], list[tuple[str, str]]]]


def turn_sources(ctx: Ctx, pages: Mapping[str, str]) -> Found:
    """Per turn: (index, the answer's numbered citations, the other web pages its turn file
    shows: step results, sub-agent and council sources, links of the answer text). The
    thread's perplexity.ai link is the page's own, not a source."""
    out = []
    for turn in ctx.conv.turns:
        cites = turn_cites(ctx, turn)
        cited = {c.url.strip() for _, c in cites} | {ctx.conv.url}
        page = pages.get(turn_file(turn.index), "")
        others = [(name, url) for name, url in web_links(page) if url not in cited]
        if cites or others:
            out.append((turn.index, cites, others))
    return out


def _found_urls(found: Found) -> set[str]:
    urls = {c.url.strip() for _, cites, _ in found for _, c in cites}
    urls.update(url for _, _, others in found for _, url in others)
    return urls


def appendix_sources(ctx: Ctx, appendix_md: str, found: Found) -> list[tuple[str, str]]:
    """The web pages only conversation.md's background-task appendix shows (runs no turn
    claims, so no turn file shows them)."""
    shown = _found_urls(found) | {ctx.conv.url}
    return [(label, url) for label, url in web_links(appendix_md) if url not in shown]


def count_sources(found: Found, unattributed: Sequence[tuple[str, str]] = ()) -> int:
    """Distinct web pages shown across the thread's pages."""
    return len(_found_urls(found) | {url for _, url in unattributed})


def sources_md(ctx: Ctx, found: Found, unattributed: Sequence[tuple[str, str]] = ()) -> str:
    """Every source the thread's pages show, per turn under a link to its turn file: the
    answer's citations numbered as its `[n]` markers, then the pages its work process
    (steps, sub-agents, council models) showed; last, those of the background runs no turn
    claims, under a link to conversation.md. "(none)" when there are none."""
    lb = ctx.labels
    title = f"{one_line(ctx.conv.title) or lb.untitled} · {lb.sources_title}"
    blocks = [front_matter(ctx.conv, title), f"# {lb.sources_title}", nav_line(ctx, "sources.md")]
    for index, cites, others in found:
        name = f"{lb.turn} {index}"
        blocks.append(f"## {link(name, turn_file(index), ctx.flavor)}")
        if cites:
            blocks += [f"### {lb.answer}{lb.par(str(len(cites)))}", citation_lines(cites)]
        if others:
            lines = "\n".join(f"- {link(label, url)}" for label, url in others)
            blocks += [f"### {lb.work_process}{lb.par(str(len(others)))}", lines]
    if unattributed:
        heading = lb.appendix_heading.lstrip("# ")
        lines = "\n".join(f"- {link(label, url)}" for label, url in unattributed)
        blocks += [f"## {link(heading, 'conversation.md', ctx.flavor)}", lines]
    if not found and not unattributed:
        blocks.append(lb.none)
    return finish(join_blocks(blocks))
