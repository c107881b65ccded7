"""Dataclasses of the data model. No I/O here: parse/ builds these, render/ reads them.

Workflow blocks and payloads are kept as the raw dicts the API sent (`wf_block`, `stub_wfs`,
`AppendixItem.wp`, `Step.content`, the raw responses), so nothing in them can be lost, and
the parser's passes read them. Beside each, the parser (parse/views.py) puts a typed view
(`Turn.workflow`, `Turn.stub_runs`, `AppendixItem.payload`, `Step.body`,
`Conversation.views`): every field already the lenient reading, the raw source kept as
`raw`. The renderer reads only the views. Everything derived (answers, citations,
attribution, interruptions) is computed once by the parser and stored here.

Long because it is the whole data model: some forty small dataclasses with no logic beyond
JSON forms and lookups, kept together so parse/ and render/ share one vocabulary that a
reader finds in one file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

# Defined in util (light to import, for the modules that need nothing else of this one).
from pplx_export.util.jsontypes import JSON as JSON

MODES = ("search", "deep-research", "computer", "council", "study")


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


# --- Typed views of the raw workflow payloads and step contents ------------------------------
# Built by parse/views.py from the raw dicts (which stay on the models for fidelity and for
# the parser's own passes); the renderer reads only these. Every field is already the
# lenient reading the renderer shows (missing or ill-typed -> empty); `raw` is the source.


@dataclass(slots=True)
class Link:
    """A named URL from a payload's source, page or attachment list (either may be empty)."""

    name: str
    url: str


@dataclass(slots=True, eq=False)
class TextPayload:
    text: str = ""  # `text`, or the joined `chunks` when the text is blank
    variant: str = ""  # the payload's variant, else the item's
    header: str = ""
    is_mono: bool = False
    # Code to show verbatim (a code tool's command or a tool's `Input`, even when the payload
    # does not say `is_mono`): the fence's language, "text" when unknown; "" for prose.
    code: str = ""


NO_TEXT = TextPayload()


@dataclass(slots=True)
class TodoEntry:
    status: str
    description: str


@dataclass(slots=True)
class TodoChange:
    action: str
    description: str
    new_status: str


@dataclass(slots=True, eq=False)
class TodoList:
    title: str = ""
    entries: Sequence[TodoEntry] = ()
    changes: Sequence[TodoChange] = ()


NO_TODO = TodoList()


@dataclass(slots=True, eq=False)
class Table:
    columns: Sequence[str] = ()
    # Cell texts, row by row (a row's cells under keys that are not column names follow its
    # column cells); rows shorter than the header are padded with "".
    rows: Sequence[list[str]] = ()


NO_TABLE = Table()


@dataclass(slots=True)
class FieldOption:
    title: str
    description: str
    free_text_selection: bool


@dataclass(slots=True)
class QuestionField:
    name: str
    multichoice: bool
    free_text: bool
    attachments: bool
    options: list[FieldOption]


@dataclass(slots=True, eq=False)
class UserQuestions:
    title: str = ""
    questions: Sequence[str] = ()  # the older `questions[]` shape
    fields: Sequence[QuestionField] = ()


NO_QUESTIONS = UserQuestions()


@dataclass(slots=True)
class UserReply:
    question: str
    answer: str


@dataclass(slots=True, eq=False)
class WfItem:
    """One workflow item (protocol.md §3.7). Only the payload of its own kind is read, except
    `workflow`, which any item may carry."""

    raw: JSON
    kind: str = ""
    text: TextPayload = NO_TEXT  # TEXT and SOURCES items
    sources: Sequence[Link] = ()  # SOURCES
    asset_uuids: Sequence[str] = ()  # SOURCES: the files a step shared (`share_file`)
    queries: Sequence[str] = ()  # QUERIES (non-blank)
    todo: TodoList = NO_TODO
    table: Table = NO_TABLE
    questions: UserQuestions = NO_QUESTIONS
    replies: Sequence[UserReply] = ()
    entities: Sequence[str] = ()  # CONTENT descriptions
    # The item's `workflow_payload` when it is an object (empty ones too); None otherwise.
    workflow: WfPayload | None = None


@dataclass(slots=True, eq=False)
class WfStep:
    """One step of a workflow block or payload."""

    raw: JSON
    position: int = 0  # 1-based place in the raw `steps` list (non-object entries count)
    id: str = ""
    title: str = ""
    tool_name: str = ""
    icon: str = ""
    status: str = ""
    started_at: str = ""
    completed_at: str = ""
    items: Sequence[WfItem] = ()  # the object items, in order


@dataclass(slots=True, eq=False)
class WfPayload:
    """A workflow block (an entry's `workflow_block`) or a nested `workflow_payload`."""

    raw: JSON
    id: str = ""
    mode: str = ""
    status: str = ""
    model: str = ""
    headline: str = ""
    started_at: str = ""
    completed_at: str = ""
    prompt: str = ""  # the joined string `objective_chunks`
    is_anchor: bool = False  # launches a sub-agent: has a prompt or is flagged as the anchor
    steps: Sequence[WfStep] = ()  # the object steps, in order
    n_listed: int = 0  # length of the raw `steps` list, non-object entries included


@dataclass(slots=True)
class Image:
    url: str
    width: str
    height: str


@dataclass(slots=True, eq=False)
class CouncilModel:
    """One model's state inside a plain COUNCIL_RESEARCH step."""

    model: str
    mock_thought: str = ""
    steps: Sequence[Step] = ()
    answer: str = ""  # the joined string `answer_chunks`
    status: str = ""


@dataclass(slots=True, eq=False)
class StepBody:
    """What the renderer shows of a plain step's content; only its kind's fields are set."""

    text: str = ""  # THOUGHT
    queries: Sequence[str] = ()  # SEARCH_WEB, COUNCIL_ROUND (non-blank)
    links: Sequence[Link] = ()  # SEARCH_RESULTS, ATTACHMENT
    # COUNCIL_ROUND sources with their 1-based place in the raw list (odd entries count).
    numbered: Sequence[tuple[int, Link]] = ()
    urls: Sequence[str] = ()  # GET_URL_CONTENT, URL_NAVIGATE (non-blank)
    names: Sequence[str] = ()  # LOAD_SKILL(_RESPONSE) skill names
    title: str = ""  # RESEARCH_ANSWER
    file_name: str = ""
    url: str = ""
    language: str = ""  # CODE
    script: str = ""
    stdout: str = ""
    stderr: str = ""  # `stderr`, else `error`
    caption: str = ""  # CREATE_CHART
    images: Sequence[Image] = ()  # GENERATE_IMAGE_RESULTS (with a URL)
    items: Sequence[WfItem] = ()  # ASI_TOOL_INPUT / _OUTPUT
    time: str = ""  # ASI_TOOL_*: the content's timestamp, else the step's
    research_query: str = ""  # COUNCIL_RESEARCH
    models: Sequence[CouncilModel] = ()


# The body of a step with nothing to show beyond its kind (shared: views are not modified).
NO_BODY = StepBody()


@dataclass(slots=True, eq=False)
class RunLog:
    """The plain step log of a background run shown from its workflow payload (§5.6 ②③)."""

    steps: Sequence[Step] = ()
    answer: str = ""  # the last FINAL step's answer


NO_LOG = RunLog()


@dataclass(slots=True, eq=False)
class StubRun:
    """A payload assigned to a stub turn (§5.6 ②) with its run's plain step log."""

    payload: WfPayload
    log: RunLog = NO_LOG


@dataclass(slots=True, eq=False)
class BgRoot:
    """A schematized background entry's root workflow block."""

    uuid: str
    block: WfPayload


@dataclass(slots=True, eq=False)
class PlanGoals:
    ids: frozenset[str]  # the entry's uuid and backend_uuid
    goals: list[str]


@dataclass(eq=False)
class ThreadViews:
    """Thread-level lookups in the raw responses, as typed views."""

    # Plan goals of the entries of each section ("entries", "background_entries") that have
    # any, from both responses, in order.
    plans: dict[str, list[PlanGoals]] = field(default_factory=dict)
    roots: list[BgRoot] = field(default_factory=list)  # every background root block
    # Step id -> positions in `roots` of the roots with a step of that id.
    roots_by_step: dict[str, list[int]] = field(default_factory=dict)

    def plans_of(self, section: str) -> list[PlanGoals]:
        return self.plans.get(section, [])

    def roots_of(self, run_id: str) -> list[BgRoot]:
        """The roots with a step for the run (`toolu_X` or `toolu_X:workflow`), in order."""
        if not run_id:
            return []
        hits = set(self.roots_by_step.get(run_id, ()))
        hits.update(self.roots_by_step.get(f"{run_id}:workflow", ()))
        return [self.roots[i] for i in sorted(hits)]


@dataclass
class Step:
    """One plain step of an entry's `text` (protocol §3.5), or a synthetic COUNCIL_ROUND."""

    step_type: str
    content: JSON = field(default_factory=dict)
    uuid: str = ""
    timestamp: str = ""
    raw: JSON = field(default_factory=dict)
    body: StepBody = NO_BODY  # the typed view (parse/views.py)


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


@dataclass(frozen=True)
class Loss:
    """Content the raw entry holds that the parsed turn did not get (protocol §9.1): an
    answer or sources in a shape this version does not read. Reported, never rendered as an
    empty answer; a re-render by a version that reads the shape clears it."""

    kind: str  # "answer" | "sources"
    where: str  # the raw field it was found in, e.g. `text.response.answer_markdown`
    size: int  # characters (answer) or items (sources)

    def to_json(self) -> JSON:
        return {"kind": self.kind, "where": self.where, "size": self.size}


@dataclass(frozen=True)
class MediaItem:
    """An image or video attached to an answer (`media_items` block, §9.7)."""

    url: str
    kind: str = ""  # "image" | "video" | whatever the block says
    title: str = ""
    source: str = ""  # the page it was found on
    # Inline in the answer (an `ask_text_N_images` block between its Markdown blocks): the
    # first line of the Markdown block after it, where the answer shows it; "" = below it.
    anchor: str = ""
    inline: bool = False


@dataclass
class TurnMeta:
    report_info: ReportInfo | None = None
    locked_reason: str = ""
    wf_status: str = ""
    query_source: str = ""
    # "official_export": the turn comes from Perplexity's data export, not from the API.
    imported_from: str = ""


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
    # The list the answer's `[n]` markers count in (§5.3 `web_results`, else `sources`): place
    # n-1 is marker n; a place without a URL keeps its number (empty `url`).
    answer_sources: list[Citation] = field(default_factory=list)
    sub_agents: list[SubAgent] = field(default_factory=list)  # anchored in this turn
    wf_block: JSON | None = None
    stub_wfs: list[JSON] = field(default_factory=list)  # §5.6 ② payloads, assignment order
    workflow: WfPayload | None = None  # the view of wf_block
    stub_runs: list[StubRun] = field(default_factory=list)  # the views of stub_wfs
    is_stub: bool = False
    search_mode: str = ""
    display_model: str = ""
    metadata: TurnMeta = field(default_factory=TurnMeta)
    related: list[str] = field(default_factory=list)  # `related_queries` (§9.7)
    media: list[MediaItem] = field(default_factory=list)  # `media_items` blocks (§9.7)
    answer_form: str = ""  # which §9.1 form the answer came from (steps|object|blocks|text|plan)
    losses: list[Loss] = field(default_factory=list)


@dataclass
class AppendixItem:
    """A background payload attributed to no turn (§5.6 ③)."""

    wp: JSON
    locked_reason: str = ""
    updated: str = ""
    bg_uuid: str = ""
    payload: WfPayload = field(default_factory=lambda: WfPayload({}))  # the view of wp
    log: RunLog = NO_LOG


@dataclass
class Interruption:
    location: str
    kind: str
    headline: str
    status: str

    def to_json(self) -> JSON:
        # Not dataclasses.asdict: its deep copy costs a re-render 1% (one call per turn).
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
    # The files an ASSET_DIFF changes (`asset_diff.files[].filename`), in its order: what
    # tells apart diffs that share one title.
    changes: tuple[str, ...] = ()
    no_download_channel: bool = False
    file_handle: str = ""
    asset_expired: bool = False
    # The schematized entry whose blocks listed it: the turn that produced it.
    entry_uuid: str = ""


# Why an asset version has no file in the archive (`LocalFile.missing`).
EXPIRED = "expired"  # the platform answered ASSET_NOT_FOUND: terminal
NO_CHANNEL = "no_download_channel"  # a cloud-workspace handle: nothing can fetch it
NOT_DOWNLOADED = "not_downloaded"  # not fetched (yet): `assets-backfill --online` may


@dataclass(frozen=True, slots=True)
class LocalFile:
    """One asset version as the archive holds it: what the renderer links. Built by sync from
    the assets, the manifest and the files on disk, so that render never reads the disk."""

    uuid: str
    filename: str  # the asset's own name (what a link shows)
    version: str = "v1"  # v1..vN, or "inline"
    n_versions: int = 1
    asset_type: str = ""
    path: str = ""  # relative to the thread directory (`assets/files/…`); "" when absent
    size: int | None = None  # bytes on disk
    missing: str = ""  # why there is no file: EXPIRED | NO_CHANNEL | NOT_DOWNLOADED
    entry_uuid: str = ""  # the entry (turn) that listed it; "" when unknown
    changes: tuple[str, ...] = ()  # a diff: the files it changes (its label)
    url: str = ""  # where it was downloaded from, without the query (matches media items)


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
    views: ThreadViews = field(default_factory=lambda: ThreadViews())  # lookups in both raws
    exported_at: str = ""
    warnings: list[str] = field(default_factory=list)
    # Schema drift is counted on first access: nothing rendered or stored shows it (it is
    # for reports such as `verify`), and counting costs a few percent of a re-render.
    drift_scan: Callable[[], SchemaDrift] | None = field(default=None, repr=False, compare=False)
    _drift: SchemaDrift | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def losses(self) -> list[tuple[int, Loss]]:
        """(turn index, loss) for every turn that did not get what its raw entry holds."""
        return [(t.index, loss) for t in self.turns for loss in t.losses]

    @property
    def drift(self) -> SchemaDrift:
        if self._drift is None:
            self._drift = self.drift_scan() if self.drift_scan is not None else SchemaDrift()
            self.drift_scan = None  # the scan holds the raw responses and the block walks
        return self._drift
