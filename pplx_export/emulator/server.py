"""The loopback HTTP server: routing, auth, faults, stats, and the in-process runner for tests.

Request flow: control endpoints (`/__emulator/...`) first, never faulted or counted except
file downloads (the CDN stand-in, counted, not faulted, no cookie needed); then the request
is counted, then faults are applied (faults model the network and Cloudflare in front of the
site, so they come before the session check), then the session cookie is checked, then the
route answers.

Long because the request handler is the one place the request flow above is ordered, and the
server and the in-process runner for tests wrap that handler; the endpoints themselves are
in emulator/routes/.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypedDict, Unpack, cast
from urllib.parse import parse_qs, unquote, urlsplit

from pplx_export.emulator import routes
from pplx_export.emulator.accounts import account_jar
from pplx_export.emulator.app import (
    DEFAULT_EMAIL,
    DEFAULT_LISTING,
    DEFAULT_NAME,
    DEFAULT_PAGE_SIZE,
    DEFAULT_TOKEN,
    DEFAULT_USERNAME,
    LISTING_MODES,
    SESSION_COOKIE,
    Emulator,
    EmulatorConfig,
)
from pplx_export.emulator.faults import CHALLENGE_HTML, FaultSpec, parse_faults
from pplx_export.emulator.http import AbortStream, Request, Response, error, json_response
from pplx_export.emulator.library import Library
from pplx_export.emulator.routes import upkeep as upkeep_routes
from pplx_export.emulator.routes.control import mutate
from pplx_export.util.bundle import Replay, body_bytes

JSON = dict[str, Any]

# The defaults and the session cookie's name live in app.py (the package exports them).
__all__ = [
    "EmulatorServer",
    "RunningEmulator",
    "make_server",
    "run_emulator",
]


class EmulatorServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        library: Library,
        config: EmulatorConfig,
        faults: FaultSpec,
        replay: Replay | None = None,
    ) -> None:
        super().__init__(address, EmulatorHandler)
        self.app = Emulator(library, config, faults)
        # `--replay BUNDLE`: every request is answered from a capture bundle's recording.
        self.replay = replay
        host, port = self.server_address[:2]
        self.app.base_url = f"http://{host!s}:{port}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-answer (timeouts, the drop fault, a killed export) is
        # normal here; anything else keeps the default traceback on stderr.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    def server_close(self) -> None:
        self.app.closing.set()  # ends streams that are waiting (ask silences, hangs)
        super().server_close()

    @property
    def base_url(self) -> str:
        return self.app.base_url

    @property
    def library(self) -> Library:
        return self.app.library

    @property
    def config(self) -> EmulatorConfig:
        return self.app.config


class EmulatorHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "pplx-emulator/1"
    # Headers and body go out as separate writes; without TCP_NODELAY every keep-alive
    # response waits ~40 ms for the client's delayed ACK.
    disable_nagle_algorithm = True

    # -- plumbing ------------------------------------------------------------------------

    @property
    def app(self) -> Emulator:
        return cast(EmulatorServer, self.server).app

    def log_message(self, format: str, *args: Any) -> None:
        # Quiet by default: tests and `demo` must not see a line per request on stderr.
        if self.app.config.log_requests:
            sys.stderr.write(f"emulator: {format % args}\n")

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        # Path only: query strings may carry signed-URL parameters.
        if self.app.config.log_requests:
            path = urlsplit(self.path).path
            sys.stderr.write(f"emulator: {self.command} {path} {code}\n")

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send(self, response: Response) -> None:
        """Write a handler's `Response`: a body with its length, or a stream that ends with
        the connection."""
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        if response.stream is None:
            self.send_header("Content-Length", str(len(response.body)))
        else:
            self.close_connection = True
        for key, value in response.headers.items():
            self.send_header(key, value)
        self.end_headers()
        if self.command == "HEAD":
            return
        if response.stream is None:
            self.wfile.write(response.body)
            return
        try:
            for chunk in response.stream:
                self.wfile.write(chunk)
                self.wfile.flush()
        except AbortStream:
            self._reset()

    def _cookie(self, name: str) -> str:
        for part in (self.headers.get("Cookie") or "").split(";"):
            key, _, value = part.strip().partition("=")
            if key == name:
                return value
        return ""

    def _reset(self) -> None:
        # A connection reset (RST, not FIN) mid-stream: what a dropped stream looks like to
        # the client. The file objects go first, else close() leaves the socket open.
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.wfile.close()
            self.rfile.close()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()

    def _drop(self) -> None:
        # Close without a response, as a reset connection looks to the client.
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    # -- dispatch ------------------------------------------------------------------------

    def _dispatch(self, method: str) -> None:
        split = urlsplit(self.path)
        path = unquote(split.path)
        # Keep blank values: a cursor that decodes to "" must be seen, not dropped.
        query = parse_qs(split.query, keep_blank_values=True)
        body = self._read_body()
        replay = cast(EmulatorServer, self.server).replay
        if replay is not None and not path.startswith(("/__emulator/stats", "/__emulator/reset")):
            answer = self._replayed(replay, method, split.path, split.query, body)
            if answer.status:  # status 0: dropped, as the recording was
                self._send(answer)
            return
        if path.startswith("/__emulator/"):
            self._send(self._control(method, path, split.path, body))
            return
        thread_id = self.app.library.canonical_id(routes.thread_id_of(method, path))
        self.app.stats.count(method, path, thread_id)
        faulted, truncate = self._apply_faults(path)
        if faulted is not None:
            if faulted.status:  # status 0: the drop fault, already closed
                self._send(faulted)
            return
        identity = self.app.config.identity(self._cookie(SESSION_COOKIE))
        if identity is None:
            self._send(error(401, "UNAUTHORIZED", "Not signed in"))
            return
        req = Request(method, path, query, body, self.app, identity, truncate)
        response = routes.dispatch(req)
        if truncate and response.stream is None:
            response.body = response.body[: max(1, len(response.body) // 2)]
        self._send(response)

    def _apply_faults(self, path: str) -> tuple[Response | None, bool]:
        """(the fault's answer, or None to go on; whether to truncate the answer)."""
        spec = self.app.faults.spec
        if path == "/api/auth/session" and not spec.include_session:
            return None, False
        if spec.latency_s:
            time.sleep(spec.latency_s)
        decision = self.app.faults.decide()
        if decision.kind == "drop":
            self._drop()
            return Response(0), False
        if decision.kind == "429":
            return json_response(
                429,
                {"error_code": "RATE_LIMITED", "message": "Too many requests"},
                {
                    "Retry-After": spec.retry_after,
                    "RateLimit-Limit": "60",
                    "RateLimit-Remaining": "0",
                    "RateLimit-Reset": spec.retry_after,
                },
            ), False
        if decision.kind == "5xx":
            return json_response(
                decision.status, {"error_code": "SERVER_ERROR", "status": decision.status}
            ), False
        if decision.kind == "challenge":
            return Response(200, CHALLENGE_HTML, "text/html; charset=utf-8"), False
        return None, decision.kind == "truncate"

    def _replayed(
        self, replay: Replay, method: str, path: str, query: str, body: bytes
    ) -> Response:
        """The recorded answer to a request (no cookie needed: a bundle holds none)."""
        self.app.stats.count(method, unquote(path))
        recorded = replay.find(method, path, query, body)
        if recorded is None:
            return error(404, "NOT_IN_CAPTURE", "the bundle recorded no such request", path=path)
        if "error" in recorded:
            self._drop()  # the recording ended in a network error
            return Response(0)
        headers = {
            k: str(v)
            for k, v in (recorded.get("headers") or {}).items()
            if k not in ("content-type", "content-length", "server")
        }
        content_type = str((recorded.get("headers") or {}).get("content-type") or "")
        return Response(
            int(recorded.get("status") or 200),
            replay.rewrite_hosts(body_bytes(recorded), self.app.base_url),
            content_type or "application/json",
            headers,
        )

    # -- control endpoints (never faulted, never counted except file downloads) ----------

    def _control(self, method: str, path: str, raw_path: str, body: bytes) -> Response:
        app = self.app
        if path.startswith("/__emulator/files/") and method == "GET":
            app.stats.count(method, path)
            # The raw path: a file name may hold an escaped slash.
            return upkeep_routes.serve_file(app, raw_path, self.path)
        if path == "/__emulator/stats" and method == "GET":
            return json_response(200, app.stats.snapshot())
        if path == "/__emulator/reset-stats" and method == "POST":
            app.stats.reset()
            return json_response(200, {"status": "success"})
        if path == "/__emulator/mutate" and method == "POST":
            try:
                payload = json.loads(body or b"{}")
            except ValueError:
                return error(400, "INVALID_JSON")
            status, answer = mutate(app, payload if isinstance(payload, dict) else {})
            return json_response(status, answer)
        return error(404, "NOT_FOUND", path=path)


# -- running -------------------------------------------------------------------------------


def make_server(
    library: Library | Path | str | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    page_size: int = DEFAULT_PAGE_SIZE,
    faults: str | FaultSpec = "",
    seed: int = 0,
    email: str = DEFAULT_EMAIL,
    name: str = DEFAULT_NAME,
    username: str = DEFAULT_USERNAME,
    session_token: str = DEFAULT_TOKEN,
    log_requests: bool = False,
    extra_accounts: dict[str, tuple[str, str]] | None = None,
    listing: str = DEFAULT_LISTING,
    replay: Path | str | None = None,
) -> EmulatorServer:
    lib = (
        library
        if isinstance(library, Library)
        else Library.load(Path(library) if library else None)
    )
    spec = faults if isinstance(faults, FaultSpec) else parse_faults(faults)
    config = EmulatorConfig(
        page_size=max(1, page_size),
        email=email,
        name=name,
        username=username,
        session_token=session_token,
        seed=seed,
        log_requests=log_requests,
        extra_accounts=dict(extra_accounts or {}),
        listing=listing,
    )
    if listing not in LISTING_MODES:
        raise ValueError(f"listing must be one of {', '.join(LISTING_MODES)}, not {listing!r}")
    recorded = Replay.load(Path(replay)) if replay is not None else None
    return EmulatorServer((host, port), lib, config, spec, recorded)


class RunningEmulator:
    """What `run_emulator` yields: the base URL plus stats/mutate helpers (no HTTP needed)."""

    def __init__(self, server: EmulatorServer) -> None:
        self.server = server

    @property
    def base_url(self) -> str:
        return self.server.base_url

    @property
    def library(self) -> Library:
        return self.server.app.library

    @property
    def session_token(self) -> str:
        return self.server.app.config.session_token

    @property
    def cookies(self) -> dict[str, str]:
        return {SESSION_COOKIE: self.server.app.config.session_token}

    def account_cookies(self) -> dict[str, str]:
        """A multi-account browser's jar: the main account active, a token per account."""
        return account_jar(self.server.app.config)

    def stats(self) -> JSON:
        return self.server.app.stats.snapshot()

    def reset_stats(self) -> None:
        self.server.app.stats.reset()

    def mutate(self, payload: JSON | None = None, **kwargs: Any) -> JSON:
        """`mutate(touch=uuid)` or `mutate({"delete": uuid, "listed": True})`, like the
        control endpoint; an unknown thread or action raises KeyError."""
        status, answer = mutate(self.server.app, {**(payload or {}), **kwargs})
        if status != 200:
            raise KeyError(answer.get("error_code", "mutate failed"))
        return answer


class ServeOptions(TypedDict, total=False):
    """What `run_emulator` passes on to `make_server` (its defaults there)."""

    page_size: int
    faults: str | FaultSpec
    seed: int
    email: str
    name: str
    username: str
    session_token: str
    extra_accounts: dict[str, tuple[str, str]] | None
    listing: str
    replay: Path | str | None


@contextlib.contextmanager
def run_emulator(
    library: Library | Path | str | None = None, **options: Unpack[ServeOptions]
) -> Iterator[RunningEmulator]:
    """Serve on 127.0.0.1:<free port> in a background thread for the duration of the block
    (the options are `make_server`'s but the address and request log)."""
    server = make_server(library, **options)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield RunningEmulator(server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
