"""The loopback HTTP server: routing, auth, faults, stats, and the in-process runner for tests.

Request flow: control endpoints (`/__emulator/...`) first, never faulted or counted except
file downloads (the CDN stand-in, counted, not faulted, no cookie needed); then the request
is counted, then faults are applied (faults model the network and Cloudflare in front of the
site, so they come before the session check), then the session cookie is checked, then the
route answers.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import socket
import sys
import threading
import time
import uuid as uuidlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qs, unquote, urlsplit

from pplx_export.emulator import routes
from pplx_export.emulator.faults import CHALLENGE_HTML, FaultPlan, FaultSpec, parse_faults
from pplx_export.emulator.library import Library

JSON = dict[str, Any]

SESSION_COOKIE = "__Secure-next-auth.session-token"
DEFAULT_EMAIL = "alice@example.com"
DEFAULT_NAME = "Alice Example"
DEFAULT_USERNAME = "alice"
DEFAULT_TOKEN = "emulator-session-token-alice"
DEFAULT_PAGE_SIZE = 5

_UUIDISH = re.compile(r"^/rest/(thread|assets)/(?!list_|mark_viewed|delete_)[^/]+(/data)?$")


@dataclass
class EmulatorConfig:
    page_size: int = DEFAULT_PAGE_SIZE
    email: str = DEFAULT_EMAIL
    name: str = DEFAULT_NAME
    username: str = DEFAULT_USERNAME
    session_token: str = DEFAULT_TOKEN
    seed: int = 0
    log_requests: bool = False
    # More signed-in accounts (token -> (email, name)): every token opens the same library;
    # the session probe answers the identity of the token sent (multi-account `init`).
    extra_accounts: dict[str, tuple[str, str]] = field(default_factory=dict)

    def identity(self, token: str) -> tuple[str, str] | None:
        if token and token == self.session_token:
            return self.email, self.name
        return self.extra_accounts.get(token) if token else None


class Stats:
    """Request counters for `GET /__emulator/stats`; UUIDs are collapsed out of the keys."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.total = 0
        self.by_endpoint: Counter[str] = Counter()
        self.by_thread: Counter[str] = Counter()

    def count(self, method: str, path: str, thread_id: str = "") -> None:
        with self._lock:
            self.total += 1
            self.by_endpoint[f"{method} {endpoint_key(path)}"] += 1
            if thread_id:
                self.by_thread[thread_id] += 1

    def snapshot(self) -> JSON:
        with self._lock:
            return {
                "total": self.total,
                "by_endpoint": dict(sorted(self.by_endpoint.items())),
                "by_thread": dict(sorted(self.by_thread.items())),
            }

    def reset(self) -> None:
        with self._lock:
            self.total = 0
            self.by_endpoint.clear()
            self.by_thread.clear()


def endpoint_key(path: str) -> str:
    """`/rest/thread/<id>` -> `/rest/thread`, `/rest/assets/<id>/data` -> `/rest/assets/data`,
    `/__emulator/files/<id>/<name>` -> `/__emulator/files`."""
    if path.startswith("/__emulator/files/"):
        return "/__emulator/files"
    match = _UUIDISH.match(path)
    if match:
        return f"/rest/{match.group(1)}" + (match.group(2) or "")
    return path


class EmulatorServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        library: Library,
        config: EmulatorConfig,
        faults: FaultSpec,
    ) -> None:
        super().__init__(address, EmulatorHandler)
        self.library = library
        self.config = config
        self.faults = FaultPlan(faults, config.seed)
        self.stats = Stats()
        # Separate stream for generated ids, so faults and ids never shift each other.
        self._ids = random.Random(f"ids-{config.seed}")
        self._ids_lock = threading.Lock()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-answer (timeouts, the drop fault, a killed export) is
        # normal here; anything else keeps the default traceback on stderr.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def new_id(self) -> str:
        with self._ids_lock:
            return str(uuidlib.UUID(int=self._ids.getrandbits(128), version=4))


class EmulatorHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "pplx-emulator/1"
    # Headers and body go out as separate writes; without TCP_NODELAY every keep-alive
    # response waits ~40 ms for the client's delayed ACK.
    disable_nagle_algorithm = True

    # -- plumbing ------------------------------------------------------------------------

    @property
    def emu(self) -> EmulatorServer:
        return cast(EmulatorServer, self.server)

    def log_message(self, format: str, *args: Any) -> None:
        # Quiet by default: tests and `demo` must not see a line per request on stderr.
        if self.emu.config.log_requests:
            sys.stderr.write(f"emulator: {format % args}\n")

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        # Path only: query strings may carry signed-URL parameters.
        if self.emu.config.log_requests:
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

    def send_bytes(
        self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        if getattr(self, "_truncate", False):
            body = body[: max(1, len(body) // 2)]
        self.send_bytes(status, body, "application/json; charset=utf-8", headers)

    def _cookie(self, name: str) -> str:
        for part in (self.headers.get("Cookie") or "").split(";"):
            key, _, value = part.strip().partition("=")
            if key == name:
                return value
        return ""

    def _drop(self) -> None:
        # Close without a response, as a reset connection looks to the client.
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    # -- dispatch ------------------------------------------------------------------------

    def _dispatch(self, method: str) -> None:
        self._truncate = False
        split = urlsplit(self.path)
        path = unquote(split.path)
        # Keep blank values: a cursor that decodes to "" must be seen, not dropped.
        query = parse_qs(split.query, keep_blank_values=True)
        body = self._read_body()
        if path.startswith("/__emulator/"):
            self._control(method, path, body, query)
            return
        thread_id = routes.thread_id_of(method, path)
        self.emu.stats.count(method, path, thread_id)
        if not self._apply_faults(path):
            return
        identity = self.emu.config.identity(self._cookie(SESSION_COOKIE))
        if identity is None:
            self.send_json(401, {"error_code": "UNAUTHORIZED", "message": "Not signed in"})
            return
        ctx = routes.Request(
            method=method,
            path=path,
            query=query,
            body=body,
            handler=self,
            server=self.emu,
            identity=identity,
        )
        routes.route(ctx)

    def _apply_faults(self, path: str) -> bool:
        """Return False when a fault already answered (or dropped) the request."""
        spec = self.emu.faults.spec
        if path == "/api/auth/session" and not spec.include_session:
            return True
        if spec.latency_s:
            time.sleep(spec.latency_s)
        decision = self.emu.faults.decide()
        if decision.kind == "drop":
            self._drop()
            return False
        if decision.kind == "429":
            self.send_json(
                429,
                {"error_code": "RATE_LIMITED", "message": "Too many requests"},
                {
                    "Retry-After": spec.retry_after,
                    "RateLimit-Limit": "60",
                    "RateLimit-Remaining": "0",
                    "RateLimit-Reset": spec.retry_after,
                },
            )
            return False
        if decision.kind == "5xx":
            self.send_json(
                decision.status, {"error_code": "SERVER_ERROR", "status": decision.status}
            )
            return False
        if decision.kind == "challenge":
            self.send_bytes(200, CHALLENGE_HTML, "text/html; charset=utf-8")
            return False
        if decision.kind == "truncate":
            self._truncate = True
        return True

    # -- control endpoints (never faulted, never counted except file downloads) ----------

    def _control(self, method: str, path: str, body: bytes, query: dict[str, list[str]]) -> None:
        if path.startswith("/__emulator/files/") and method == "GET":
            self.emu.stats.count(method, path)
            routes.serve_file(self, self.emu, path)
            return
        if path == "/__emulator/stats" and method == "GET":
            self.send_json(200, self.emu.stats.snapshot())
            return
        if path == "/__emulator/reset-stats" and method == "POST":
            self.emu.stats.reset()
            self.send_json(200, {"status": "success"})
            return
        if path == "/__emulator/mutate" and method == "POST":
            try:
                payload = json.loads(body or b"{}")
            except ValueError:
                self.send_json(400, {"error_code": "INVALID_JSON"})
                return
            status, answer = routes.mutate(self.emu, payload if isinstance(payload, dict) else {})
            self.send_json(status, answer)
            return
        self.send_json(404, {"error_code": "NOT_FOUND", "path": path})


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
    )
    return EmulatorServer((host, port), lib, config, spec)


class RunningEmulator:
    """What `run_emulator` yields: the base URL plus stats/mutate helpers (no HTTP needed)."""

    def __init__(self, server: EmulatorServer) -> None:
        self.server = server

    @property
    def base_url(self) -> str:
        return self.server.base_url

    @property
    def library(self) -> Library:
        return self.server.library

    @property
    def session_token(self) -> str:
        return self.server.config.session_token

    @property
    def cookies(self) -> dict[str, str]:
        return {SESSION_COOKIE: self.server.config.session_token}

    def stats(self) -> JSON:
        return self.server.stats.snapshot()

    def reset_stats(self) -> None:
        self.server.stats.reset()

    def mutate(self, payload: JSON | None = None, **kwargs: Any) -> JSON:
        """`mutate(touch=uuid)` or `mutate({"delete": uuid, "listed": True})`, like the
        control endpoint; an unknown thread or action raises KeyError."""
        status, answer = routes.mutate(self.server, {**(payload or {}), **kwargs})
        if status != 200:
            raise KeyError(answer.get("error_code", "mutate failed"))
        return answer


@contextlib.contextmanager
def run_emulator(
    library: Library | Path | str | None = None,
    *,
    page_size: int = DEFAULT_PAGE_SIZE,
    faults: str = "",
    seed: int = 0,
    email: str = DEFAULT_EMAIL,
    name: str = DEFAULT_NAME,
    username: str = DEFAULT_USERNAME,
    session_token: str = DEFAULT_TOKEN,
    extra_accounts: dict[str, tuple[str, str]] | None = None,
) -> Iterator[RunningEmulator]:
    """Serve on 127.0.0.1:<free port> in a background thread for the duration of the block."""
    server = make_server(
        library,
        page_size=page_size,
        faults=faults,
        seed=seed,
        email=email,
        name=name,
        username=username,
        session_token=session_token,
        extra_accounts=extra_accounts,
    )
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
