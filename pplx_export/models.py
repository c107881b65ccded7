"""Dataclasses of the data model. No I/O here: parse/ builds these, render/ reads them.

Workflow blocks and payloads stay as the raw dicts the API sent (`wf_block`, `stub_wfs`,
`AppendixItem.wp`): the renderer walks them directly, so nothing in them can be lost by a
lossy conversion. Everything derived (answers, citations, attribution, interruptions) is
computed once by the parser and stored here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]

MODES = ("search", "deep-research", "computer", "council", "study")


@dataclass
class Account:
    name: str  # config key, e.g. "alice"
    display_name: str = ""  # names the archive folder
    email: str = ""  # session ownership check
    user_id: str = ""


@dataclass
class Space:
    uuid: str = ""
    title: str = ""
    slug: str = ""

    def to_json(self) -> JSON:
        return {"uuid": self.uuid, "title": self.title, "slug": self.slug}


@dataclass
class Citation:
    name: str
    url: str
    snippet: str = ""
    timestamp: str = ""
    category: str = "web"


@dataclass
class Step:
    """One plain step of an entry's `text` (protocol §3.5), or a synthetic COUNCIL_ROUND."""

    step_type: str
    content: JSON = field(default_factory=dict)
    uuid: str = ""
    timestamp: str = ""
    raw: JSON = field(default_factory=dict)


@dataclass
class SubAgent:
    sub_id: str  # toolu_… run id, or the council model id
    headline: str = ""
    prompt: str = ""
    steps: list[Step] = field(default_factory=list)
    answer: str = ""
    sources: list[Citation] = field(default_factory=list)
    status: str = ""
    locked_reason: str = ""
    thread_uuid: str = ""  # background entry backend_uuid
    started_at: str = ""
    completed_at: str = ""
    is_council: bool = False


@dataclass
class ReportInfo:
    title: str = ""
    file_name: str = ""
    url: str = ""

    def to_json(self) -> JSON:
        return {"title": self.title, "file_name": self.file_name, "url": self.url}


@dataclass
class TurnMeta:
    report_info: ReportInfo | None = None
    locked_reason: str = ""
    wf_status: str = ""
    query_source: str = ""


@dataclass
class Turn:
    index: int
    uuid: str = ""
    context_uuid: str = ""
    backend_uuid: str = ""
    query: str = ""
    author: str = ""
    created_us: int | None = None
    updated_us: int | None = None
    steps: list[Step] = field(default_factory=list)
    answer: str = ""  # §5.2 extract_answer
    display_answer: str = ""  # §5.2 _turn_answer (equals answer outside computer/council)
    citations: list[Citation] = field(default_factory=list)
    sub_agents: list[SubAgent] = field(default_factory=list)  # anchored in this turn
    wf_block: JSON | None = None
    stub_wfs: list[JSON] = field(default_factory=list)  # §5.6 ② payloads, assignment order
    is_stub: bool = False
    search_mode: str = ""
    display_model: str = ""
    metadata: TurnMeta = field(default_factory=TurnMeta)


@dataclass
class AppendixItem:
    """A background payload attributed to no turn (§5.6 ③)."""

    wp: JSON
    locked_reason: str = ""
    updated: str = ""
    bg_uuid: str = ""


@dataclass
class Interruption:
    location: str
    kind: str
    headline: str
    status: str

    def to_json(self) -> JSON:
        return {
            "location": self.location,
            "kind": self.kind,
            "headline": self.headline,
            "status": self.status,
        }


@dataclass
class Asset:
    """One version of a downloadable, inline or handle-only asset (§5.9)."""

    uuid: str
    asset_type: str = "UNKNOWN"
    filename: str = ""
    version: str = "v1"
    n_versions: int = 1
    created_at: str = ""
    url: str = ""
    dest_name: str = ""  # before the extension is resolved against the bytes
    downloaded_to: str = ""
    extracted_inline: bool = False
    inline_kind: str = ""  # "diff" | "code"
    inline_content: str = ""
    no_download_channel: bool = False
    file_handle: str = ""
    asset_expired: bool = False


@dataclass
class Report:
    info: ReportInfo
    candidates: list[Asset] = field(default_factory=list)  # download order (§2.8)
    body: str = ""


@dataclass
class RelationEdge:
    src: str
    dst: str
    kind: str
    evidence: str


@dataclass
class SchemaDrift:
    """Unknown step/item types, statuses and block usages: kept, counted, listed."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str, value: str) -> None:
        key = f"{kind}:{value}"
        self.counts[key] = self.counts.get(key, 0) + 1


@dataclass
class Conversation:
    web_uuid: str
    psc_uuid: str | None = None
    url: str = ""
    title: str = "untitled"
    author: str = ""
    export_via: str = ""
    mode: str = "search"
    last_updated: str = ""
    thread_access: Any = None
    space: Space | None = None
    turns: list[Turn] = field(default_factory=list)
    citations: list[Citation] = field(default_factory=list)
    assets: list[Asset] = field(default_factory=list)
    report: Report | None = None
    metadata: JSON = field(default_factory=dict)
    appendix: list[AppendixItem] = field(default_factory=list)
    interruptions: list[Interruption] = field(default_factory=list)
    answer_variants: list[JSON] = field(default_factory=list)
    sub_agents: dict[str, SubAgent] = field(default_factory=dict)  # §5.5 sub_map
    raw_plain: JSON = field(default_factory=dict)
    raw_blocks: JSON | None = None
    exported_at: str = ""
    warnings: list[str] = field(default_factory=list)
    # Schema drift is counted on first access: nothing rendered or stored shows it (it is
    # for reports such as `verify`), and counting costs a few percent of a re-render.
    drift_scan: Callable[[], SchemaDrift] | None = field(default=None, repr=False, compare=False)
    _drift: SchemaDrift | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def drift(self) -> SchemaDrift:
        if self._drift is None:
            self._drift = self.drift_scan() if self.drift_scan is not None else SchemaDrift()
            self.drift_scan = None  # the scan holds the raw responses and the block walks
        return self._drift
