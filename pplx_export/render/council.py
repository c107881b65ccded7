"""Council steps (§6.6.3): the models' conclusions side by side, then one fold per model with
its search rounds, its numbered sources, its answer and what the step log adds about it."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from pplx_export.models import Citation, CouncilModel, Step, WfPayload, WfStep
from pplx_export.parse.views import QUERIES, SOURCES
from pplx_export.render.cite import link_markers_inline, rewrite_markers
from pplx_export.render.context import Ctx
from pplx_export.render.shown import Shown
from pplx_export.render.steps import council_model_body
from pplx_export.render.text import (
    FENCE,
    bold,
    cell,
    details,
    join_blocks,
    link,
    link_target,
    model_links,
    one_line,
    summary_text,
    work_md,
)
from pplx_export.render.tree import COUNCIL_MODE, conclusion_of, render_item, step_heading

# What the plain step log adds about each council model the workflow view folds: model id ->
# the model's reduced states (render.steps.novel_steps), shown inside that model's fold.
CouncilLog = Mapping[str, Sequence[CouncilModel]]
NO_LOG: CouncilLog = {}


def council_payloads(step: WfStep) -> list[WfPayload]:
    return [
        wp for item in step.items if (wp := item.workflow) is not None and wp.mode == COUNCIL_MODE
    ]


@dataclass(slots=True)
class _Round:
    """One query -> sources cycle of a model's search, in the order its items came."""

    queries: list[str] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)  # rendered: queries, texts, sources
    sources: list[str] = field(default_factory=list)  # the numbered source lines

    def __bool__(self) -> bool:
        return bool(self.queries or self.parts or self.sources)


@dataclass(slots=True)
class _Search:
    """A model's run as its fold shows it: the step blocks and the model's numbered sources
    (the list its answer's `[n]` markers count in)."""

    blocks: list[str] = field(default_factory=list)
    cites: list[tuple[int, Citation]] = field(default_factory=list)
    n_queries: int = 0
    rounds: int = 0


def _query_list(queries: Sequence[str]) -> str:
    return "\n".join(f"- `{q}`" for q in queries)


def _round_body(rnd: _Round) -> str:
    # The queries of one round are one list (consecutive QUERIES items searched together);
    # its sources one ordered list, numbered on from the model's earlier rounds.
    return join_blocks([_query_list(rnd.queries), *rnd.parts, "\n".join(rnd.sources)])


def _step_pieces(inner: Ctx, step: WfStep, search: _Search) -> list[tuple[bool, str]]:
    """A step's items as (is_round, body) in page order: a round ends where a query
    follows its sources, so each round keeps its queries with the sources they found."""
    pieces: list[tuple[bool, str]] = []
    rnd = _Round()

    def close() -> _Round:
        if rnd:
            pieces.append((True, _round_body(rnd)))
        return _Round()

    for item in step.items:
        if item.kind == QUERIES:
            if not item.queries:
                continue
            if rnd.sources:
                rnd = close()
            search.n_queries += len(item.queries)
            rnd.queries.extend(item.queries)
        elif item.kind == SOURCES:
            text = item.text.text
            if text.strip():
                rnd.parts.append(text.strip("\n"))
            for s in item.sources:
                if s.url:
                    n = len(search.cites) + 1
                    search.cites.append((n, Citation(s.name, s.url)))
                    rnd.sources.append(f"{n}. {link(s.name, s.url)}")
        else:
            rendered = render_item(inner, item)
            if not rendered.strip():
                continue
            if rnd.queries and not rnd.sources:
                rnd.parts.append(rendered)  # between a query and what it found
            else:
                rnd = close()
                pieces.append((False, rendered))
    close()
    return pieces


def _step_block(ctx: Ctx, inner: Ctx, step: WfStep, search: _Search) -> str:
    """One step of a model's run: its title, then each round as its own labelled block."""
    lb = ctx.labels
    pieces = _step_pieces(inner, step, search)
    title = one_line(step.title)
    n_rounds = sum(1 for is_round, _ in pieces if is_round)
    blocks: list[str] = []
    if title and n_rounds != 1:
        blocks.append(bold(title))
    for is_round, body in pieces:
        if not is_round:
            blocks.append(body)
            continue
        search.rounds += 1
        label = lb.round_.format(n=search.rounds)
        # A step that is one round names it by the step's title (one label, not two).
        if title and n_rounds == 1:
            label = f"{label} · {title}"
        blocks.append(join_blocks([bold(label), body]))
    return join_blocks(blocks)


def model_search(ctx: Ctx, wp: WfPayload, answer: str) -> _Search:
    """Every step of a model's run: rounds of queries and numbered sources, other items.

    Rendered from the payload itself rather than the parser's rounds, which keep only the
    last query group before each source list.
    """
    inner = ctx.with_answer(answer)
    search = _Search()
    for step in wp.steps:
        block = _step_block(ctx, inner, step, search)
        if block:
            search.blocks.append(block)
    return search


# --- The models' conclusions side by side ---

CONCLUSION_MAX = 160  # characters: a table cell a reader takes in at a glance
# A thematic break, or a setext heading's underline.
_RULE = re.compile(r"^ {0,3}(?:([-*_])(?: *\1){2,}|=+) *$")
_LIST_MARK = re.compile(r"^(?:[-*+]|\d{1,9}[.)])\s+")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MARKERS = re.compile(r"\s*(?:\[\d{1,3}\])+")
_EMPHASIS = re.compile(r"\*\*|__")
_SENTENCE_END = re.compile(r"[.!?](?=\s)|[。！？]")
_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")


def first_paragraph(md: str) -> str:
    """The answer's first paragraph of prose (or first list item), skipping headings,
    rules, tables, HTML and code: what a model concludes usually opens its answer."""
    fence = ""
    para: list[str] = []
    for line in md.split("\n"):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = ""
            continue
        text = line.strip()
        skip = not text or text.startswith(("#", "|", "<")) or _RULE.match(line) is not None
        if m or skip:
            if para:
                break
            fence = m.group(1) if m else ""
            continue
        text = text.lstrip("> ").strip()
        item = _LIST_MARK.match(text)
        if item and para:
            break  # the next list item
        para.append(text[item.end() :] if item else text)
    return " ".join(para)


def _trim(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters: at a sentence end when one is far enough
    in, else at a space, else anywhere; a cut is marked with an ellipsis."""
    if len(text) <= limit:
        return text
    ends = [m.end() for m in _SENTENCE_END.finditer(text, 0, limit)]
    if ends and ends[-1] >= limit // 3:
        cut = ends[-1]
    else:
        space = text.rfind(" ", 0, limit)
        cut = space if space >= limit // 2 else limit
    return text[:cut].rstrip() + "…"


def conclusion(answer: str, limit: int = CONCLUSION_MAX) -> str:
    """A model's conclusion as one line of plain text: the first paragraph of its answer,
    links as their text, citation markers and emphasis dropped, trimmed to `limit`."""
    text = _LINK.sub(r"\1", model_links(first_paragraph(answer)))
    text = one_line(_EMPHASIS.sub("", _MARKERS.sub("", text)))
    text = _trim(text, limit)
    if text.count("`") % 2:
        text = text.replace("`", "")  # a code span the cut opened and did not close
    return _TAG_START.sub("&lt;", text)


def compare_table(ctx: Ctx, rows: Sequence[tuple[str, str]]) -> str:
    """`| Model | Conclusion |`, one row per model: the answers side by side."""
    if not rows:
        return ""
    lb = ctx.labels
    lines = [f"| {lb.model} | {lb.conclusion} |", "| --- | --- |"]
    for name, answer in rows:
        said = conclusion(answer) if answer.strip() else lb.none
        lines.append(f"| {cell(bold(name))} | {cell(said) or lb.none} |")
    return lb.labelled(lb.council_compare, "\n".join(lines))


# --- One fold per model ---

# How a model's `[n]` links to the n-th source of its own list. The marker must read as
# sent, "[n]", letter for letter (search, the "shown once" checks and content recall read
# an answer's lines as written: a URL inside a line would cut it), and reference labels are
# global to a page: the turn's answer owns `\[n\]`, and a bare `[n]` anywhere on the page
# resolves to a label `n`. So each model of the page gets a marker form with labels of its
# own that read as the same "[n]": the whole marker linked with an empty HTML comment in
# its label (shown as nothing), or the link on "[n" or on "n]". (marker, definition label)
_MARKER_FORMS = (
    ("[\\[{n}\\]<!---->][]", "\\[{n}\\]<!---->"),
    ("[\\[{n}][]\\]", "\\[{n}"),
    ("\\[[{n}\\]][]", "{n}\\]"),
)


def link_model_markers(md: str, cites: Sequence[tuple[int, Citation]], ordinal: int) -> str:
    """`md` (a model's answer) with each `[n]` that its sources have linked to the n-th,
    followed by the reference definitions it uses. `ordinal`: the model's place among the
    page's council models (from 0); past the reference forms, markers link inline."""
    urls = {n: c.url for n, c in cites}
    if not urls:
        return md
    if ordinal >= len(_MARKER_FORMS):
        return link_markers_inline(md, urls)
    form, label = _MARKER_FORMS[ordinal]
    used: dict[int, str] = {}

    def one(n: int) -> str | None:
        if n not in urls:
            return None
        used[n] = urls[n]
        return form.format(n=n)

    linked = rewrite_markers(md, one)
    defs = [f"[{label.format(n=n)}]: {link_target(url)}" for n, url in sorted(used.items())]
    return join_blocks([linked, "\n".join(defs)])


def _answer_of(ctx: Ctx, wp: WfPayload) -> str:
    sub = ctx.sub_map.get(wp.model) if wp.model else None
    answer = sub.answer if sub is not None and sub.answer.strip() else ""
    return answer or conclusion_of(wp)


def _name_of(ctx: Ctx, wp: WfPayload) -> str:
    sub = ctx.sub_map.get(wp.model) if wp.model else None
    return one_line((sub.headline if sub else "") or wp.headline or wp.model)


def _log_block(ctx: Ctx, states: Sequence[CouncilModel]) -> str:
    """What the step log says of the model that its workflow fold does not."""
    body = join_blocks([council_model_body(ctx, state) for state in states])
    return ctx.labels.labelled(ctx.labels.council_log, body) if body else ""


def _model_block(ctx: Ctx, wp: WfPayload, log: Sequence[CouncilModel], ordinal: int) -> str:
    lb = ctx.labels
    model = wp.model
    answer = _answer_of(ctx, wp)
    search = model_search(ctx, wp, answer)
    stat = [
        lb.rounds_n.format(n=search.rounds),
        lb.queries_n.format(n=search.n_queries),
        lb.sources_n.format(n=len(search.cites)),
        lb.answer_chars.format(n=len(answer)),
    ]
    tag = lb.tag(wp.status, ctx.locked_reason)
    if tag:
        stat.append(tag)
    blocks = [f"{lb.model}{lb.sep}`{model}`" if model else "", *search.blocks]
    blocks.append(_log_block(ctx, log))
    if answer.strip():
        # The model's `[n]` count in its own sources (the numbered lists above), not in the
        # turn's answer's.
        shown = link_model_markers(work_md(answer.strip("\n")), search.cites, ordinal)
        blocks.append(lb.labelled(lb.model_answer, shown))
    summary = summary_text(_name_of(ctx, wp) + lb.par(" · ".join(stat)))
    return details(summary, join_blocks(blocks), ctx.flavor)


def render_council_step(
    ctx: Ctx, i: int, step: WfStep, log: CouncilLog = NO_LOG, first: int = 0
) -> str:
    """The council step; `first`: how many council models the page's earlier steps folded
    (each model's marker links need labels no other model on the page uses)."""
    lb = ctx.labels
    title = one_line(step.title)
    head = step_heading(ctx, i, step, title=f"{lb.council}" + (f"{lb.sep}{title}" if title else ""))
    # step_heading appends the tool name; the council label already says what it is.
    head = head.replace(lb.par("`council_research`"), "")
    payloads = council_payloads(step)
    # The models are named in the table and each fold gives its model's id: no list of
    # the ids above them (it was the same fact twice).
    blocks = [head]
    blocks.append(compare_table(ctx, [(_name_of(ctx, wp), _answer_of(ctx, wp)) for wp in payloads]))
    blocks += [
        _model_block(ctx, wp, log.get(wp.model, ()), first + k) for k, wp in enumerate(payloads)
    ]
    for item in step.items:
        if item.workflow is None or item.workflow.mode != COUNCIL_MODE:
            blocks.append(render_item(ctx, item))
    return join_blocks(blocks)


# --- The step log's council entries, moved into the folds ---


def folded_answers(ctx: Ctx, wf: WfPayload) -> str:
    """The models' answers the folds show, as written (their `[n]` not yet links): what
    the step log's copies of them are checked against (render.steps.novel_steps)."""
    return "\n".join(
        work_md(_answer_of(ctx, wp))
        for step in wf.steps
        if step.tool_name == "council_research"
        for wp in council_payloads(step)
    )


def folded_models(wf: WfPayload) -> frozenset[str]:
    """The model ids the workflow view gives a fold of their own."""
    return frozenset(
        wp.model
        for step in wf.steps
        if step.tool_name == "council_research"
        for wp in council_payloads(step)
        if wp.model
    )


def split_council_log(
    steps: Sequence[Step], folded: frozenset[str], shown: Shown
) -> tuple[list[Step], dict[str, list[CouncilModel]]]:
    """(the step-log steps left for the page's Step log section, model id -> its entries
    that go into the model's own fold). A council step whose every model went into a fold
    leaves the section too, unless its research query is not on the page yet."""
    rest: list[Step] = []
    moved: dict[str, list[CouncilModel]] = {}
    for step in steps:
        if step.step_type != "COUNCIL_RESEARCH":
            rest.append(step)
            continue
        kept = []
        for state in step.body.models:
            if state.model in folded:
                moved.setdefault(state.model, []).append(state)
            else:
                kept.append(state)
        if kept or step.body.research_query not in shown:
            rest.append(replace(step, body=replace(step.body, models=kept)))
    return rest, moved
