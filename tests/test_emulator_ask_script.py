"""The emulator's scripted ask: endings (faults.ASK_OUTCOMES), silences, 404 after creation,
forbidden threads, read receipts. Handler-level where the socket does not matter."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from pplx_export.emulator import FaultSpecError, Library, parse_faults, run_emulator
from pplx_export.emulator.app import Emulator, EmulatorConfig
from pplx_export.emulator.http import AbortStream, Request
from pplx_export.emulator.routes import dispatch
from tests.emulator_support import client, parse_sse, sample_uuid

ASK = "/rest/sse/perplexity_ask"


def make_app(faults: str = "") -> Emulator:
    app = Emulator(Library.load(), EmulatorConfig(), parse_faults(faults))
    app.base_url = "http://emulator.invalid"
    return app


def call(app: Emulator, method: str, path: str, body: object = None) -> Request:
    raw = json.dumps(body).encode() if body is not None else b""
    return Request(method, path, {}, raw, app, ("a@x", "A"))


def ask_body(model: str = "pplx_pro", **params: Any) -> dict[str, Any]:
    return {"query_str": "Why?", "params": {"model_preference": model, **params}}


def frames(app: Emulator, body: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """(events, aborted) of one ask, read from the handler's stream."""
    response = dispatch(call(app, "POST", ASK, body))
    assert response.status == 200 and response.stream is not None
    chunks: list[bytes] = []
    aborted = False
    try:
        for chunk in response.stream:
            chunks.append(chunk)
    except AbortStream:
        aborted = True
    raw = b"".join(chunks)
    events = parse_sse(raw)
    if raw.endswith(b"event: end_of_stream\r\ndata: {}\r\n\r\n"):
        assert events[-1] == {}  # the trailing end_of_stream (protocol §9.6)
        events = events[:-1]
    return events, aborted


def stored_status(app: Emulator, thread_id: str) -> str:
    record = app.library.get(thread_id)
    assert record is not None
    return str(record.entries[-1]["status"])


def test_parse_faults_knows_the_ask_keys() -> None:
    spec = parse_faults("ask=cut,ask_silence=3s,ask_step=50ms,ask_404=2")
    assert (spec.ask_outcome, spec.ask_silence_s, spec.ask_step_s, spec.ask_not_found) == (
        "cut",
        3.0,
        0.05,
        2,
    )
    for bad in ("ask=maybe", "ask_404=x", "ask_silence=soon"):
        with pytest.raises(FaultSpecError):
            parse_faults(bad)


def test_complete_streams_blocks_and_ends_with_the_full_final_event() -> None:
    app = make_app()
    events, aborted = frames(app, ask_body())
    assert not aborted
    assert events[-1]["final_sse_message"] is True and events[-1]["status"] == "COMPLETED"
    assert events[-1]["message_mode"] == "FULL" and events[-1]["text"]
    assert all("text" not in e for e in events[:-1])  # the live site never grows a `text`
    assert stored_status(app, events[0]["backend_uuid"]) == "COMPLETED"


@pytest.mark.parametrize(
    ("outcome", "aborted", "stored"),
    [("cut", True, "COMPLETED"), ("cut_running", True, "PENDING"), ("end", False, "PENDING")],
)
def test_streams_that_stop_before_the_final_event(outcome: str, aborted: bool, stored: str) -> None:
    app = make_app(f"ask={outcome}")
    events, was_aborted = frames(app, ask_body())
    assert was_aborted is aborted
    assert len(events) > 1 and not any(e["final_sse_message"] for e in events)
    assert len(events) < len(frames(make_app(), ask_body())[0]) - 1  # cut midway
    assert stored_status(app, events[0]["backend_uuid"]) == stored


def test_a_running_turn_settles_after_some_gets() -> None:
    app = make_app("ask=cut_running,ask_settle=2")
    events, _ = frames(app, ask_body())
    thread = events[0]["backend_uuid"]
    dispatch(call(app, "GET", f"/rest/thread/{thread}"))
    assert stored_status(app, thread) == "PENDING"
    dispatch(call(app, "GET", f"/rest/thread/{thread}"))
    assert stored_status(app, thread) == "COMPLETED"


def test_error_outcome_sends_a_failed_final_event() -> None:
    app = make_app("ask=error")
    events, _ = frames(app, ask_body())
    assert len(events) == 2
    last = events[-1]
    assert (last["status"], last["final_sse_message"], last["error_code"]) == (
        "FAILED",
        True,
        "INTERNAL_SERVER_ERROR",
    )
    assert stored_status(app, last["backend_uuid"]) == "FAILED"


def test_hang_sends_the_first_event_then_waits_until_the_server_closes() -> None:
    app = make_app("ask=hang")
    response = dispatch(call(app, "POST", ASK, ask_body()))
    assert response.stream is not None
    stream = iter(response.stream)
    first = parse_sse(next(stream))
    assert first[0]["backend_uuid"] and not first[0]["final_sse_message"]
    app.closing.set()  # what server_close does: the wait ends at once
    assert list(stream) == []


def test_silence_only_for_deep_research_and_council() -> None:
    app = make_app("ask_silence=0.3s")
    waits: list[float] = []

    def wait(timeout: float | None = None) -> bool:
        waits.append(timeout or 0.0)
        return False

    app.closing.wait = wait  # type: ignore[method-assign]
    frames(app, ask_body("pplx_pro"))
    assert waits == []
    frames(app, ask_body("pplx_alpha"))
    assert waits == [0.3]
    waits.clear()
    frames(app, ask_body("pplx_agentic_research", compare_model_preferences=["a", "b"]))
    assert waits == [0.3]


def test_a_new_thread_answers_404_for_its_first_gets() -> None:
    app = make_app("ask_404=2")
    events, _ = frames(app, ask_body())
    thread = events[0]["backend_uuid"]
    statuses = [dispatch(call(app, "GET", f"/rest/thread/{thread}")).status for _ in range(3)]
    assert statuses == [404, 404, 200]
    follow = ask_body(last_backend_uuid=thread)
    frames(app, follow)  # a follow-up is not a new thread: no 404 for it
    assert dispatch(call(app, "GET", f"/rest/thread/{thread}")).status == 200


def test_forbidden_thread_cannot_be_read_or_continued() -> None:
    app = make_app()
    uuid = sample_uuid("tides")
    record = app.library.get(uuid)
    assert record is not None
    backend = record.entries[-1]["backend_uuid"]
    from pplx_export.emulator.routes.control import mutate

    assert mutate(app, {"forbid": uuid})[0] == 200
    refused = dispatch(call(app, "GET", f"/rest/thread/{uuid}"))
    assert (refused.status, refused.json()["error_code"]) == (403, "VIEW_THREAD_NOT_ALLOWED")
    ask = dispatch(call(app, "POST", ASK, ask_body(last_backend_uuid=backend)))
    assert ask.status == 403


def test_mark_viewed_is_recorded() -> None:
    app = make_app()
    answer = dispatch(call(app, "POST", "/rest/thread/mark_viewed", {"context_uuids": ["c1"]}))
    assert answer.status == 200
    assert app.viewed == ["c1"]


def test_cut_resets_the_connection_mid_stream() -> None:
    with run_emulator(faults="ask=cut") as emu, client(emu) as http:
        seen: list[bytes] = []
        with pytest.raises(httpx.TransportError), http.stream("POST", ASK, json=ask_body()) as r:
            assert r.status_code == 200
            seen.extend(r.iter_bytes())
        # The thread exists on the server and completed there.
        assert emu.library.listing()[0].entries[-1]["status"] == "COMPLETED"


def test_closing_the_server_ends_a_hanging_stream() -> None:
    started = time.monotonic()
    with run_emulator(faults="ask=hang") as emu:
        http = client(emu)
        with http.stream("POST", ASK, json=ask_body()) as response:
            assert response.status_code == 200
            emu.server.app.closing.set()
            body = response.read()
        http.close()
    assert parse_sse(body)[0]["status"] == "PENDING"
    assert time.monotonic() - started < 20  # not the hour `ask=hang` waits at most
