"""§3.5 step decoding, §5.2 answer extraction and §5.3 citations on dict literals."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pplx_export.models import Citation
from pplx_export.parse.answer_forms import extract_answer
from pplx_export.parse.answers import text_of, wf_block_answer
from pplx_export.parse.citations import dedupe, normalise, thread_citations, turn_citations
from pplx_export.parse.steps import decode_steps


def final(answer: Any) -> dict[str, Any]:
    return {"step_type": "FINAL", "content": {"answer": answer}}


def answer_of(*steps: dict[str, Any], plan: Any = None) -> str:
    entry = {"plan": plan} if plan is not None else {}
    return extract_answer(entry, decode_steps(json.dumps(list(steps))))


def test_decode_steps_tolerates_renamed_keys_and_junk() -> None:
    text = json.dumps(
        [
            {"type": "THOUGHT", "id": "a", "content": {"thought": "x"}, "timestamp": "t1"},
            "not a step",
            {"step_type": "CODE", "uuid": "b", "content": json.dumps({"script": "print(1)"})},
            {"step_type": "SEARCH_WEB", "content": ["wrong", "type"]},
        ]
    )
    steps = decode_steps(text)
    assert [(s.step_type, s.uuid) for s in steps] == [
        ("THOUGHT", "a"),
        ("CODE", "b"),
        ("SEARCH_WEB", ""),
    ]
    assert steps[0].timestamp == "t1" and steps[1].content == {"script": "print(1)"}
    assert steps[2].content == {}
    assert steps[0].raw["content"] == {"thought": "x"}


@pytest.mark.parametrize(
    "text", ["not json", "{}", '"a string"', "42", None, 7, "[1, 2]", "{" * 5000]
)
def test_decode_steps_non_array_gives_no_steps(text: Any) -> None:
    assert decode_steps(text) == []


def test_final_answer_string_wins_and_short_answers_are_valid() -> None:
    assert answer_of(final(json.dumps({"answer": "Answer skipped."}))) == "Answer skipped."


def test_last_final_first_and_empty_answer_key_falls_back_to_earlier_final() -> None:
    early = final(json.dumps({"answer": "early answer"}))
    late = final(json.dumps({"answer": "", "chunks": ["x" * 50]}))  # no harvest: has `answer`
    assert answer_of(early, late) == "early answer"
    assert (
        answer_of(final(json.dumps({"answer": "one"})), final(json.dumps({"answer": "two"})))
        == "two"
    )


def test_dict_without_answer_harvests_the_longest_long_string() -> None:
    body = {"structured": {"parts": ["short", "y" * 31, {"deep": "z" * 40}]}}
    assert answer_of(final(json.dumps(body))) == "z" * 40
    assert answer_of(final(json.dumps({"parts": ["short"]}))) == ""


def test_workflow_snapshot_finals_are_skipped() -> None:
    snap = final(json.dumps({"workflow_snapshots": {"x": "s" * 80}}))
    assert answer_of(snap) == ""
    assert answer_of(final(json.dumps({"answer": "kept"})), snap) == "kept"


def test_undecodable_long_string_is_the_answer() -> None:
    raw = "This is plain text, not JSON, and clearly longer than thirty characters."
    assert answer_of(final(raw)) == raw
    assert answer_of(final("too short")) == ""
    assert answer_of(final(json.dumps(["a" * 40]))) == json.dumps(["a" * 40])


def test_plan_fallback_takes_longest_description_over_80_chars() -> None:
    plan = {
        "goals": [
            {"description": "d" * 81},
            {"description": "e" * 90},
            {"description": "short"},
            "junk",
        ]
    }
    assert answer_of(final(json.dumps({"answer": ""})), plan=plan) == "e" * 90
    assert answer_of(plan=json.dumps(plan)) == "e" * 90
    assert answer_of(plan={"goals": [{"description": "f" * 80}]}) == ""


def test_text_of_and_wf_block_answer_last_non_blank_wins() -> None:
    assert text_of({"text": "", "chunks": ["a", "b", 3]}) == "ab3"
    assert text_of(None) == ""

    def item(text: str, variant: str | None) -> dict[str, Any]:
        payload = {"text_payload": {"text": text, "variant": variant}}
        return {"type": "WORKFLOW_ITEM_TEXT", "payload": payload}

    block = {
        "steps": [
            {"items": [item("first", "answer"), item("thought", "thinking")]},
            {"items": [item("second", "answer"), item("  ", "answer"), "junk"]},
            "junk",
        ]
    }
    assert wf_block_answer(block) == "second"
    assert wf_block_answer(None) == wf_block_answer({"steps": "x"}) == ""


def test_citation_normalisation_renamed_keys_and_truncation() -> None:
    c = normalise(
        {"title": "T" * 300, "link": "https://a", "text": "s" * 600, "date": "2030", "type": "pdf"}
    )
    assert c == Citation(
        name="T" * 200, url="https://a", snippet="s" * 500, timestamp="2030", category="pdf"
    )
    assert normalise({"name": "no url"}) is None and normalise("web") is None
    assert normalise({"url": "https://b"}) == Citation(name="", url="https://b")


def test_turn_citations_three_channels_in_order_and_deduped() -> None:
    entry = {"sources": ["web", {"name": "one", "url": "https://1"}]}
    steps = decode_steps(
        json.dumps(
            [
                {
                    "step_type": "ASI_TOOL_OUTPUT",
                    "content": {
                        "workflow_items": [
                            {
                                "type": "WORKFLOW_ITEM_SOURCES",
                                "payload": {
                                    "sources_payload": {
                                        "sources": [
                                            {"name": "three", "url": "https://3"},
                                            {"url": "https://1"},
                                        ]
                                    }
                                },
                            },
                            {
                                "type": "WORKFLOW_ITEM_TEXT",
                                "payload": {"sources_payload": {"sources": [{"url": "https://x"}]}},
                            },
                        ]
                    },
                },
                final(
                    json.dumps(
                        {
                            "answer": "a",
                            "web_results": [{"name": "two", "url": "https://2"}, {"name": "nourl"}],
                        }
                    )
                ),
            ]
        )
    )
    assert [c.url for c in turn_citations(entry, steps)] == ["https://1", "https://2", "https://3"]


def test_thread_citations_first_occurrence_then_sorted_by_name() -> None:
    t1 = [Citation("b", "https://1"), Citation("a", "https://2")]
    t2 = [
        Citation("later name", "https://1"),
        Citation("C", "https://3"),
        Citation("a", "https://4"),
    ]
    merged = thread_citations([t1, t2])
    assert [(c.name, c.url) for c in merged] == [
        ("C", "https://3"),  # code-point order: upper case first
        ("a", "https://2"),
        ("a", "https://4"),  # stable among equal names
        ("b", "https://1"),
    ]
    assert dedupe([Citation("x", ""), Citation("y", "u"), Citation("z", "u")]) == [
        Citation("y", "u")
    ]
