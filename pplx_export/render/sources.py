"""sources.json and sources.md: the thread-level citation list (§5.3, §6.8)."""

from __future__ import annotations

from pplx_export.models import Citation
from pplx_export.render.labels import Labels
from pplx_export.render.text import finish, link
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


def sources_md(labels: Labels, citations: list[Citation]) -> str:
    lines = [f"# {labels.sources_title}", ""]
    lines += [f"{i}. {link(c.name, c.url)}" for i, c in enumerate(citations, 1)]
    return finish("\n".join(lines))
