"""Request and response values: route handlers take a `Request` and return a `Response`.

Handlers never touch the socket, so they can be called (and tested) without a server; the
HTTP handler in server.py turns a `Response` into bytes on the wire.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pplx_export.emulator.app import Emulator

JSON = dict[str, Any]
JSON_TYPE = "application/json; charset=utf-8"


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    body: bytes
    app: Emulator
    identity: tuple[str, str] = ("", "")  # (email, name) of the session cookie's account
    # The `truncate` fault: a JSON body is cut in half, an event stream ends early.
    truncate: bool = False

    def arg(self, name: str, default: str = "") -> str:
        values = self.query.get(name)
        return values[0] if values else default

    def json(self) -> JSON:
        try:
            value = json.loads(self.body or b"{}")
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}


class AbortStream(Exception):
    """Raised by a `Response.stream` to reset the connection mid-stream (a dropped stream)."""


@dataclass
class Response:
    status: int
    body: bytes = b""
    content_type: str = JSON_TYPE
    headers: dict[str, str] = field(default_factory=dict)
    # An event stream: chunks written and flushed one by one, then the connection closes
    # (or is reset, when the stream raises AbortStream).
    stream: Iterable[bytes] | None = None

    def json(self) -> Any:
        """The decoded body (handler tests)."""
        return json.loads(self.body)


def json_response(status: int, payload: Any, headers: dict[str, str] | None = None) -> Response:
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    return Response(status, body, JSON_TYPE, dict(headers or {}))


def error(status: int, code: str, message: str = "", **extra: Any) -> Response:
    payload: JSON = {"error_code": code}
    if message:
        payload["message"] = message
    payload.update(extra)
    return json_response(status, payload)


Handler = Callable[[Request], Response]
