"""The SSE ask endpoint: a new thread or a follow-up, streamed as events (protocol §2.12).

Timing and endings come from the fault spec's `ask*` keys (faults.ASK_OUTCOMES): deep
research and council runs stay silent for `ask_silence` after their first event (the real
ones are quiet for minutes), every growing event waits `ask_step`, and the stream ends as
`ask=` says. Waits are on `app.closing`, so a stopping server never hangs on a stream.
"""

from __future__ import annotations

from collections.abc import Iterator

from pplx_export.emulator.app import Emulator
from pplx_export.emulator.ask import END_OF_STREAM, AskError, sse_frame, start_ask
from pplx_export.emulator.http import JSON, AbortStream, Request, Response, error

EVENT_STREAM = "text/event-stream; charset=utf-8"
SILENT_MODES = ("deep-research", "council")
HANG_MAX_S = 3600.0  # `ask=hang` waits this long at most for the client to hang up


def perplexity_ask(req: Request) -> Response:
    app = req.app
    spec = app.faults.spec
    try:
        result = start_ask(
            app.library, req.json(), app.new_id, app.config.username, outcome=spec.ask_outcome
        )
    except AskError as exc:
        return error(exc.status, exc.code, str(exc))
    if result.created and spec.ask_not_found:
        app.hide(result.record.uuid, spec.ask_not_found)
    if spec.ask_settle and spec.ask_outcome in ("cut_running", "end", "hang"):
        app.settle(result.record.uuid, result.backend_uuid, spec.ask_settle)
    events = result.events
    if req.truncate:
        events = events[: max(1, len(events) // 2)]  # the stream dies before the final event
    silence = spec.ask_silence_s if result.mode in SILENT_MODES else 0.0
    return Response(
        200,
        content_type=EVENT_STREAM,
        headers={"Cache-Control": "no-cache", "Connection": "close"},
        stream=_frames(app, events, silence, spec.ask_step_s, spec.ask_outcome),
    )


def _frames(
    app: Emulator, events: list[JSON], silence: float, step: float, outcome: str
) -> Iterator[bytes]:
    for index, event in enumerate(events):
        pause = silence if index == 1 else step if index > 1 else 0.0
        if pause and app.closing.wait(pause):
            return
        yield sse_frame(event, split=index == 1)
    if outcome in ("cut", "cut_running"):
        raise AbortStream
    if outcome in ("complete", "error") and events and events[-1].get("final_sse_message"):
        yield END_OF_STREAM
    if outcome == "hang":
        app.closing.wait(HANG_MAX_S)
