"""Workflow items (§3.7), nested workflows and their guards."""

from __future__ import annotations

from typing import Any

from pplx_export.models import Conversation, SubAgent
from pplx_export.parse.views import item_view, payload_view
from pplx_export.render.context import MAX_DEPTH, Ctx
from pplx_export.render.labels import EN, ZH
from pplx_export.render.tree import render_item as render_view
from tests.render_samples import item, payload_item, text_item, wf_step


def ctx(answer: str = "", lang: str = "en", subs: dict[str, SubAgent] | None = None) -> Ctx:
    conv = Conversation(web_uuid="w", sub_agents=subs or {})
    return Ctx(labels=EN if lang == "en" else ZH, conv=conv, answer=answer)


def render_item(c: Ctx, raw: dict[str, Any]) -> str:
    """The item as the renderer gets it: the parser's view of the raw dict."""
    return render_view(c, item_view(raw))


def test_text_variants() -> None:
    assert render_item(ctx(), text_item("plain \\(x\\)")) == "plain $x$"
    assert render_item(ctx(), text_item("", chunks=["a", "b"])) == "ab"
    assert render_item(ctx(), text_item("   ")) == ""
    assert render_item(ctx(), text_item("think", variant="thinking")) == "> think"
    assert render_item(ctx(), text_item("t2", variant="thought")) == "> t2"
    mono = render_item(ctx(), text_item("ls ```", is_mono=True))
    assert mono == "````\nls ```\n````"
    out = render_item(ctx(), text_item("result \\(raw\\)", is_mono=True, header="Output"))
    assert out.startswith("<details>\n<summary>Output</summary>")
    assert "```\nresult \\(raw\\)\n```" in out  # tool output is not normalised


def test_answer_text_is_skipped_only_when_it_is_the_turn_answer() -> None:
    it = text_item("The answer.", variant="answer")
    assert render_item(ctx(answer="The answer."), it) == ""
    assert "The answer." in render_item(ctx(answer="Other."), it)


def test_sources_item_with_extraction_text() -> None:
    it = item(
        "WORKFLOW_ITEM_SOURCES",
        "sources_payload",
        {
            "sources": [
                {"name": "A", "url": "https://e.org/a"},
                {"title": "B", "link": "https://e.org/b"},
            ]
        },
    )
    it["payload"]["text_payload"] = {"text": "| x | y |"}
    out = render_item(ctx(), it)
    assert out.startswith("| x | y |\n\n<details>\n<summary>Sources (2)</summary>")
    assert "- [B](https://e.org/b)" in out


def test_queries_and_todo() -> None:
    q = item("WORKFLOW_ITEM_QUERIES", "queries_payload", {"queries": ["a", {"query": "b"}, ""]})
    assert render_item(ctx(), q) == "**Searching:**\n\n- a\n- b"
    assert render_item(ctx(lang="zh"), q).startswith("**检索：**")
    assert render_item(ctx(), item("WORKFLOW_ITEM_QUERIES", "queries_payload", {})) == ""
    todo = item(
        "WORKFLOW_ITEM_TODO_LIST",
        "todo_list_payload",
        {
            "items": [
                {"status": "COMPLETED", "description": "done"},
                {"status": "IN_PROGRESS", "description": "doing"},
                {"status": "PENDING", "description": "later"},
            ],
            "diff": {
                "items": [
                    {"action": "TODO_DIFF_ADDED", "description": "later", "new_status": "PENDING"},
                    {
                        "action": "TODO_DIFF_UPDATED",
                        "description": "done",
                        "new_status": "COMPLETED",
                    },
                ]
            },
        },
    )
    out = render_item(ctx(), todo)
    assert out.startswith("**Task list**\n\n- [x] done\n- [ ] *(in progress)* doing\n- [ ] later")
    # An addition the list shows as it is says nothing new; a status change does.
    assert "added" not in out
    assert "- updated: done → `COMPLETED`" in out


def test_table_dict_and_list_rows_never_truncated() -> None:
    long = "w" * 3000
    t = item(
        "WORKFLOW_ITEM_TABLE",
        "table_payload",
        {
            "columns": ["a|1", "b"],
            "rows": [
                {"cells": {"a|1": {"value": "x\ny"}, "b": long}},
                ["p"],
                {"cells": {"a|1": 1, "extra": "kept"}},
            ],
        },
    )
    lines = render_item(ctx(), t).split("\n")
    assert lines[0] == "| a\\|1 | b |"
    assert lines[1] == "|---|---|"
    assert lines[2] == f"| x<br>y | {long} |"
    assert lines[3] == "| p |  |"
    assert lines[4] == "| 1 |  | kept |"
    assert render_item(ctx(), item("WORKFLOW_ITEM_TABLE", "table_payload", {"rows": []})) == ""


def test_user_questions_observed_fields_shape() -> None:
    q = item(
        "WORKFLOW_ITEM_USER_QUESTIONS",
        "user_questions_payload",
        {
            "title": "Decisions",
            "fields": [
                {
                    "field_name": "Which colour?",
                    "options": [
                        {"title": "Red", "description": "warm"},
                        {"title": "Blue"},
                        {"is_free_text_selection": True, "title_type": "OTHER"},
                    ],
                    "allow_multichoice": True,
                    "allow_free_text": True,
                }
            ],
        },
    )
    out = render_item(ctx(), q)
    assert out.startswith("**Asked the user:** Decisions")
    assert "1. **Which colour?** *(multiple choice, free-text answer allowed)*" in out
    assert "   - Red — warm" in out
    assert "   - Blue" in out
    # Free text is allowed: said once, in the question's aside, not again as an option.
    assert out.count("free-text answer allowed") == 1


def test_user_questions_legacy_shape_and_empty() -> None:
    q = item(
        "WORKFLOW_ITEM_USER_QUESTIONS", "user_questions_payload", {"questions": [{"text": "Why?"}]}
    )
    assert render_item(ctx(), q) == "**Asked the user:**\n\n- Why?"
    assert (
        render_item(ctx(), item("WORKFLOW_ITEM_USER_QUESTIONS", "user_questions_payload", {})) == ""
    )


def test_user_response_and_content() -> None:
    r = item(
        "WORKFLOW_ITEM_USER_RESPONSE",
        "user_response_payload",
        {"responses": [{"question": "Which?", "answer": " Red "}, {"answer": ""}]},
    )
    assert render_item(ctx(), r) == "**Q:** Which?\n\n**A:** Red"
    assert render_item(ctx(lang="zh"), r) == "**问：** Which?\n\n**答：** Red"
    c = item(
        "WORKFLOW_ITEM_CONTENT",
        "content_payload",
        {"entities": [{"description": "e1"}, {"description": " "}, {"description": "\\(e\\)"}]},
    )
    assert render_item(ctx(), c) == "e1\n\n$e$"


def test_unknown_item_type_is_visible() -> None:
    assert (
        render_item(ctx(), {"type": "WORKFLOW_ITEM_WIDGET"})
        == "*(WORKFLOW_ITEM_WIDGET: unrendered type)*"
    )
    assert render_item(ctx(), {}) == "*(?: unrendered type)*"
    # Items that are not objects never reach the renderer: the view skips them.
    items = payload_view({"steps": [{"items": ["junk", {}, None]}]}).steps[0].items
    assert [i.raw for i in items] == [{}]


def _wp(wid: str, steps: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    return {
        "id": wid,
        "headline": f"run {wid}",
        "status": "WORKFLOW_COMPLETED",
        "steps": steps,
        **kw,
    }


def test_nested_workflow_block() -> None:
    inner = _wp(
        "toolu_N",
        [
            wf_step("Thinking", [text_item("inner thought", variant="thinking")]),
            wf_step(
                "Searching",
                [
                    item(
                        "WORKFLOW_ITEM_SOURCES",
                        "sources_payload",
                        {
                            "sources": [
                                {"name": "S", "url": "https://e.org/s"},
                                {"name": "S2", "url": "https://e.org/s"},
                            ]
                        },
                    )
                ],
                tool_name="search_web",
            ),
            wf_step("Summarizing", [text_item("inner conclusion", variant="answer")]),
        ],
        model="claudecode",
    )
    out = render_item(ctx(), payload_item(inner))
    assert out.startswith(
        "<details>\n<summary>🧩 Nested workflow: run toolu_N "
        "(steps: 3 · has conclusion · citations: 1)</summary>"
    )
    assert "> Status: `WORKFLOW_COMPLETED` · Model: `claudecode`" in out
    assert "**Thinking**\n\n> inner thought" in out
    assert "**Searching** (`search_web`)" in out
    assert "**Conclusion:**\n\ninner conclusion" in out
    assert out.count("https://e.org/s") == 1
    assert out.endswith("\n\n</details>")


def test_nested_interruption_tag_in_summary() -> None:
    wp = _wp("toolu_I", [wf_step("x", [text_item("y")])], status="WORKFLOW_AWAITING_NEXT_STEPS")
    c = Ctx(labels=EN, conv=Conversation(web_uuid="w"), locked_reason="spending_limit_exceeded")
    assert f"· {EN.tag_limit})</summary>" in render_item(c, payload_item(wp))


def test_nested_without_steps_and_council_and_mapped_anchor() -> None:
    assert render_item(ctx(), payload_item({"id": "e", "headline": "H"})) == (
        "(WORKFLOW_ITEM_WORKFLOW without steps) H"
    )
    assert render_item(ctx(), payload_item({"mode": "LLM_COUNCIL", "steps": [{}]})) == ""
    anchor = {"id": "toolu_A", "objective_chunks": ["do"], "steps": []}
    assert render_item(ctx(subs={"toolu_A": SubAgent("toolu_A")}), payload_item(anchor)) == ""
    assert "🤖 Sub-agent" in render_item(ctx(), payload_item(anchor))


def test_a_repeated_id_is_rendered_and_only_a_true_cycle_stops() -> None:
    # Ids are not unique along a chain: a nested run with its parent's id is a run of its
    # own. Only the same object again (a cyclic Python value) is a cycle.
    wp = _wp("loop", [])
    wp["steps"] = [
        wf_step("again", [payload_item(_wp("loop", [wf_step("deep", [text_item("shown")])]))])
    ]
    out = render_item(ctx(), payload_item(wp))
    assert "shown" in out and "recursion limit" not in out
    cyclic = _wp("self", [])
    cyclic["steps"] = [wf_step("into itself", [payload_item(cyclic)])]
    out = render_item(ctx(), payload_item(cyclic))
    assert "(nested workflow: run self, recursion limit reached)" in out


def test_depth_past_the_folds_is_flattened_not_dropped() -> None:
    wp: dict[str, Any] = _wp("leaf", [wf_step("bottom", [text_item("deepest")])])
    for n in range(MAX_DEPTH + 2):
        wp = _wp(f"w{n}", [wf_step(f"level {n}", [payload_item(wp)])])
    out = render_item(ctx(), payload_item(wp))
    assert "recursion limit reached" not in out
    assert "deepest" in out and "level 0" in out
    assert out.count("<details>") == MAX_DEPTH
    shallow = _wp(
        "a", [wf_step("s", [payload_item(_wp("b", [wf_step("t", [text_item("kept")])]))])]
    )
    assert "kept" in render_item(ctx(), payload_item(shallow))
