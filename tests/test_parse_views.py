"""Typed views (parse/views.py): the lenient readings the renderer relies on."""

from __future__ import annotations

import json
from typing import Any

from pplx_export.models import AppendixItem, Conversation, Step, SubAgent, Turn
from pplx_export.parse.views import attach_views, item_view, payload_view, step_view


def test_table_cells_read_values_numbers_and_nulls_and_pad_short_rows() -> None:
    table = item_view(
        {
            "type": "WORKFLOW_ITEM_TABLE",
            "payload": {
                "table_payload": {
                    "columns": ["a", {"title": "b"}, 3],
                    "rows": [
                        {"cells": {"a": {"value": "v|w"}, "b": None, "3": 3.5, "x": "extra"}},
                        ["only one"],
                        "junk",
                    ],
                }
            },
        }
    ).table
    assert table.columns == ["a", "b", "3"]
    assert table.rows == [["v|w", "", "3.5", "extra"], ["only one", "", ""], ["", "", ""]]


def test_payload_steps_keep_their_place_and_anchor_reading() -> None:
    wp = payload_view(
        {
            "id": 7,
            "objective_chunks": ["do ", 5, "it"],
            "steps": ["junk", {"title": "T", "items": [None, {"type": "X"}]}],
        }
    )
    assert (wp.id, wp.prompt, wp.is_anchor, wp.n_listed) == ("7", "do it", True, 2)
    assert [(s.position, s.title, len(s.items)) for s in wp.steps] == [(2, "T", 1)]
    assert not payload_view({"objective_chunks": [5, ""]}).is_anchor
    assert payload_view({"is_background_anchor": 1}).is_anchor


def test_a_payload_met_twice_has_one_view_and_a_cycle_terminates() -> None:
    wp: dict[str, Any] = {"id": "loop"}
    wp["steps"] = [
        {"items": [{"type": "WORKFLOW_ITEM_WORKFLOW", "payload": {"workflow_payload": wp}}]}
    ]
    view = payload_view(wp)
    assert view.steps[0].items[0].workflow is view


def test_step_bodies_read_each_kind() -> None:
    code = step_view(Step("CODE", {"script": "ls", "error": "boom", "language": 3}))
    assert (code.body.script, code.body.stderr, code.body.language) == ("ls", "boom", "3")
    tool = step_view(
        Step("ASI_TOOL_OUTPUT", {"workflow_items": ["x", {"type": "T"}]}, timestamp="t0")
    )
    assert ([i.kind for i in tool.body.items], tool.body.time) == (["T"], "t0")
    pages = step_view(Step("GET_URL_CONTENT", {"pages": [{"link": "u1"}, {"url": ""}, "p"]}))
    assert pages.body.urls == ["u1"]
    council = step_view(
        Step(
            "COUNCIL_RESEARCH",
            raw={
                "model_states": {
                    "m": {
                        "steps": [{"type": "THOUGHT", "content": {"text": "hm"}}],
                        "answer_chunks": ["a", 1],
                    },
                    "n": "odd",
                }
            },
        )
    )
    models = council.body.models
    assert [(m.model, m.answer, len(m.steps)) for m in models] == [("m", "a", 1), ("n", "", 0)]
    assert models[0].steps[0].body.text == "hm"


def test_attach_views_finds_the_run_log_of_an_unmapped_appendix_payload() -> None:
    log = [
        {"step_type": "THOUGHT", "content": {"thought": "t"}},
        {"step_type": "FINAL", "content": {"answer": json.dumps({"answer": "done"})}},
    ]
    plain = {"background_entries": [{"uuid": "bg", "text": json.dumps(log)}]}
    blocks = {
        "background_entries": [
            {"uuid": "bg", "blocks": [{"workflow_block": {"steps": [{"id": "toolu_Q"}]}}]}
        ]
    }
    item = AppendixItem(wp={"id": "toolu_Q"})
    conv = attach_views(
        Conversation(web_uuid="w", raw_plain=plain, raw_blocks=blocks, appendix=[item])
    )
    assert [s.step_type for s in item.log.steps] == ["THOUGHT", "FINAL"]
    assert item.log.answer == "done"
    assert [r.uuid for r in conv.views.roots_of("toolu_Q")] == ["bg"]
    # A mapped run's log is the sub-agent's parsed steps.
    sub = SubAgent("toolu_Q", steps=[Step("THOUGHT", {"thought": "mine"})])
    attach_views(Conversation(web_uuid="w", appendix=[item], sub_agents={"toolu_Q": sub}))
    assert item.log.steps == sub.steps and sub.steps[0].body.text == "mine"


def test_attach_views_reads_plan_goals_of_both_responses() -> None:
    plain = {"entries": [{"uuid": "t1", "plan": json.dumps({"goals": [{"description": "g1"}]})}]}
    blocks = {
        "entries": [
            {"backend_uuid": "t1", "blocks": [{"plan_block": {"goals": [{"description": "g2"}]}}]}
        ]
    }
    turn = Turn(index=1, uuid="t1")
    conv = attach_views(
        Conversation(web_uuid="w", turns=[turn], raw_plain=plain, raw_blocks=blocks)
    )
    assert [(sorted(p.ids), p.goals) for p in conv.views.plans_of("entries")] == [
        (["", "t1"], ["g1"]),
        (["", "t1"], ["g2"]),
    ]
    assert conv.views.plans_of("background_entries") == []
