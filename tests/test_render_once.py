"""Nothing is shown twice in a turn file: every paragraph-sized piece of content (an answer, a
workflow text or thought, a todo list, a sub-agent prompt or conclusion, a council model's
answer) appears there at most as often as the thread itself holds it.

Measured over every thread the project ships (fixture archive and emulator sample). Pieces
are compared on letters and digits only (`squash`), so labels, quoting and Markdown around a
piece do not hide a repeat. conversation.md is not checked: its compact view repeats the
answer by design.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pplx_export.models import (
    Conversation,
    Step,
    SubAgent,
    Turn,
    TurnMeta,
    WfItem,
    WfPayload,
)
from pplx_export.parse.views import TEXT, TODO_LIST, WORKFLOW, attach_views
from pplx_export.render import render_thread
from pplx_export.render.context import Ctx
from pplx_export.render.items import render_todo
from pplx_export.render.labels import labels_for
from pplx_export.render.text import squash
from tests.reading_support import load, rendered, thread_dirs
from tests.render_samples import (
    T0,
    computer_conversation,
    item,
    payload_item,
    text_item,
    wf_step,
)

# Squashed characters: a sentence, not a word or a title that may recur in a heading.
PARAGRAPH = 24


def _payload_pieces(ctx: Ctx, wp: WfPayload, seen: set[int]) -> Iterator[str]:
    if id(wp) in seen:
        return
    seen.add(id(wp))
    yield wp.prompt
    for step in wp.steps:
        yield from _item_pieces(ctx, step.items, seen)


def _item_pieces(ctx: Ctx, items: object, seen: set[int]) -> Iterator[str]:
    assert isinstance(items, (list, tuple))
    for it in items:
        assert isinstance(it, WfItem)
        if it.kind == TEXT:
            yield it.text.text
        elif it.kind == TODO_LIST:
            yield render_todo(ctx, it)
        elif it.kind == WORKFLOW and it.workflow is not None:
            yield from _payload_pieces(ctx, it.workflow, seen)


def _step_pieces(ctx: Ctx, steps: object, seen: set[int]) -> Iterator[str]:
    assert isinstance(steps, (list, tuple))
    for step in steps:
        assert isinstance(step, Step)
        b = step.body
        if step.step_type == "THOUGHT":
            yield b.text
        yield from _item_pieces(ctx, b.items, seen)
        for model in b.models:
            yield model.answer
            yield model.mock_thought
            yield from _step_pieces(ctx, model.steps, seen)


def pieces(conv: Conversation) -> Iterator[str]:
    """Every paragraph-sized piece of content the thread holds (any turn, any copy)."""
    ctx = Ctx(labels=labels_for("en"), conv=conv)
    seen: set[int] = set()
    for turn in conv.turns:
        yield turn.answer
        yield turn.display_answer
        if turn.workflow is not None:
            yield from _payload_pieces(ctx, turn.workflow, seen)
        yield from _step_pieces(ctx, turn.steps, seen)
        for run in turn.stub_runs:
            yield from _payload_pieces(ctx, run.payload, seen)
            yield from _step_pieces(ctx, run.log.steps, seen)
            yield run.log.answer
    for sub in conv.sub_agents.values():
        yield sub.prompt
        yield sub.answer
        yield from _step_pieces(ctx, sub.steps, seen)
    for root in conv.views.roots:
        yield from _payload_pieces(ctx, root.block, seen)
    for app in conv.appendix:
        yield from _payload_pieces(ctx, app.payload, seen)


def _without_compare_tables(md: str) -> str:
    """`md` less each council step's table of the models' conclusions: a digest of the
    answers the model folds show in full, on purpose (a short answer is its own digest)."""
    head = f"**{labels_for('en').council_compare}:**\n\n"
    while head in md:
        start = md.index(head)
        end = md.find("\n\n", start + len(head))
        md = md[:start] + (md[end:] if end >= 0 else "")
    return md


def repeats(conv: Conversation, files: dict[str, str]) -> list[str]:
    """`turn file: piece` for every piece a turn file shows more often than the thread has it."""
    distinct = sorted({sq for p in pieces(conv) if len(sq := squash(p)) >= PARAGRAPH})
    found: list[str] = []
    for rel, text in sorted(files.items()):
        if not rel.startswith("turns/"):
            continue
        page = squash(_without_compare_tables(text))
        for sq in distinct:
            if sq not in page:
                continue
            shown = page.count(sq)
            # A piece inside another piece (a thought quoted in the answer) may recur there.
            held = sum(other.count(sq) for other in distinct)
            if shown > held:
                found.append(f"{rel} ×{shown}: {sq[:70]}")
    return found


@pytest.mark.parametrize("tdir", thread_dirs(), ids=lambda p: p.name)
def test_a_turn_file_shows_each_piece_of_content_once(tdir: Path) -> None:
    assert repeats(load(tdir), rendered(tdir)) == []


def test_the_check_sees_a_repeat() -> None:
    tdir = next(d for d in thread_dirs() if "nginx" in d.name)
    conv = load(tdir)
    files = dict(rendered(tdir))
    answer = conv.turns[0].display_answer
    files["turns/turn_0001.md"] += f"\n\n**Label:**\n\n> {answer}\n"
    assert any(r.startswith("turns/turn_0001.md") for r in repeats(conv, files))


ANSWER = "The tide turns at noon.\n\n- High water 7.1 m\n- Low water 1.2 m"
TODO = {
    "title": "Tide plan",
    "items": [
        {"status": "IN_PROGRESS", "description": "Fetch the tide tables"},
        {"status": "PENDING", "description": "Write the summary"},
    ],
    "diff": {"items": [{"action": "TODO_DIFF_ADDED", "description": "Fetch the tide tables"}]},
}


def _thought_answer_conversation(**meta: str) -> Conversation:
    """A computer turn whose workflow thinks its final answer aloud (a TEXT item with no
    variant), keeps a todo list, and whose plain step log copies that todo list."""
    todo_item = item("WORKFLOW_ITEM_TODO_LIST", "todo_list_payload", TODO)
    wf_block = {
        "status": meta.get("wf_status", "WORKFLOW_COMPLETED"),
        "steps": [
            wf_step("Plan", [todo_item], tool_name="update_todo_list"),
            wf_step("", [text_item(ANSWER)]),
        ],
    }
    log = [Step("ASI_TOOL_OUTPUT", {"workflow_items": [todo_item], "timestamp": "2035-12-26"})]
    turn = Turn(
        index=1,
        uuid="t1",
        query="when is high tide",
        created_us=T0,
        steps=log,
        display_answer=ANSWER,
        wf_block=wf_block,
        metadata=TurnMeta(
            locked_reason=meta.get("locked_reason", ""),
            wf_status=meta.get("wf_status", "WORKFLOW_COMPLETED"),
        ),
    )
    variants = [{"entry_uuid": "t1"}] if meta.get("rewritten") else []
    return attach_views(
        Conversation(
            web_uuid="w-tide",
            title="Tides",
            mode="computer",
            turns=[turn],
            answer_variants=variants,
        )
    )


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_thought_that_is_the_answer_is_shown_once_with_a_pointer(lang: str) -> None:
    conv = _thought_answer_conversation()
    page = render_thread(conv, lang)["turns/turn_0001.md"]
    lb = labels_for(lang)
    assert page.count("The tide turns at noon.") == 1
    assert f"### {lb.step} 2\n\n*{lb.to_answer}*" in page
    assert page.index(lb.to_answer) < page.index(f"## {lb.answer}\n\nThe tide turns")
    assert repeats(conv, render_thread(conv, lang)) == []


def test_the_step_log_leaves_out_a_todo_list_the_workflow_shows() -> None:
    # The workflow's todo list carries an "(in progress)" mark between its entries: a
    # label-free render of the log's copy is not a substring of the page, its atoms are.
    conv = _thought_answer_conversation()
    page = render_thread(conv)["turns/turn_0001.md"]
    assert page.count("Fetch the tide tables") == 2  # the entry and its change line
    assert labels_for("en").step_log not in page


def test_a_changed_todo_list_in_the_log_is_still_shown() -> None:
    conv = _thought_answer_conversation()
    later = dict(
        TODO,
        diff={
            "items": [
                {
                    "action": "TODO_DIFF_STATUS_CHANGED",
                    "description": "Fetch the tide tables",
                    "new_status": "COMPLETED",
                }
            ]
        },
    )
    step = Step(
        "ASI_TOOL_OUTPUT",
        {"workflow_items": [item("WORKFLOW_ITEM_TODO_LIST", "todo_list_payload", later)]},
    )
    conv.turns[0].steps.append(step)
    page = render_thread(attach_views(conv))["turns/turn_0001.md"]
    assert "- status_changed: Fetch the tide tables → `COMPLETED`" in page


def test_conversation_md_tags_interrupted_and_rewritten_turns() -> None:
    limit = _thought_answer_conversation(
        wf_status="WORKFLOW_AWAITING_NEXT_STEPS",
        locked_reason="spending_limit_exceeded",
        rewritten="yes",
    )
    for lang in ("en", "zh"):
        lb = labels_for(lang)
        conv_md = render_thread(limit, lang)["conversation.md"]
        head = conv_md.index(f"## [{lb.turn} 1")
        assert conv_md.index(f"> {lb.tag_limit}", head) < conv_md.index(f"### {lb.query}")
        assert f"### {lb.answer}\n\n> {lb.answer_rewritten}\n\nThe tide turns" in conv_md
        turn_md = render_thread(limit, lang)["turns/turn_0001.md"]
        assert f"## {lb.answer}\n\n> {lb.answer_rewritten}" in turn_md
    canceled = _thought_answer_conversation(wf_status="WORKFLOW_CANCELED")
    assert f"> {labels_for('en').tag_canceled}" in render_thread(canceled)["conversation.md"]
    awaiting = _thought_answer_conversation(wf_status="WORKFLOW_AWAITING_NEXT_STEPS")
    assert f"> {labels_for('en').tag_awaiting}" in render_thread(awaiting)["conversation.md"]
    plain = render_thread(_thought_answer_conversation())["conversation.md"]
    assert "⏸" not in plain and "⛔" not in plain and "Rewritten" not in plain


def test_a_stub_turn_in_conversation_md_links_its_sub_agent_work() -> None:
    files = render_thread(computer_conversation())
    assert (
        "## [Turn 2 — 2035-12-26 00:01 UTC](turns/turn_0002.md)\n\n"
        "> The sub-agent work reported in this turn is in"
        " [its turn file](turns/turn_0002.md)." in files["conversation.md"]
    )
    assert "Late helper" in files["turns/turn_0002.md"]
    assert "[its turn file]" not in files["conversation.md"].split("## [Turn 2")[0]


def test_a_sub_agent_log_step_is_shown_where_it_happened() -> None:
    """The log's thought lands between the payload steps that ended before and after it,
    inside the workflow fold, not after every step in a fold of its own."""
    anchor = {
        "id": "toolu_T",
        "headline": "Read the tables",
        "status": "WORKFLOW_COMPLETED",
        "objective_chunks": ["Read both tide tables."],
        "steps": [
            wf_step("Read Brest", [], completed_at="2035-12-26T00:00:10+00:00"),
            wf_step("Read Cherbourg", [], completed_at="2035-12-26T00:00:20.5+00:00"),
        ],
    }
    thought = item("WORKFLOW_ITEM_TEXT", "text_payload", {"text": "Brest first, then the port."})
    late = item("WORKFLOW_ITEM_TEXT", "text_payload", {"text": "Both tables read in full."})
    sub = SubAgent(
        sub_id="toolu_T",
        headline="Read the tables",
        prompt="Read both tide tables.",
        steps=[
            Step(
                "ASI_TOOL_INPUT",
                {"workflow_items": [thought], "timestamp": "2035-12-26T00:00:15.000001+00:00"},
            ),
            Step("ASI_TOOL_OUTPUT", {"workflow_items": [late]}),  # no time: kept apart
        ],
        answer="Tables read.",
    )
    turn = Turn(
        index=1,
        uuid="t1",
        query="read the tables",
        created_us=T0,
        display_answer="Done.",
        wf_block={
            "status": "WORKFLOW_COMPLETED",
            "steps": [{"id": "toolu_T:workflow", "title": "", "items": [payload_item(anchor)]}],
        },
        sub_agents=[sub],
    )
    conv = attach_views(
        Conversation(web_uuid="w-t", mode="computer", turns=[turn], sub_agents={"toolu_T": sub})
    )
    page = render_thread(conv)["turns/turn_0001.md"]
    fold = page[page.index("<summary>Sub-agent workflow") : page.index("</details>")]
    assert fold.index("Read Brest") < fold.index("Brest first") < fold.index("Read Cherbourg")
    assert "Both tables read" not in fold
    assert page.index("</details>") < page.index("Both tables read in full.")
    assert page.count("Brest first, then the port.") == 1
