"""`relations/graph.md` and `relations/edges.jsonl` text (protocol.md §8). Pure.

graph.md is for a person: the edge count, a count per kind, then each kind grouped, every
thread linked to its directory in the archive. Spaces and same-prompt clusters small enough
to read also get a Mermaid diagram (GitHub and most Markdown viewers draw it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from json.encoder import encode_basestring

from pplx_export.models import RelationEdge
from pplx_export.render.labels import GraphLabels, graph_labels
from pplx_export.render.text import GITHUB, link, one_line

MERMAID_MAX_NODES = 25  # past this a diagram is a hairball, not a help
# Threads listed by name per space or cluster; the rest are counted (every edge is in
# edges.jsonl, and spaces/<slug>.md lists a space's threads).
LISTED_MAX = 20


@dataclass(frozen=True)
class ThreadRef:
    rel: str  # thread directory relative to the archive root
    title: str


def render_edges_jsonl(edges: list[RelationEdge]) -> str:
    """One `{"src","dst","kind","evidence"}` object per line; an empty graph is one `\\n`."""
    # The bytes of json.dumps(edge, ensure_ascii=False), one C string encoding per field
    # instead of an encoder object per line.
    enc = encode_basestring
    lines = [
        f'{{"src": {enc(e.src)}, "dst": {enc(e.dst)}, "kind": {enc(e.kind)}, '
        f'"evidence": {enc(e.evidence)}}}'
        for e in edges
    ]
    return "\n".join(lines) + "\n"


def code(text: str) -> str:
    """An inline code span that a backtick inside `text` cannot close early."""
    text = one_line(text)
    if "`" not in text:
        return f"`{text}`"
    return f"`` {text} ``"


class _Shown(dict[str, ThreadRef]):
    """The threads of one render, with each thread's link text built once (a thread shows
    up in several sections)."""

    def __init__(self, threads: Mapping[str, ThreadRef], flavor: str = GITHUB) -> None:
        super().__init__(threads)
        self.shown: dict[str, str] = {}
        self.flavor = flavor


def _thread(uuid: str, threads: Mapping[str, ThreadRef]) -> str:
    if isinstance(threads, _Shown):
        text = threads.shown.get(uuid)
        if text is None:
            text = threads.shown[uuid] = _thread_text(uuid, threads, threads.flavor)
        return text
    return _thread_text(uuid, threads)


def _thread_text(uuid: str, threads: Mapping[str, ThreadRef], flavor: str = GITHUB) -> str:
    ref = threads.get(uuid)
    if ref is None:
        return f"`{uuid[:8]}`"
    title = one_line(ref.title) or uuid[:8]
    return f"{link(title, '../' + ref.rel + '/conversation.md', flavor)} (`{uuid[:8]}`)"


def _mermaid_label(text: str) -> str:
    # Inside a quoted Mermaid label only `"` is special; entity codes keep it literal.
    return one_line(text).replace('"', "#quot;")[:60]


def _mermaid(pairs: list[tuple[str, str]], labels: Mapping[str, str]) -> str:
    ids: dict[str, str] = {}
    for a, b in pairs:
        for node in (a, b):
            ids.setdefault(node, f"n{len(ids)}")
    lines = ["```mermaid", "graph LR"]
    lines += [f'  {ids[n]}["{_mermaid_label(labels.get(n, n))}"]' for n in ids]
    lines += [f"  {ids[a]} --> {ids[b]}" for a, b in pairs]
    lines.append("```")
    return "\n".join(lines)


def _title_of(uuid: str, threads: Mapping[str, ThreadRef]) -> str:
    ref = threads.get(uuid)
    return (ref.title if ref else "") or uuid[:8]


def render_graph_md(
    edges: list[RelationEdge],
    threads: Mapping[str, ThreadRef],
    lang: str = "en",
    flavor: str = GITHUB,
) -> str:
    """graph.md for `edges`; `threads` maps web UUIDs to their directory and title."""
    lb = graph_labels(lang)
    threads = _Shown(threads, flavor)
    by_kind: dict[str, list[RelationEdge]] = {}
    for e in edges:
        by_kind.setdefault(e.kind, []).append(e)
    counts = Counter(e.kind for e in edges)
    out = [f"# {lb.title}", "", f"{lb.edges}: {len(edges)}", ""]
    out += [f"| {lb.kind} | {lb.count} |", "|---|---|"]
    out += [f"| {k} | {n} |" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    out += ["", f"## {lb.same_space}", ""]
    out += _spaces(by_kind.get("same_space", []), threads, lb)
    out += ["", f"## {lb.same_prompt}", ""]
    out += _clusters(by_kind.get("same_prompt", []), threads, lb)
    out += ["", f"## {lb.references}", ""]
    refs = by_kind.get("references", [])
    out += [f"- {_thread(e.src, threads)} → {_thread(e.dst, threads)} — {e.evidence}" for e in refs]
    out += [] if refs else [lb.none]
    out += ["", f"## {lb.subagent_of}", ""]
    subs = by_kind.get("subagent_of", [])
    out += [
        f"- {_thread(e.src, threads)} → {code(e.dst)} — {one_line(e.evidence)}" for e in subs
    ] or [lb.none]
    return "\n".join(out) + "\n"


def _spaces(
    edges: list[RelationEdge], threads: Mapping[str, ThreadRef], lb: GraphLabels
) -> list[str]:
    members: dict[str, list[str]] = {}
    for e in edges:
        members.setdefault(e.dst, []).append(e.src)
    if not members:
        return [lb.none]
    out: list[str] = []
    for dst in sorted(members):
        srcs = members[dst]
        out.append(f"- {code(dst)}: {lb.threads_n(len(srcs))}")
        out += [f"  - {_thread(s, threads)}" for s in srcs[:LISTED_MAX]]
        if len(srcs) > LISTED_MAX:
            out.append(f"  - {lb.more_n(len(srcs) - LISTED_MAX)}")
    diagram = [(s, dst) for dst in sorted(members) for s in members[dst]]
    if len({n for pair in diagram for n in pair}) <= MERMAID_MAX_NODES:
        labels = {s: _title_of(s, threads) for s, _ in diagram}
        out += ["", _mermaid(diagram, labels)]
    return out


def _cluster_key(evidence: str) -> str:
    # `same first query (<cls>): <key>`: one cluster may mix classes edge by edge.
    return evidence.split("): ", 1)[-1]


def _clusters(
    edges: list[RelationEdge], threads: Mapping[str, ThreadRef], lb: GraphLabels
) -> list[str]:
    groups: dict[str, list[RelationEdge]] = {}
    for e in edges:
        groups.setdefault(_cluster_key(e.evidence), []).append(e)
    if not groups:
        return [lb.none]
    out: list[str] = []
    diagram: list[tuple[str, str]] = []
    for key, group in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        chain = lb.chain_sep.join(
            f"{e.src[:8]}→{e.dst[:8]} ({e.evidence.split('(', 1)[-1].split(')', 1)[0]})"
            for e in group[:LISTED_MAX]
        )
        if len(group) > LISTED_MAX:
            chain += lb.chain_sep + lb.more_n(len(group) - LISTED_MAX)
        out.append(f"- {lb.threads_n(len(group) + 1)} {code(key)}: {chain}")
        nodes = list(dict.fromkeys([group[0].src] + [e.dst for e in group]))
        out += [f"  - {_thread(n, threads)}" for n in nodes[:LISTED_MAX]]
        if len(nodes) > LISTED_MAX:
            out.append(f"  - {lb.more_n(len(nodes) - LISTED_MAX)}")
        diagram += [(e.src, e.dst) for e in group]
    if len({n for pair in diagram for n in pair}) <= MERMAID_MAX_NODES:
        labels = {n: f"{_title_of(n, threads)} ({n[:8]})" for pair in diagram for n in pair}
        out += ["", _mermaid(diagram, labels)]
    return out
