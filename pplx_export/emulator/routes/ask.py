"""The SSE ask endpoint: a new thread or a follow-up, streamed as events (protocol §2.12)."""

from __future__ import annotations

from pplx_export.emulator.ask import AskError, sse_frame, start_ask
from pplx_export.emulator.http import Request, Response, error

EVENT_STREAM = "text/event-stream; charset=utf-8"


def perplexity_ask(req: Request) -> Response:
    app = req.app
    try:
        result = start_ask(app.library, req.json(), app.new_id, app.config.username)
    except AskError as exc:
        return error(exc.status, exc.code, str(exc))
    events = result.events
    if req.truncate:
        events = events[: max(1, len(events) // 2)]  # the stream dies before the final event
    frames = (sse_frame(event, split=index == 1) for index, event in enumerate(events))
    return Response(
        200,
        content_type=EVENT_STREAM,
        headers={"Cache-Control": "no-cache", "Connection": "close"},
        stream=frames,
    )
