"""Typed views of the raw payloads the renderer shows (models.WfPayload, StepBody, …).

The raw dicts stay on the models (fidelity, and the parser's own passes read them); this
module reads them once, leniently, into the typed views the renderer consumes, so render/
holds no raw-dict access and no JSON decoding. `attach_views` fills every view of a
Conversation from its raw fields; `parse_thread` calls it, and so must anyone who builds a
Conversation by hand. Each reading here is exactly the one the renderer used to make.

Long because every typed view is read here, by one `Builder` sharing the lenient readers
(links, tables, to-do lists, questions, code): splitting by view would split the helpers
they share, and the renderer's reading rules are easiest to audit in one file.
"""

from __future__ import annotations

from typing import Any

from pplx_export.models import (
    NO_BODY,
    BgRoot,
    Citation,
    Conversation,
    CouncilModel,
    FieldOption,
    Image,
    Link,
    PlanGoals,
    QuestionField,
    RunLog,
    Step,
    StepBody,
    StubRun,
    Table,
    TextPayload,
    ThreadViews,
    TodoChange,
    TodoEntry,
    TodoList,
    UserQuestions,
    UserReply,
    WfItem,
    WfPayload,
    WfStep,
)
from pplx_export.util.lenient import as_dict, as_list, as_str, decode_json, dicts, first_str

TEXT = "WORKFLOW_ITEM_TEXT"
SOURCES = "WORKFLOW_ITEM_SOURCES"
QUERIES = "WORKFLOW_ITEM_QUERIES"
WORKFLOW = "WORKFLOW_ITEM_WORKFLOW"
TODO_LIST = "WORKFLOW_ITEM_TODO_LIST"
TABLE = "WORKFLOW_ITEM_TABLE"
USER_QUESTIONS = "WORKFLOW_ITEM_USER_QUESTIONS"
USER_RESPONSE = "WORKFLOW_ITEM_USER_RESPONSE"
CONTENT = "WORKFLOW_ITEM_CONTENT"

# Plain steps the renderer shows nothing of (their content feeds the answer instead).
SILENT_STEPS = frozenset({"INITIAL_QUERY", "FINAL", ""})


# --- small readings ---------------------------------------------------------------------------


def chunks_text(tp: dict[str, Any]) -> str:
    """A text payload's `text`, or its joined string `chunks` when the text is blank."""
    text = as_str(tp.get("text"))
    if text.strip():
        return text
    return "".join(c for c in as_list(tp.get("chunks")) if isinstance(c, str))


def query_strings(value: Any) -> list[str]:
    """Non-blank query texts of a list of strings or `{query|text}` objects."""
    out: list[str] = []
    for q in as_list(value):
        text = first_str(q, "query", "text") if isinstance(q, dict) else as_str(q)
        if text.strip():
            out.append(text)
    return out


def _link(d: dict[str, Any]) -> Link:
    return Link(first_str(d, "name", "title"), first_str(d, "url", "link"))


def _links(value: Any) -> list[Link]:
    return [_link(d) for d in dicts(value)]


def _strings(value: Any) -> list[str]:
    return [v for v in (as_str(x) for x in as_list(value)) if v.strip()]


# Tools whose unheaded text is the code they run, and the fence language it is shown in.
_CODE_TOOLS = {
    **dict.fromkeys(("bash", "sh", "shell", "zsh", "run_shell", "execute_bash"), "bash"),
    **dict.fromkeys(("python", "execute_python", "run_python", "code_interpreter"), "python"),
    **dict.fromkeys(("node", "javascript", "execute_javascript"), "javascript"),
}
_CODE_ICONS = frozenset({"code_execute", "terminal"})


def code_language(step: dict[str, Any]) -> str:
    """The fence language of a step whose tool runs code ("text" when the tool is not
    known by name but its icon says so), "" for any other step."""
    tool = as_str(step.get("tool_name")).lower()
    if tool in _CODE_TOOLS:
        return _CODE_TOOLS[tool]
    return "text" if as_str(step.get("icon")) in _CODE_ICONS else ""


def _code_of(kind: str, text: str, is_mono: bool, variant: str, header: str, code: str) -> str:
    """TextPayload.code: a tool's `Input`, a script (`#!`), or the monospace text of a code
    step is code, whatever `is_mono` says (a shell script read as Markdown turns its
    comments into headings). The plain text of a code step is not: it is the step's own
    words ("Running command:"), the command follows in monospace."""
    if kind != TEXT or variant in ("answer", "thought", "thinking") or header == "Output":
        return ""
    if header == "Input" or text.startswith("#!"):
        return code or "text"
    return code if not header and is_mono else ""


def _cell(value: Any) -> str:
    if isinstance(value, dict):
        value = value.get("value")
    return as_str(value)


# --- workflow blocks, payloads, steps, items --------------------------------------------------


def _table(tp: dict[str, Any]) -> Table:
    columns = [
        as_str(c) if not isinstance(c, dict) else first_str(c, "name", "title", "key")
        for c in as_list(tp.get("columns"))
    ]
    if not columns:
        return Table()
    rows: list[list[str]] = []
    for row in as_list(tp.get("rows")):
        values: list[Any]
        if isinstance(row, dict):
            cells = row.get("cells")
            if isinstance(cells, dict):
                values = [cells.get(c) for c in columns]
                # Cells under keys that are not column names would otherwise vanish.
                values += [v for k, v in cells.items() if k not in columns]
            else:
                values = list(as_list(cells))
        else:
            values = list(as_list(row))
        texts = [_cell(v) for v in values]
        texts += [""] * (len(columns) - len(texts))
        rows.append(texts)
    return Table(columns, rows)


def _todo(tp: dict[str, Any]) -> TodoList:
    return TodoList(
        title=as_str(tp.get("title")),
        entries=[
            TodoEntry(as_str(t.get("status")), as_str(t.get("description")))
            for t in dicts(tp.get("items"))
        ],
        changes=[
            TodoChange(
                as_str(d.get("action")), as_str(d.get("description")), as_str(d.get("new_status"))
            )
            for d in dicts(as_dict(tp.get("diff")).get("items"))
        ],
    )


def _questions(up: dict[str, Any]) -> UserQuestions:
    return UserQuestions(
        title=as_str(up.get("title")),
        questions=[first_str(q, "question", "text") for q in dicts(up.get("questions"))],
        fields=[
            QuestionField(
                name=as_str(f.get("field_name")),
                multichoice=bool(f.get("allow_multichoice")),
                free_text=bool(f.get("allow_free_text")),
                attachments=bool(f.get("allow_attachments")),
                options=[
                    FieldOption(
                        as_str(o.get("title")),
                        as_str(o.get("description")),
                        bool(o.get("is_free_text_selection")),
                    )
                    for o in dicts(f.get("options"))
                ],
            )
            for f in dicts(up.get("fields"))
        ],
    )


class Builder:
    """Builds views; a raw payload met twice (a stub payload is also a background root's
    item) gets one view. One per `attach_views` call: the raw dicts do not change meanwhile."""

    def __init__(self) -> None:
        # id(raw) -> (raw, view); the raw dict is kept so its id cannot be reused.
        self._payloads: dict[int, tuple[dict[str, Any], WfPayload]] = {}

    def payload(self, wp: dict[str, Any]) -> WfPayload:
        hit = self._payloads.get(id(wp))
        if hit is not None:
            return hit[1]
        listed = as_list(wp.get("steps"))
        chunks = [c for c in as_list(wp.get("objective_chunks")) if isinstance(c, str)]
        view = WfPayload(
            raw=wp,
            id=as_str(wp.get("id")),
            mode=as_str(wp.get("mode")),
            status=as_str(wp.get("status")),
            model=as_str(wp.get("model")),
            headline=as_str(wp.get("headline")),
            started_at=as_str(wp.get("started_at")),
            completed_at=as_str(wp.get("completed_at")),
            prompt="".join(chunks),
            is_anchor=any(chunks) or bool(wp.get("is_background_anchor")),
            n_listed=len(listed),
        )
        # Registered before its steps are read: a payload that contains itself (possible in
        # Python objects, not in decoded JSON) gets a view that contains itself, which the
        # renderer's depth and id guards stop, instead of endless recursion here.
        self._payloads[id(wp)] = (wp, view)
        view.steps = [self.step(s, n) for n, s in enumerate(listed, start=1) if isinstance(s, dict)]
        return view

    def step(self, step: dict[str, Any], position: int = 0) -> WfStep:
        return WfStep(
            raw=step,
            position=position,
            id=as_str(step.get("id")),
            title=as_str(step.get("title")),
            tool_name=as_str(step.get("tool_name")),
            icon=as_str(step.get("icon")),
            status=as_str(step.get("status")),
            started_at=as_str(step.get("started_at")),
            completed_at=as_str(step.get("completed_at")),
            items=[self.item(i, code_language(step)) for i in dicts(step.get("items"))],
        )

    def item(self, item: dict[str, Any], code: str = "") -> WfItem:
        """One item; `code` is the language of the step's tool when it runs code."""
        kind = as_str(item.get("type"))
        view = WfItem(item, kind)
        payload = item.get("payload")
        if not isinstance(payload, dict):
            payload = {}
        wp = payload.get("workflow_payload")
        if isinstance(wp, dict):
            view.workflow = self.payload(wp)
        if kind in (TEXT, SOURCES):
            tp = as_dict(payload.get("text_payload"))
            variant = as_str(tp.get("variant")) or as_str(item.get("variant"))
            header = as_str(tp.get("header"))
            text = chunks_text(tp)
            is_mono = bool(tp.get("is_mono"))
            view.text = TextPayload(
                text, variant, header, is_mono, _code_of(kind, text, is_mono, variant, header, code)
            )
            if kind == SOURCES:
                sp = as_dict(payload.get("sources_payload"))
                view.sources = _links(sp.get("sources"))
                view.asset_uuids = [u for u in _strings(sp.get("asset_uuids")) if u]
        elif kind == QUERIES:
            view.queries = query_strings(as_dict(payload.get("queries_payload")).get("queries"))
        elif kind == TODO_LIST:
            view.todo = _todo(as_dict(payload.get("todo_list_payload")))
        elif kind == TABLE:
            view.table = _table(as_dict(payload.get("table_payload")))
        elif kind == USER_QUESTIONS:
            view.questions = _questions(as_dict(payload.get("user_questions_payload")))
        elif kind == USER_RESPONSE:
            view.replies = [
                UserReply(as_str(r.get("question")), as_str(r.get("answer")))
                for r in dicts(as_dict(payload.get("user_response_payload")).get("responses"))
            ]
        elif kind == CONTENT:
            view.entities = [
                as_str(e.get("description"))
                for e in dicts(as_dict(payload.get("content_payload")).get("entities"))
            ]
        return view

    # --- plain steps ----------------------------------------------------------------------

    def body(self, step: Step) -> StepBody:
        """What the renderer shows of a plain step, read from its content."""
        kind = step.step_type
        if kind in SILENT_STEPS:
            return NO_BODY
        c = as_dict(step.content)
        b = StepBody()
        if kind in ("ASI_TOOL_INPUT", "ASI_TOOL_OUTPUT"):
            b.items = [self.item(i) for i in dicts(c.get("workflow_items"))]
            ts = c.get("timestamp")
            b.time = as_str(ts) if ts else step.timestamp
        elif kind == "THOUGHT":
            b.text = as_str(c.get("thought")) or as_str(c.get("text"))
        elif kind == "SEARCH_WEB":
            b.queries = query_strings(c.get("queries"))
        elif kind == "SEARCH_RESULTS":
            b.links = _links(c.get("web_results"))
        elif kind == "GET_URL_CONTENT":
            b.urls = [u for u in (first_str(p, "url", "link") for p in dicts(c.get("pages"))) if u]
        elif kind in ("LOAD_SKILL", "LOAD_SKILL_RESPONSE"):
            b.names = _strings(c.get("skill_names")) or _strings(c.get("loaded_skills"))
        elif kind == "RESEARCH_ANSWER":
            b.title, b.file_name = as_str(c.get("title")), as_str(c.get("file_name"))
            b.url = as_str(c.get("url"))
        elif kind == "CODE":
            b.language, b.script = as_str(c.get("language")), as_str(c.get("script"))
            b.stdout = as_str(c.get("stdout"))
            b.stderr = as_str(c.get("stderr")) or as_str(c.get("error"))
        elif kind == "ATTACHMENT":
            b.links = _links(c.get("attachments"))
        elif kind == "URL_NAVIGATE":
            b.urls = _strings(c.get("urls"))
        elif kind == "CREATE_CHART":
            b.caption = as_str(c.get("caption"))
        elif kind == "GENERATE_IMAGE_RESULTS":
            b.images = [
                Image(url, as_str(img.get("image_width")), as_str(img.get("image_height")))
                for img in dicts(c.get("image_results"))
                if (url := first_str(img, "url", "image_url"))
            ]
        elif kind == "COUNCIL_ROUND":
            b.queries = query_strings(c.get("queries"))
            b.numbered = [
                (n, Link(src.name, src.url) if isinstance(src, Citation) else _link(src))
                for n, src in enumerate(as_list(c.get("sources")), 1)
                if isinstance(src, Citation | dict)
            ]
        elif kind == "COUNCIL_RESEARCH":
            raw = step.raw or c
            b.research_query = as_str(raw.get("research_query"))
            models = []
            for model, state in as_dict(raw.get("model_states")).items():
                st = as_dict(state)
                models.append(
                    CouncilModel(
                        model=model,
                        mock_thought=as_str(st.get("mock_thought")),
                        steps=[self.nested_step(s) for s in dicts(st.get("steps"))],
                        answer="".join(
                            a for a in as_list(st.get("answer_chunks")) if isinstance(a, str)
                        ),
                        status=as_str(st.get("status")),
                    )
                )
            b.models = models
        else:
            return NO_BODY  # nothing to show beyond the kind (silent or unknown steps)
        return b

    def nested_step(self, raw: dict[str, Any]) -> Step:
        """A plain step nested in a raw dict (council model states, a background entry's log
        decoded for its payload): its content is taken as it is, not decoded."""
        step = Step(
            step_type=first_str(raw, "step_type", "type"),
            content=as_dict(raw.get("content")),
            uuid=first_str(raw, "uuid", "id"),
            raw=raw,
        )
        step.body = self.body(step)
        return step

    def attach_bodies(self, steps: list[Step]) -> None:
        for step in steps:
            step.body = self.body(step)


def step_view(step: Step) -> Step:
    """`step` with its body read (for steps built outside `parse_thread`)."""
    step.body = Builder().body(step)
    return step


def item_view(item: dict[str, Any]) -> WfItem:
    return Builder().item(item)


def payload_view(wp: dict[str, Any]) -> WfPayload:
    return Builder().payload(wp)


# --- thread-level lookups ---------------------------------------------------------------------


def _goals(entry: dict[str, Any]) -> list[str]:
    plans = [decode_json(entry.get("plan"))]
    plans += [as_dict(b).get("plan_block") for b in dicts(entry.get("blocks"))]
    out: list[str] = []
    for plan in plans:
        for goal in dicts(as_dict(plan).get("goals")):
            desc = as_str(goal.get("description")).strip("\n")
            # The `plan` field, the `plan` block and the `pro_search_steps` block can all
            # list the same goals (§9.7): each is shown once.
            if desc.strip() and desc not in out:
                out.append(desc)
    return out


def _plans(conv: Conversation, section: str) -> list[PlanGoals]:
    """Both raw responses' entries of the section that have goals, with their ids, in order
    (most entries have none)."""
    return [
        PlanGoals(ids, goals)
        for raw in (conv.raw_plain, conv.raw_blocks)
        for entry in dicts(as_dict(raw).get(section))
        if (goals := _goals(entry))
        for ids in [frozenset({as_str(entry.get("uuid")), as_str(entry.get("backend_uuid"))})]
    ]


def _roots(conv: Conversation, views: ThreadViews, build: Builder) -> None:
    for entry in dicts(as_dict(conv.raw_blocks).get("background_entries")):
        uuid = as_str(entry.get("uuid"))
        for block in dicts(entry.get("blocks")):
            wf = block.get("workflow_block")
            if not isinstance(wf, dict) or not wf:
                continue  # no steps: no run finds it
            root = BgRoot(uuid, build.payload(wf))
            for step in root.block.steps:
                views.roots_by_step.setdefault(step.id, []).append(len(views.roots))
            views.roots.append(root)


def _final_answer(steps: list[Step]) -> str:
    for step in reversed(steps):
        if step.step_type == "FINAL":
            answer = as_dict(decode_json(as_dict(step.content).get("answer"))).get("answer")
            if isinstance(answer, str) and answer.strip():
                return answer
    return ""


def _run_log(
    conv: Conversation, views: ThreadViews, build: Builder, wp: WfPayload, bg: str
) -> RunLog:
    """The plain step log of the run a stub or appendix payload shows: the sub-agent's
    parsed steps when it is mapped, else its plain background entry's, decoded."""
    run_id = wp.id
    sub = conv.sub_agents.get(run_id)
    if sub is not None and sub.steps:
        return RunLog(sub.steps, _final_answer(sub.steps))
    if not run_id and not bg:
        return RunLog()
    uuids = [bg] if bg else []
    for root in views.roots_of(run_id) if not bg else []:
        if root.uuid and root.uuid not in uuids:
            uuids.append(root.uuid)
    steps: list[Step] = []
    for entry in dicts(as_dict(conv.raw_plain).get("background_entries")):
        if as_str(entry.get("uuid")) in uuids:
            steps += [build.nested_step(s) for s in dicts(decode_json(entry.get("text")))]
    return RunLog(steps, _final_answer(steps))


def attach_views(conv: Conversation) -> Conversation:
    """Fill every typed view of `conv` from its raw fields (again, if they changed)."""
    build = Builder()
    for turn in conv.turns:
        build.attach_bodies(turn.steps)
    for sub in conv.sub_agents.values():
        build.attach_bodies(sub.steps)
    views = ThreadViews()
    views.plans["entries"] = _plans(conv, "entries")
    has_runs = bool(conv.sub_agents or conv.appendix or any(t.stub_wfs for t in conv.turns))
    if has_runs:
        views.plans["background_entries"] = _plans(conv, "background_entries")
        _roots(conv, views, build)
    conv.views = views
    for turn in conv.turns:
        turn.workflow = build.payload(turn.wf_block) if turn.wf_block is not None else None
        turn.stub_runs = []
        for wp in turn.stub_wfs:
            payload = build.payload(wp)
            turn.stub_runs.append(StubRun(payload, _run_log(conv, views, build, payload, "")))
    for item in conv.appendix:
        item.payload = build.payload(item.wp)
        item.log = _run_log(conv, views, build, item.payload, item.bg_uuid)
    return conv
