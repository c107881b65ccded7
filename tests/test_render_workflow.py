"""Workflow-level pieces: plans from raw entries, step logs, odd sub-agent steps, fuzzing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pplx_export.models import AppendixItem, Conversation, Step, SubAgent, Turn
from pplx_export.parse.views import Builder, attach_views
from pplx_export.render import render_thread as render_views
from pplx_export.render.context import Ctx
from pplx_export.render.labels import EN
from pplx_export.render.workflow import render_wf_step as render_step_view
from tests.render_samples import T0, payload_item, text_item, wf_step


def render_thread(conv: Conversation) -> dict[str, str]:
    """Render a hand-built conversation as parse_thread would hand it over: views attached."""
    return render_views(attach_views(conv))


def render_wf_step(ctx: Ctx, i: int, step: dict[str, Any]) -> str:
    return render_step_view(ctx, i, Builder().step(step))


def _computer(turns: list[Turn], **kw: Any) -> Conversation:
    return Conversation(web_uuid="w", mode="computer", turns=turns, **kw)


def test_plan_goals_come_from_raw_entries_by_uuid() -> None:
    plain = {
        "entries": [
            {
                "uuid": "t1",
                "plan": json.dumps({"goals": [{"description": "Goal one"}, {"description": ""}]}),
            },
            {"uuid": "other", "plan": {"goals": [{"description": "Not mine"}]}},
        ]
    }
    blocks = {
        "entries": [
            {
                "uuid": "t1",
                "blocks": [
                    {
                        "plan_block": {
                            "goals": [{"description": "Goal one"}, {"description": "Goal\ntwo"}]
                        }
                    }
                ],
            }
        ]
    }
    turn = Turn(index=1, uuid="t1", query="q", created_us=T0, answer="A", display_answer="A")
    conv = Conversation(web_uuid="w", turns=[turn], raw_plain=plain, raw_blocks=blocks)
    md = render_thread(conv)["turns/turn_0001.md"]
    assert "<summary>Plan (2)</summary>\n\n1. Goal one\n2. Goal\n   two\n\n</details>" in md
    assert "Not mine" not in md


def test_plan_goal_equal_to_answer_is_not_repeated() -> None:
    plain = {"entries": [{"uuid": "t1", "plan": {"goals": [{"description": "The answer"}]}}]}
    turn = Turn(index=1, uuid="t1", answer="The answer", display_answer="The answer")
    md = render_thread(Conversation(web_uuid="w", turns=[turn], raw_plain=plain))[
        "turns/turn_0001.md"
    ]
    assert "Plan" not in md


def test_turn_step_log_adds_what_the_workflow_view_lacks() -> None:
    wf = {
        "status": "WORKFLOW_COMPLETED",
        "steps": [wf_step("Look", [text_item("seen in both views")])],
    }
    steps = [
        Step("ASI_TOOL_INPUT", {"workflow_items": [text_item("seen in both views")]}),
        Step("ASI_TOOL_OUTPUT", {"workflow_items": [text_item("only in the step log")]}),
    ]
    turn = Turn(index=1, uuid="t1", steps=steps, wf_block=wf)
    md = render_thread(_computer([turn]))["turns/turn_0001.md"]
    assert "## Step log (not in the workflow view)" in md
    assert md.count("seen in both views") == 1
    assert "only in the step log" in md
    turn.steps = steps[:1]
    assert "Step log" not in render_thread(_computer([turn]))["turns/turn_0001.md"]


def test_appendix_step_log_from_plain_background_entry() -> None:
    wp = {
        "id": "toolu_Q",
        "headline": "Q run",
        "status": "WORKFLOW_CANCELED",
        "steps": [wf_step("s", [text_item("payload text")])],
    }
    final = json.dumps({"answer": "background answer text"})
    text = json.dumps(
        [
            {
                "step_type": "ASI_TOOL_OUTPUT",
                "content": {"workflow_items": [text_item("log only text")]},
            },
            {"step_type": "FINAL", "content": {"answer": final}},
        ]
    )
    plain = {"entries": [], "background_entries": [{"uuid": "bg-q", "text": text}]}
    blocks = {
        "entries": [],
        "background_entries": [
            {
                "uuid": "bg-q",
                "blocks": [
                    {"workflow_block": {"steps": [{"id": "toolu_Q", "tool_name": "run_subagent"}]}}
                ],
            }
        ],
    }
    conv = _computer([], raw_plain=plain, raw_blocks=blocks, appendix=[AppendixItem(wp=wp)])
    md = render_thread(conv)["conversation.md"]
    assert "payload text" in md
    assert "<summary>Step log (not in the workflow view)</summary>" in md
    assert "log only text" in md
    assert "background answer text" in md


def test_stub_payload_finds_its_background_entry_by_run_id() -> None:
    wp = {"id": "toolu_S", "headline": "S", "steps": [wf_step("s", [text_item("shown")])]}
    text = json.dumps([{"step_type": "THOUGHT", "content": {"thought": "hidden thought"}}])
    plain = {"entries": [], "background_entries": [{"uuid": "bg-s", "text": text}]}
    blocks = {
        "background_entries": [
            {
                "uuid": "bg-s",
                "blocks": [{"workflow_block": {"steps": [{"id": "toolu_S:workflow"}]}}],
            }
        ]
    }
    turn = Turn(index=1, uuid="t", is_stub=True, stub_wfs=[wp])
    md = render_thread(_computer([turn], raw_plain=plain, raw_blocks=blocks))["turns/turn_0001.md"]
    assert "hidden thought" in md


def test_subagent_step_without_payload_and_with_two_anchors() -> None:
    ctx = Ctx(labels=EN, conv=Conversation(web_uuid="w"))
    bare = {"tool_name": "run_subagent", "title": "Spawn", "id": "toolu_X", "items": []}
    assert render_wf_step(ctx, 2, bare) == "### Step 2 · 🤖 Sub-agent: Spawn"
    a1 = {"id": "toolu_1", "headline": "one", "objective_chunks": ["p1"], "steps": []}
    a2 = {"id": "toolu_2", "headline": "two", "objective_chunks": ["p2"], "steps": []}
    subs = {
        s: SubAgent(s, headline=h, answer=f"{h} done")
        for s, h in (("toolu_1", "one"), ("toolu_2", "two"))
    }
    ctx2 = Ctx(labels=EN, conv=Conversation(web_uuid="w", sub_agents=subs))
    out = render_wf_step(ctx2, 1, {"id": "x", "items": [payload_item(a1), payload_item(a2)]})
    assert out.startswith("### Step 1 · 🤖 Sub-agent: one")
    assert "one done" in out and "**🤖 Sub-agent: two**" in out and "two done" in out


def test_unknown_workflow_status_has_no_tag() -> None:
    wf = {"status": "WORKFLOW_SOMETHING", "steps": []}
    turn = Turn(index=1, uuid="t1", wf_block=wf)
    md = render_thread(_computer([turn]))["turns/turn_0001.md"]
    assert "## Work process (steps: 0 · WORKFLOW_SOMETHING)" in md
    canceled = Turn(index=1, uuid="t1", wf_block={"status": "WORKFLOW_CANCELED", "steps": []})
    md = render_thread(_computer([canceled]))["turns/turn_0001.md"]
    assert f"## Work process (steps: 0 · {EN.tag_canceled})" in md  # the tag names it


JSONS = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "payload",
                    "items",
                    "steps",
                    "text_payload",
                    "workflow_payload",
                    "sources_payload",
                    "text",
                    "sources",
                    "url",
                    "id",
                    "status",
                    "objective_chunks",
                    "columns",
                    "rows",
                    "cells",
                    "fields",
                    "options",
                    "title",
                    "variant",
                    "is_mono",
                    "tool_name",
                    "mode",
                    "model",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=30,
)
ITEM_TYPES = st.sampled_from(
    [
        "WORKFLOW_ITEM_TEXT",
        "WORKFLOW_ITEM_SOURCES",
        "WORKFLOW_ITEM_WORKFLOW",
        "WORKFLOW_ITEM_TABLE",
        "WORKFLOW_ITEM_USER_QUESTIONS",
        "WORKFLOW_ITEM_TODO_LIST",
        "WORKFLOW_ITEM_X",
    ]
)


@settings(max_examples=150, deadline=None)
@given(JSONS, st.lists(st.tuples(ITEM_TYPES, JSONS), max_size=4), JSONS)
def test_render_never_crashes_on_odd_shapes(
    junk: Any, items: list[tuple[str, Any]], content: Any
) -> None:
    wf_items = [
        {
            "type": t,
            "payload": {
                "text_payload": p,
                "workflow_payload": p,
                "table_payload": p,
                "sources_payload": p,
                "user_questions_payload": p,
                "todo_list_payload": p,
            },
        }
        for t, p in items
    ]
    wf = {
        "status": "x",
        "steps": [
            junk,
            {"items": wf_items, "tool_name": "run_subagent"},
            {"items": wf_items},
            {"tool_name": "council_research", "items": wf_items},
        ],
    }
    steps = [
        Step("ASI_TOOL_INPUT", content if isinstance(content, dict) else {}),
        Step("CODE", {"script": junk}),
    ]
    turn = Turn(index=1, uuid="t", steps=steps, wf_block=wf, stub_wfs=[{"steps": junk}])
    conv = _computer([turn], appendix=[AppendixItem(wp={"steps": [junk]})])
    files = render_thread(conv)
    assert all(isinstance(t, str) and t.endswith("\n") for t in files.values())


def test_mapped_subagent_prefers_background_copy_and_shows_launcher() -> None:
    anchor = {
        "id": "toolu_R",
        "headline": "R",
        "objective_chunks": ["do R"],
        "steps": [
            wf_step("Early", [text_item("anchor early text")]),
        ],
    }
    bg_copy = {
        "id": "toolu_R",
        "headline": "R",
        "status": "WORKFLOW_CANCELED",
        "steps": [
            wf_step("Early", [text_item("anchor early text")]),
            wf_step("Later", [text_item("only in the background copy")]),
        ],
    }
    blocks = {
        "entries": [],
        "background_entries": [
            {
                "uuid": "bg-r",
                "blocks": [
                    {
                        "workflow_block": {
                            "status": "WORKFLOW_CANCELED",
                            "steps": [
                                {
                                    "id": "toolu_R",
                                    "tool_name": "run_subagent",
                                    "title": "Launching",
                                    "started_at": "2035-12-26T00:00:01",
                                    "completed_at": "2035-12-26T00:00:02",
                                },
                                {"id": "toolu_R:workflow", "items": [payload_item(bg_copy)]},
                            ],
                        }
                    }
                ],
            }
        ],
    }
    sub = SubAgent(
        "toolu_R",
        headline="R",
        status="WORKFLOW_CANCELED",
        steps=[
            Step("ASI_TOOL_OUTPUT", {"workflow_items": [text_item("only in the background copy")]}),
            Step("ASI_TOOL_OUTPUT", {"workflow_items": [text_item("only in the step log")]}),
        ],
    )
    wf = {
        "status": "WORKFLOW_COMPLETED",
        "steps": [{"id": "toolu_R:workflow", "items": [payload_item(anchor)]}],
    }
    turn = Turn(index=1, uuid="t1", wf_block=wf)
    conv = _computer([turn], raw_blocks=blocks, sub_agents={"toolu_R": sub})
    md = render_thread(conv)["turns/turn_0001.md"]
    assert "> `run_subagent` Launching — 2035-12-26 00:00:01 → 2035-12-26 00:00:02" in md
    assert "<summary>Sub-agent workflow (steps: 2)</summary>" in md
    assert md.count("anchor early text") == 1
    assert md.count("only in the background copy") == 1
    assert "<summary>Sub-agent work process (steps: 1)</summary>" in md
    assert "only in the step log" in md
    assert f"### Step 1 · 🤖 Sub-agent: R · {EN.tag_canceled}" in md


def _chain(levels: int, same_id: bool = False) -> dict[str, Any]:
    """A workflow nested `levels` deep: each level has a headline, a step and a conclusion
    (with `same_id`, every level reuses one run id: ids are not unique along a chain)."""
    inner: dict[str, Any] = {}
    for n in range(levels, 0, -1):
        items = [text_item(f"Finding of level {n}.", variant="answer")]
        if inner:
            items.insert(0, payload_item(inner))
        inner = {
            "id": "run" if same_id else f"run-{n}",
            "headline": f"Level {n} headline",
            "status": "COMPLETED",
            "steps": [wf_step(f"Step of level {n}", items)],
        }
    return inner


@pytest.mark.parametrize("same_id", [False, True])
def test_a_sixty_deep_chain_shows_every_level(same_id: bool) -> None:
    # Past the readable depth the levels are listed flat under the last fold, not dropped;
    # a reused id is no repeat (a JSON tree cannot contain itself).
    ctx = Ctx(labels=EN, conv=Conversation(web_uuid="w"))
    step = wf_step("Launch", [payload_item(_chain(60, same_id))])
    md = render_wf_step(ctx, 1, step)
    for n in range(1, 61):
        assert f"Level {n} headline" in md, n
        assert md.count(f"Finding of level {n}.") == 1, n  # the conclusion, once
    assert "recursion limit" not in md
    assert md.count("<details>") <= 12  # folds stop at the readable depth
