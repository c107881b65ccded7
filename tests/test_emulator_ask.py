"""SSE ask: a new thread per mode, streamed events, follow-up turns."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from pplx_export.emulator import RunningEmulator, run_emulator
from tests.emulator_support import client, fetch_pages, graphql_all, parse_sse, thread_url


def ask(http: httpx.Client, query: str, **params: Any) -> list[dict[str, Any]]:
    body = {"query_str": query, "params": {"mode": "copilot", "query_source": "home", **params}}
    response = http.post(
        "/rest/sse/perplexity_ask", json=body, headers={"Accept": "text/event-stream"}
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.content.endswith(b"event: end_of_stream\r\ndata: {}\r\n\r\n")
    return parse_sse(response.content)[:-1]  # without the trailing end_of_stream


def final_answer(entry: dict[str, Any]) -> str:
    steps = json.loads(entry["text"])
    finals = [s for s in steps if s["step_type"] == "FINAL"]
    return str(json.loads(finals[-1]["content"]["answer"])["answer"])


def test_new_thread_streams_and_is_stored() -> None:
    with run_emulator(listing="both") as emu, client(emu) as http:
        events = ask(http, "Why is the sea salty?", model_preference="pplx_pro")
        assert len(events) >= 4
        assert events[-1]["final_sse_message"] is True
        assert events[-1]["status"] == "COMPLETED"
        assert not any(e["final_sse_message"] for e in events[:-1])
        assert all("text" not in e for e in events[:-1])  # blocks, never a growing text
        assert events[-1]["message_mode"] == "FULL"
        ids = {(e["backend_uuid"], e["uuid"], e["context_uuid"]) for e in events}
        assert len(ids) == 1
        thread_id = events[-1]["backend_uuid"]

        nodes = graphql_all(http)
        assert nodes[0]["entryId"] == thread_id  # newest first
        assert nodes[0]["name"] == "Why is the sea salty?"
        pages = fetch_pages(http, thread_id)
        entry = pages[0]["entries"][0]
        assert entry["backend_uuid"] == thread_id
        assert entry["context_uuid"] == events[-1]["context_uuid"]
        assert entry["search_mode"] == "SEARCH"
        assert final_answer(entry) == final_answer(events[-1])
        assert fetch_pages(http, thread_id, schematized=True)[0]["entries"][0]["blocks"]


@pytest.mark.parametrize(
    ("model", "search_mode", "listing_mode"),
    [
        ("pplx_alpha", "RESEARCH", "SEARCH"),
        ("pplx_agentic_research", "AGENTIC_RESEARCH", "SEARCH"),
        ("pplx_study", "STUDY", "SEARCH"),
        ("pplx_asi", "ASI", "COMPUTER"),
    ],
)
def test_mode_follows_model_preference(model: str, search_mode: str, listing_mode: str) -> None:
    with run_emulator(listing="both") as emu, client(emu) as http:
        compare = ["gpt56_sol_thinking", "claude50opusthinking", "gemini31pro_high"]
        events = ask(http, "Explain photosynthesis", model_preference=model,
                     compare_model_preferences=compare)  # fmt: skip
        thread_id = events[-1]["backend_uuid"]
        entry = fetch_pages(http, thread_id)[0]["entries"][0]
        assert entry["search_mode"] == search_mode
        assert entry["display_model"] == model
        assert graphql_all(http)[0]["mode"] == listing_mode
        blocks = fetch_pages(http, thread_id, schematized=True)[0]["entries"][0]["blocks"]
        council = [b for b in blocks if b.get("workflow_block", {}).get("mode") == "LLM_COUNCIL"]
        assert bool(council) == (model == "pplx_agentic_research")
        if council:
            items = council[0]["workflow_block"]["steps"][0]["items"]
            assert [i["payload"]["workflow_payload"]["model"] for i in items] == compare


def test_follow_up_appends_a_turn(emu_fresh: RunningEmulator) -> None:
    with client(emu_fresh) as http:
        first = ask(http, "Name a prime number", model_preference="pplx_pro")[-1]
        second = ask(
            http,
            "And another one?",
            model_preference="pplx_pro",
            query_source="followup",
            last_backend_uuid=first["backend_uuid"],
            followup_source="link",
        )[-1]
        assert second["status"] == "COMPLETED"
        assert second["context_uuid"] == first["context_uuid"]
        assert second["backend_uuid"] != first["backend_uuid"]
        assert second["thread_url_slug"] == first["backend_uuid"]
        entries = [e for p in fetch_pages(http, first["backend_uuid"]) for e in p["entries"]]
        assert [e["query_str"] for e in entries] == ["Name a prime number", "And another one?"]
        assert entries[1]["query_source"] == "followup"
        assert len(graphql_all(http)) == 22  # 21 listed sample threads + one new, not two


def test_follow_up_on_sample_thread_and_unknown_parent(emu_fresh: RunningEmulator) -> None:
    with client(emu_fresh) as http:
        newest = fetch_pages(http, emu_fresh.library.listing()[0].uuid)[0]["entries"][-1]
        ask(http, "One more thing", last_backend_uuid=newest["backend_uuid"])
        wrong = {"last_backend_uuid": newest["backend_uuid"], "read_write_token": "nope"}
        response = http.post("/rest/sse/perplexity_ask", json={"query_str": "x", "params": wrong})
        assert response.status_code == 403
        right = {**wrong, "read_write_token": newest["read_write_token"]}
        assert ask(http, "With the token", **right)[-1]["status"] == "COMPLETED"
        body = {"query_str": "x", "params": {"last_backend_uuid": "no-such-backend"}}
        assert http.post("/rest/sse/perplexity_ask", json=body).status_code == 404
        assert http.post("/rest/sse/perplexity_ask", json={"params": {}}).status_code == 400


def test_truncate_fault_ends_stream_without_final_event() -> None:
    with run_emulator(faults="truncate=1") as emu, client(emu) as http:
        response = http.post(
            "/rest/sse/perplexity_ask",
            json={"query_str": "hello", "params": {"model_preference": "pplx_pro"}},
        )
        events = parse_sse(response.content)
    assert events
    assert not any(e["final_sse_message"] for e in events)


def test_new_thread_ids_are_deterministic_for_a_seed() -> None:
    def first_id(seed: int) -> str:
        with run_emulator(seed=seed) as emu, client(emu) as http:
            return str(ask(http, "same question")[-1]["backend_uuid"])

    assert first_id(3) == first_id(3)
    assert first_id(3) != first_id(4)


def test_thread_url_of_new_thread_fetches(emu_fresh: RunningEmulator) -> None:
    with client(emu_fresh) as http:
        thread_id = ask(http, "Quick check")[-1]["backend_uuid"]
        assert http.get(thread_url(thread_id)).status_code == 200


@pytest.fixture
def emu_fresh() -> Any:
    with run_emulator(listing="both") as running:
        yield running
