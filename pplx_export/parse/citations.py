"""Citations (protocol.md §5.3): one normaliser and ONE dedupe routine for turn and thread."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pplx_export.models import Citation, Step
from pplx_export.parse.answers import final_answers
from pplx_export.util.lenient import as_dict, as_list, dicts, first_str

NAME_LIMIT = 200
SNIPPET_LIMIT = 500


def normalise(source: Any) -> Citation | None:
    """A raw source dict -> Citation; None when it is not a dict or has no URL."""
    if not isinstance(source, dict):
        return None
    url = _text(source, "url", "link").strip()
    if not url:
        return None
    return Citation(
        name=_text(source, "name", "title")[:NAME_LIMIT],
        url=url,
        snippet=_text(source, "snippet", "text")[:SNIPPET_LIMIT],
        timestamp=_text(source, "timestamp", "date"),
        category=_text(source, "category", "type") or "web",
    )


def _text(source: dict[str, Any], key: str, other: str) -> str:
    """`first_str(source, key, other)` for the two-name fields of a source, in one frame
    (a re-render normalises some 60 sources per thread, each with five such fields)."""
    value = source.get(key)
    if value is None:
        value = source.get(other)
        if value is None:
            return ""
    return value if type(value) is str else first_str({key: value}, key)


def normalise_all(sources: Iterable[Any]) -> list[Citation]:
    out = []
    for source in sources:
        citation = normalise(source)
        if citation is not None:
            out.append(citation)
    return out


def dedupe(citations: Iterable[Citation]) -> list[Citation]:
    """Keep the first occurrence of each URL; drop empty URLs."""
    seen: set[str] = set()
    out = []
    for citation in citations:
        if not citation.url or citation.url in seen:
            continue
        seen.add(citation.url)
        out.append(citation)
    return out


def item_sources(item: dict[str, Any]) -> list[Any]:
    """The raw sources of a WORKFLOW_ITEM_SOURCES item (empty for any other item)."""
    if item.get("type") != "WORKFLOW_ITEM_SOURCES":
        return []
    payload = as_dict(item.get("payload"))
    return as_list(as_dict(payload.get("sources_payload")).get("sources"))


def turn_citations(
    entry: dict[str, Any], steps: list[Step], finals: list[tuple[Step, Any]] | None = None
) -> list[Citation]:
    """Channels in order: entry.sources, FINAL web_results, plain-step SOURCES items.
    `finals`: `final_answers(steps)`, when the caller has it already."""
    raw: list[Any] = list(dicts(entry.get("sources")))
    for _step, decoded in final_answers(steps) if finals is None else finals:
        raw.extend(dicts(as_dict(decoded).get("web_results")))
    for step in steps:
        for item in dicts(step.content.get("workflow_items")):
            raw.extend(item_sources(item))
    return dedupe(normalise_all(raw))


def answer_sources(entry: dict[str, Any], finals: list[tuple[Step, Any]]) -> list[Citation]:
    """The list the answer's `[n]` markers count in: the `web_results` of the last FINAL step
    that has any, else `entry.sources`. Kept in place (no dedupe): marker n is item n; an
    item without a URL keeps its place as a Citation with an empty URL."""
    for _step, decoded in reversed(finals):
        results = as_list(as_dict(decoded).get("web_results"))
        if results:
            return [normalise(r) or Citation("", "") for r in results]
    return [normalise(r) or Citation("", "") for r in as_list(entry.get("sources"))]


def thread_citations(per_turn: Iterable[list[Citation]]) -> list[Citation]:
    """Turns in order, first occurrence per URL, then a stable sort by name (code points)."""
    merged = dedupe(c for citations in per_turn for c in citations)
    return sorted(merged, key=lambda c: c.name)
