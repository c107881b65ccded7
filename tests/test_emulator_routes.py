"""Route handlers are plain functions Request -> Response: tested here without a socket."""

from __future__ import annotations

import json

import pytest

from pplx_export.emulator import Library, parse_faults
from pplx_export.emulator.app import Emulator, EmulatorConfig
from pplx_export.emulator.http import Request
from pplx_export.emulator.routes import dispatch
from tests.emulator_support import sample_uuid


@pytest.fixture(scope="module")
def app() -> Emulator:
    emulator = Emulator(Library.load(), EmulatorConfig(page_size=2), parse_faults(""))
    emulator.base_url = "http://emulator.invalid"
    return emulator


def call(app: Emulator, method: str, path: str, body: object = None, **query: str) -> Request:
    raw = json.dumps(body).encode() if body is not None else b""
    return Request(method, path, {k: [v] for k, v in query.items()}, raw, app, ("a@x", "A"))


def test_session_answers_the_identity_of_the_request(app: Emulator) -> None:
    answer = dispatch(call(app, "GET", "/api/auth/session"))
    assert answer.status == 200
    assert answer.json()["user"]["email"] == "a@x"


def test_thread_detail_pages_and_refuses_an_unknown_cursor(app: Emulator) -> None:
    uuid = sample_uuid("bayes")
    first = dispatch(call(app, "GET", f"/rest/thread/{uuid}"))
    assert first.status == 200 and first.stream is None
    assert isinstance(first.json()["entries"], list)
    bad = dispatch(call(app, "GET", f"/rest/thread/{uuid}", cursor="nope"))
    assert (bad.status, bad.json()["error_code"]) == (400, "INVALID_CURSOR")


def test_unknown_paths_and_threads_are_404(app: Emulator) -> None:
    assert dispatch(call(app, "GET", "/rest/nothing")).json() == {
        "error_code": "NOT_FOUND",
        "path": "/rest/nothing",
    }
    assert dispatch(call(app, "GET", "/rest/thread/missing")).status == 404


def test_ask_answers_with_a_stream_that_a_truncate_fault_cuts_short(app: Emulator) -> None:
    body = {"query_str": "hello", "params": {"mode": "copilot", "model_preference": "pplx_pro"}}
    whole = dispatch(call(app, "POST", "/rest/sse/perplexity_ask", body))
    assert whole.status == 200 and whole.content_type.startswith("text/event-stream")
    assert whole.stream is not None
    frames = list(whole.stream)
    req = call(app, "POST", "/rest/sse/perplexity_ask", body)
    req.truncate = True
    cut = dispatch(req)
    assert cut.stream is not None
    assert 0 < len(list(cut.stream)) < len(frames)
