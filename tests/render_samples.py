"""Hand-built conversations for the renderer tests (invented content, no corpus data)."""

from __future__ import annotations

import json
from typing import Any

from pplx_export.models import (
    AppendixItem,
    Citation,
    Conversation,
    ReportInfo,
    Step,
    SubAgent,
    Turn,
    TurnMeta,
)
from pplx_export.parse.views import attach_views

ALPHA = "Alpha says [Beta](pplx://action/model_info?id=beta&provider=x) agrees."
T0 = 2082240000000000  # 2035-12-26 00:00:00 UTC in microseconds


def item(kind: str, key: str, payload: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": f"it-{key}", "type": kind, "payload": {key: payload}, **extra}


def text_item(text: str, **tp: Any) -> dict[str, Any]:
    return item("WORKFLOW_ITEM_TEXT", "text_payload", {"text": text, **tp})


def wf_step(title: str, items: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"title": title, "items": items, "status": "COMPLETED", **extra}


def payload_item(wp: dict[str, Any]) -> dict[str, Any]:
    return item("WORKFLOW_ITEM_WORKFLOW", "workflow_payload", wp)


def search_conversation() -> Conversation:
    final = json.dumps({"answer": "Otters hold hands \\(while sleeping\\).", "web_results": []})
    steps = [
        Step("INITIAL_QUERY", {"query": "why do otters hold hands"}),
        Step("SEARCH_WEB", {"queries": [{"engine": "web", "query": "otter sleeping habits"}]}),
        Step(
            "SEARCH_RESULTS",
            {"web_results": [{"name": "Otter facts", "url": "https://example.org/otters"}]},
        ),
        Step("FINAL", {"answer": final}),
    ]
    cites = [Citation(name="Otter facts", url="https://example.org/otters", snippet="s")]
    turn = Turn(
        index=1,
        uuid="t1",
        query="why do otters hold hands",
        created_us=T0,
        steps=steps,
        answer="Otters hold hands \\(while sleeping\\).",
        display_answer="Otters hold hands \\(while sleeping\\).",
        citations=cites,
    )
    return attach_views(
        Conversation(
            web_uuid="w-search",
            title="Otters",
            author="ada",
            mode="search",
            turns=[turn],
            citations=cites,
        )
    )


def computer_conversation() -> Conversation:
    """Turn 1 launches sub-agent toolu_A (mapped) and toolu_Z (unmapped); turn 2 is a stub
    with one time-matched payload; one payload lands in the appendix."""
    anchor_a = {
        "id": "toolu_A",
        "headline": "Collect tide tables",
        "status": "WORKFLOW_COMPLETED",
        "objective_chunks": ["Find the ", "tide tables."],
        "steps": [wf_step("Reading", [text_item("anchor copy only text")])],
    }
    anchor_z = {
        "id": "toolu_Z",
        "headline": "Unmapped helper",
        "status": "WORKFLOW_CANCELED",
        "objective_chunks": ["Do Z."],
        "steps": [wf_step("Z work", [text_item("z did something")])],
    }
    table = item(
        "WORKFLOW_ITEM_TABLE",
        "table_payload",
        {
            "columns": ["port", "high|low"],
            "rows": [{"cells": {"port": "Brest", "high|low": "7.1\n1.2"}}],
        },
    )
    wf_block = {
        "status": "WORKFLOW_AWAITING_NEXT_STEPS",
        "headline": "Tide research",
        "steps": [
            wf_step("", [text_item("Let me plan.", variant="thinking")]),
            wf_step(
                "Run script",
                [
                    text_item("echo ```", is_mono=True),
                    text_item("out ```` here", is_mono=True, header="Output"),
                ],
                tool_name="bash",
                started_at="2035-12-26T00:00:12.1+00:00",
                completed_at="2035-12-26T00:00:13.9+00:00",
            ),
            {"id": "toolu_A:workflow", "title": "", "items": [payload_item(anchor_a)]},
            {"id": "toolu_Z:workflow", "title": "", "items": [payload_item(anchor_z)]},
            wf_step("Tabulate", [table]),
            wf_step("", [text_item("Final tide answer.", variant="answer")]),
        ],
    }
    sub_a = SubAgent(
        sub_id="toolu_A",
        headline="Collect tide tables",
        prompt="Find the tide tables.",
        steps=[Step("THOUGHT", {"thought": "sub-agent thinking"})],
        answer="Tides found.",
        sources=[Citation(name="Tide office", url="https://example.org/tides")],
        status="WORKFLOW_AWAITING_NEXT_STEPS",
        locked_reason="spending_limit_exceeded",
        thread_uuid="bg-a",
    )
    t1 = Turn(
        index=1,
        uuid="t1",
        query="plan a tide trip",
        created_us=T0,
        display_answer="Final tide answer.",
        wf_block=wf_block,
        sub_agents=[sub_a],
        metadata=TurnMeta(
            locked_reason="spending_limit_exceeded", wf_status="WORKFLOW_AWAITING_NEXT_STEPS"
        ),
    )
    stub_wp = {
        "id": "toolu_B",
        "headline": "Late helper",
        "status": "WORKFLOW_COMPLETED",
        "objective_chunks": ["Check B."],
        "steps": [
            wf_step(
                "Searching",
                [item("WORKFLOW_ITEM_QUERIES", "queries_payload", {"queries": ["b query"]})],
            ),
            wf_step("Done", [text_item("B concluded.", variant="answer")]),
        ],
    }
    t2 = Turn(index=2, uuid="t2", created_us=T0 + 60_000_000, is_stub=True, stub_wfs=[stub_wp])
    app_wp = {
        "id": "toolu_C",
        "headline": "Orphan run",
        "status": "WORKFLOW_CANCELED",
        "started_at": "2035-12-25T23:40:00+00:00",
        "steps": [wf_step("Orphan step", [text_item("orphan text")])],
    }
    return attach_views(
        Conversation(
            web_uuid="w-comp",
            title="Tides",
            author="bob",
            mode="computer",
            turns=[t1, t2],
            appendix=[
                AppendixItem(
                    wp=app_wp, locked_reason="", updated="2035-12-25T23:50:00", bg_uuid="bg-c"
                )
            ],
            sub_agents={"toolu_A": sub_a},
            report=None,
        )
    )


def council_conversation() -> Conversation:
    def model_wp(model: str, answer: str) -> dict[str, Any]:
        return {
            "mode": "LLM_COUNCIL",
            "model": model,
            "headline": f"{model} view",
            "status": "WORKFLOW_COMPLETED",
            "steps": [
                wf_step(
                    "Search",
                    [
                        item(
                            "WORKFLOW_ITEM_QUERIES", "queries_payload", {"queries": [f"{model} q1"]}
                        ),
                        item(
                            "WORKFLOW_ITEM_QUERIES", "queries_payload", {"queries": [f"{model} q2"]}
                        ),
                        item(
                            "WORKFLOW_ITEM_SOURCES",
                            "sources_payload",
                            {
                                "sources": [
                                    {"name": f"{model} src", "url": f"https://example.org/{model}"}
                                ]
                            },
                        ),
                    ],
                ),
                wf_step("Answer", [text_item(answer, variant="answer")]),
            ],
        }

    wf_block = {
        "mode": "LLM_COUNCIL",
        "status": "WORKFLOW_COMPLETED",
        "steps": [
            {
                "tool_name": "council_research",
                "title": "Compare",
                "items": [
                    payload_item(
                        model_wp(
                            "alpha",
                            ALPHA,
                        )
                    ),
                    payload_item(model_wp("beta", "Beta answer.")),
                ],
            }
        ],
    }
    sub = {
        m: SubAgent(
            sub_id=m,
            headline=f"{m} view",
            answer=a,
            is_council=True,
            steps=[
                Step(
                    "COUNCIL_ROUND",
                    {
                        "queries": [f"{m} q2"],
                        "sources": [Citation(f"{m} src", f"https://example.org/{m}")],
                    },
                )
            ],
            sources=[Citation(f"{m} src", f"https://example.org/{m}")],
        )
        for m, a in (
            ("alpha", ALPHA),
            ("beta", "Beta answer."),
        )
    }
    turn = Turn(
        index=1,
        uuid="c1",
        query="compare",
        created_us=T0,
        answer="Synthesis.",
        display_answer="Synthesis.",
        wf_block=wf_block,
    )
    return attach_views(
        Conversation(
            web_uuid="w-council",
            title="Council",
            author="cy",
            mode="council",
            turns=[turn],
            sub_agents=sub,
        )
    )


def report_conversation() -> Conversation:
    conv = search_conversation()
    from pplx_export.models import Report

    conv.report = Report(info=ReportInfo(title="Otter report", file_name="otters.md", url=""))
    return conv


SAMPLES = {
    "search": search_conversation,
    "computer": computer_conversation,
    "council": council_conversation,
}
