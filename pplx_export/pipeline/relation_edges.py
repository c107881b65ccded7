"""The relations graph's edges (protocol.md §8), computed from per-thread facts. Pure.

`ThreadFacts` is what one thread contributes (read from its raw files by
`pipeline.relation_facts`); `build_edges` turns the facts of a whole archive into the four edge
kinds, in the protocol's order: `same_space`, `same_prompt`, `subagent_of`, `references`.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from pplx_export.models import JSON, RelationEdge
from pplx_export.util import threadref
from pplx_export.util.jsonobj import attrs_json

KINDS = ("same_space", "same_prompt", "subagent_of", "references")
EVIDENCE_KEY_MAX = 80
TASKS_SOURCE = "perplexity_tasks"
LINK_EVIDENCE = "thread link in answer/citation"
BARE_EVIDENCE = "uuid mentioned in content"

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
BARE_UUID = re.compile(_UUID, re.I)
_STRIP = " \t.,!?;:。，！？；：…、"
_WS = re.compile(r"\s+")


def normalize_query(query: str) -> str:
    """NFKC, strip, casefold, collapse whitespace, strip trailing/leading punctuation (§8)."""
    text = unicodedata.normalize("NFKC", query or "").strip().casefold()
    return _WS.sub(" ", text).strip(_STRIP).strip()


def link_uuids(texts: Iterable[str]) -> set[str]:
    """Lower-cased thread UUIDs of perplexity.ai thread links in `texts`: `/search/`,
    `/thread/` or `/computer/tasks/` followed by a UUID or a title slug (protocol §9.4)."""
    return {u for t in texts if t for u in threadref.link_uuids(t)}


def bare_uuids(text: str) -> set[str]:
    return {m.lower() for m in BARE_UUID.findall(text or "")}


class SubAgentRef(NamedTuple):
    """A sub-agent run of a thread (a JSON array in the facts cache)."""

    sub_id: str
    headline: str = ""
    thread_uuid: str = ""  # the background entry's backend_uuid


@dataclass
class ThreadFacts:
    """What one archived thread contributes to the graph."""

    uuid: str  # lower-cased web UUID
    rel: str  # thread directory relative to the archive root
    title: str = ""
    space_slug: str = ""
    # The first query, normalized (`normalize_query`): the same_prompt cluster key, kept
    # in the cache so a rebuild normalizes nothing. "" never clusters (a degraded shell).
    prompt_key: str = ""
    first_source: str = ""  # the first turn's query_source
    first_created_us: int = 0
    links: list[str] = field(default_factory=list)  # thread links, sorted, lower-cased
    mentions: list[str] = field(default_factory=list)  # bare UUIDs, sorted, lower-cased
    sub_agents: list[SubAgentRef] = field(default_factory=list)
    degraded: bool = False  # no raw_entries.json: identity from thread.json only

    def to_json(self) -> JSON:
        keys = "uuid rel title space_slug prompt_key first_source first_created_us links mentions"
        subs = [[s.sub_id, s.headline, s.thread_uuid] for s in self.sub_agents]
        return attrs_json(self, keys + " sub_agents degraded", sub_agents=subs)

    @classmethod
    def from_json(cls, doc: JSON) -> ThreadFacts:
        """The inverse of `to_json`; raises (KeyError/TypeError/ValueError) on a record
        that is not exactly of that shape (the lenient path of the facts cache)."""
        uuid, rel, title, slug, query, source = _strs([doc[k] for k in _TEXT_FIELDS], 6)
        created, degraded = doc["first_created_us"], doc["degraded"]
        if type(created) is not int or type(degraded) is not bool:
            raise TypeError("first_created_us or degraded of the wrong type")
        subs = [SubAgentRef(*_strs(s, 3)) for s in _list(doc["sub_agents"])]
        links, mentions = _strs(doc["links"]), _strs(doc["mentions"])
        return cls(uuid, rel, title, slug, query, source, created, links, mentions, subs, degraded)


_TEXT_FIELDS = ("uuid", "rel", "title", "space_slug", "prompt_key", "first_source")


def _list(value: object) -> list[object]:
    if not isinstance(value, list):
        raise TypeError(f"expected a list, got {type(value).__name__}")
    return value


def _strs(value: object, n: int | None = None) -> list[str]:
    """`value` when it is a list of strings (of length n, if given); else TypeError."""
    items = _list(value)
    if (n is not None and len(items) != n) or not all(type(v) is str for v in items):
        raise TypeError("expected a list of strings")
    return items  # type: ignore[return-value]


def _same_space(facts: list[ThreadFacts]) -> list[RelationEdge]:
    edges = [
        RelationEdge(f.uuid, f"space:{f.space_slug}", "same_space", f"member of {f.space_slug}")
        for f in facts
        if f.space_slug
    ]
    edges.sort(key=lambda e: (e.dst, e.src))
    return edges


def _same_prompt(facts: list[ThreadFacts]) -> list[RelationEdge]:
    clusters: dict[str, list[ThreadFacts]] = {}
    for f in facts:
        key = f.prompt_key
        if key:
            clusters.setdefault(key, []).append(f)
    edges: list[RelationEdge] = []
    for key in sorted(clusters):
        members = sorted(clusters[key], key=lambda f: (f.first_created_us or 0, f.uuid))
        for a, b in itertools.pairwise(members):
            tasks = a.first_source == TASKS_SOURCE and b.first_source == TASKS_SOURCE
            cls = TASKS_SOURCE if tasks else "manual_resend"
            evidence = f"same first query ({cls}): {key[:EVIDENCE_KEY_MAX]}"
            edges.append(RelationEdge(a.uuid, b.uuid, "same_prompt", evidence))
    return edges


def _subagent_of(
    facts: list[ThreadFacts], archived: set[str], archived_note: str
) -> list[RelationEdge]:
    edges: list[RelationEdge] = []
    for f in facts:
        seen: set[str] = set()
        for sub in f.sub_agents:
            if not sub.sub_id or sub.sub_id in seen:
                continue
            seen.add(sub.sub_id)
            evidence = sub.headline or sub.sub_id
            child = sub.thread_uuid.lower()
            if child and child != f.uuid and child in archived:
                evidence += archived_note.format(uuid=child)
            edges.append(RelationEdge(f.uuid, sub.sub_id, "subagent_of", evidence))
    return edges


def _references(facts: list[ThreadFacts], archived: set[str]) -> list[RelationEdge]:
    found: dict[tuple[str, str], set[str]] = {}
    for f in facts:
        for uuids, evidence in ((f.links, LINK_EVIDENCE), (f.mentions, BARE_EVIDENCE)):
            for dst in uuids:
                if dst != f.uuid and dst in archived:
                    found.setdefault((f.uuid, dst), set()).add(evidence)
    return [
        RelationEdge(src, dst, "references", "; ".join(sorted(found[(src, dst)])))
        for src, dst in sorted(found)
    ]


def build_edges(
    facts: list[ThreadFacts], *, archived_note: str = " (sub-agent thread archived: {uuid})"
) -> list[RelationEdge]:
    """Every edge of the archive, kinds in protocol order. `facts` in archive path order,
    one per thread UUID."""
    archived = {f.uuid for f in facts}
    return [
        *_same_space(facts),
        *_same_prompt(facts),
        *_subagent_of(facts, archived, archived_note),
        *_references(facts, archived),
    ]


def edge_json(edge: RelationEdge) -> JSON:
    return {"src": edge.src, "dst": edge.dst, "kind": edge.kind, "evidence": edge.evidence}
