"""What the search index holds for one thread: a Conversation (+ thread.json) -> rows. Pure.

One row per turn with its query, answer, work text (steps and workflow items), sub-agent
text and council per-model answers; one row per cited source; the report, when there is
one. The work text is every human-readable string of the turn's steps and workflow
payloads, found by walking them (so an unknown step type is searchable too), minus what is
not prose: identifiers, times, enum constants, URLs, and strings already indexed as the
query or the answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pplx_export.models import JSON, Conversation, Step, SubAgent, Turn
from pplx_export.search.text import segment
from pplx_export.util.lenient import as_dict, as_str

# Steps whose text is the query or the answer again.
_REPEAT_STEPS = frozenset({"INITIAL_QUERY", "FINAL"})
# Keys whose values are identifiers, times, states or links, never prose.
_SKIP_KEYS = frozenset(
    {
        "uuid",
        "id",
        "type",
        "step_type",
        "status",
        "timestamp",
        "url",
        "urls",
        "href",
        "link",
        "icon",
        "favicon",
        "image",
        "thumbnail",
        "intended_usage",
        "mime_type",
        "file_handle",
    }
)
_SKIP_SUFFIXES = ("_uuid", "_id", "_at", "_url", "_time", "_datetime", "_status", "_type")
_NOISE = re.compile(
    r"""\A(?:
        [0-9a-fA-F-]{32,36}                              # uuids, digests
      | [A-Z0-9_]+                                       # enum constants
      | \d{4}-\d\d-\d\d(?:[T\ ][\d:.]+)?(?:Z|[+-]\d\d:?\d\d)?  # times
      | [-+.\d\ ]+                                       # numbers
      | (?:https?|pplx|file|data):\S*                    # links
      | toolu_\w+                                        # run ids
    )\Z""",
    re.VERBOSE,
)
_CONTAINERS = frozenset({str, dict, list})
# Whether a key is skipped, per key seen: payload keys are a small vocabulary met hundreds
# of thousands of times per thousand threads. Bounded, for payloads whose keys are data.
_SKIPPED: dict[str, bool] = {}
_SKIPPED_MAX = 4096


def _skipped(key: object) -> bool:
    if type(key) is not str:
        return False
    known = _SKIPPED.get(key)
    if known is None:
        known = key in _SKIP_KEYS or key.endswith(_SKIP_SUFFIXES)
        if len(_SKIPPED) < _SKIPPED_MAX:
            _SKIPPED[key] = known
    return known


@dataclass
class TurnRow:
    turn: int
    file: str  # turns/turn_NNNN.md, relative to the thread directory
    query: str = ""
    answer: str = ""
    work: str = ""
    agents: str = ""
    council: str = ""


@dataclass
class SourceRow:
    turn: int  # 0: not tied to one turn
    title: str
    url: str


@dataclass
class ReportRow:
    title: str
    body: str
    file: str = "report.md"


@dataclass
class ThreadRow:
    uuid: str
    dir: str  # <account>/<mode>/<dir>, relative to the archive root
    account: str
    author: str
    export_via: str
    mode: str
    title: str
    space: str  # slug
    space_title: str
    date: str  # YYYY-MM-DD of lastUpdated
    updated: str  # lastUpdated as recorded
    url: str
    turns: list[TurnRow] = field(default_factory=list)
    sources: list[SourceRow] = field(default_factory=list)
    report: ReportRow | None = None


def turn_file(index: int) -> str:
    return f"turns/turn_{index:04d}.md"


def _strings(value: Any, seen: set[str]) -> list[str]:
    """The prose strings in a payload in document order, each once (`seen` is shared across
    the turn). A stack, not recursion: workflow trees nest deep and run to thousands of
    nodes, and this walk is most of what indexing a computer thread costs."""
    out: list[str] = []
    stack: list[Any] = [value]
    pop = stack.pop
    push = stack.append
    known = _SKIPPED.get
    while stack:
        item = pop()
        kind = type(item)
        if kind is str:
            text = item.strip()
            if len(text) < 2 or text in seen:
                continue
            # Prose has spaces (or CJK); only space-free ASCII strings can be noise.
            if " " not in text and text.isascii() and _NOISE.match(text):
                continue
            seen.add(text)
            out.append(text)
        elif kind is dict:
            # Reversed onto the stack: the strings come out in document order.
            for key, child in reversed(item.items()):
                if type(child) in _CONTAINERS:
                    # The cache looked up inline (a call per key is most of the cost);
                    # `_skipped` decides, and fills it, for a key not seen yet.
                    skip = known(key)
                    if not (_skipped(key) if skip is None else skip):
                        push(child)
        elif kind is list:
            for child in reversed(item):
                if type(child) in _CONTAINERS:
                    push(child)
    return out


def _step_texts(steps: Iterable[Step], seen: set[str]) -> Iterator[str]:
    for step in steps:
        if step.step_type in _REPEAT_STEPS:
            continue
        yield from _strings(step.content, seen)


def _agent_texts(sub: SubAgent, seen: set[str]) -> Iterator[str]:
    for text in (sub.headline, sub.prompt, sub.answer):
        text = text.strip()
        if text and text not in seen:
            seen.add(text)
            yield text
    yield from _step_texts(sub.steps, seen)


def _join(parts: Iterable[str]) -> str:
    return segment("\n".join(parts))


def _turn_row(turn: Turn, council: list[SubAgent], agents: list[SubAgent]) -> TurnRow:
    answer = turn.display_answer or turn.answer
    seen = {turn.query.strip(), answer.strip(), turn.answer.strip()}
    # Council answers first: the workflow block holds them again.
    council_parts: list[str] = []
    for sub in council:
        text = sub.answer.strip()
        if text:
            council_parts.append(f"{sub.headline or sub.sub_id}\n{text}")
            seen.add(text)
    work = list(_step_texts(turn.steps, seen))
    if turn.wf_block is not None:
        work.extend(_strings(turn.wf_block, seen))
    for wp in turn.stub_wfs:
        work.extend(_strings(wp, seen))
    agent_parts: list[str] = []
    for sub in agents:
        agent_parts.extend(_agent_texts(sub, seen))
    for sub in council:
        agent_parts.extend(_step_texts(sub.steps, seen))
    return TurnRow(
        turn=turn.index,
        file=turn_file(turn.index),
        query=segment(turn.query),
        answer=segment(answer),
        work=_join(work),
        agents=_join(agent_parts),
        council=_join(council_parts),
    )


def _sources(conv: Conversation) -> list[SourceRow]:
    rows: list[SourceRow] = []
    seen: set[str] = set()
    for turn in conv.turns:
        cited = list(turn.citations)
        for sub in turn.sub_agents:
            cited.extend(sub.sources)
        for c in cited:
            key = c.url or c.name
            if not key or key in seen:
                continue
            seen.add(key)
            rows.append(SourceRow(turn.index, segment(c.name), c.url))
    for c in conv.citations:
        key = c.url or c.name
        if key and key not in seen:
            seen.add(key)
            rows.append(SourceRow(0, segment(c.name), c.url))
    return rows


def thread_row(
    conv: Conversation,
    doc: JSON,
    rel: str,
    report_body: str | None = None,
    variant: str | None = None,
) -> ThreadRow:
    """The index rows of the thread in directory `rel` (thread.json `doc`, parsed `conv`).
    `variant`: the original of a rewritten answer, saved by hand (rewritten_answer_variant.md):
    searched as part of the answer of the turn it belongs to (the last rewritten turn)."""
    account, mode_folder, _ = [*rel.split("/", 2), "", ""][:3]
    space = conv.space
    if space is None:
        raw_space = as_dict(doc.get("space"))
        slug, space_title = as_str(raw_space.get("slug")), as_str(raw_space.get("title"))
    else:
        slug, space_title = space.slug, space.title
    updated = as_str(doc.get("lastUpdated")) or conv.last_updated
    row = ThreadRow(
        uuid=conv.web_uuid,
        dir=rel,
        account=account,
        author=as_str(doc.get("author")) or conv.author,
        export_via=as_str(doc.get("export_via")) or conv.export_via,
        mode=as_str(doc.get("mode")) or conv.mode or mode_folder,
        title=segment(conv.title),
        space=slug,
        space_title=space_title,
        date=updated[:10],
        updated=updated,
        url=conv.url,
    )
    for turn in conv.turns:
        council = [s for s in turn.sub_agents if s.is_council]
        agents = [s for s in turn.sub_agents if not s.is_council]
        row.turns.append(_turn_row(turn, council, agents))
    if conv.appendix and row.turns:
        # Background work attributed to no turn is shown after the last one.
        last = row.turns[-1]
        seen: set[str] = set()
        extra = [t for item in conv.appendix for t in _strings(item.wp, seen)]
        last.agents = "\n".join(p for p in (last.agents, _join(extra)) if p)
    if variant is not None and variant.strip() and row.turns:
        rewritten = {str(r.get("entry_uuid") or "") for r in conv.answer_variants} - {""}
        hits = [n for n, t in enumerate(conv.turns) if {t.uuid, t.backend_uuid} & rewritten]
        target = row.turns[hits[-1] if hits else -1]
        target.answer = "\n".join(p for p in (target.answer, segment(variant)) if p)
    row.sources = _sources(conv)
    if report_body is not None and report_body.strip():
        title = conv.report.info.title if conv.report is not None else ""
        row.report = ReportRow(segment(title or conv.title), segment(report_body))
    return row
