"""sources.json and sources.md: the thread-level citation list (§5.3, §6.8)."""

from __future__ import annotations

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


def sources_md(ctx: Ctx) -> str:
    """Each turn's citations under a link to its turn file, numbered as the turn's answer
    numbers them (the numbers its `[n]` markers and citation list use)."""
    lb = ctx.labels
    title = f"{one_line(ctx.conv.title) or lb.untitled} · {lb.sources_title}"
    blocks = [front_matter(ctx.conv, title), f"# {lb.sources_title}", nav_line(ctx, "sources.md")]
    for turn in ctx.conv.turns:
        cites = turn_cites(ctx, turn)
        if cites:
            name = f"{lb.turn} {turn.index}"
            blocks += [f"## {link(name, turn_file(turn.index), ctx.flavor)}", citation_lines(cites)]
    if len(blocks) == 1:
        blocks.append(lb.none)
    return finish(join_blocks(blocks))
