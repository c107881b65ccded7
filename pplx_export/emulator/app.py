"""The emulator's state, apart from HTTP: the library, the configuration, faults, counters.

Route handlers read and change it through `Request.app`; the HTTP server owns one. Keeping it
here (not on the server class) is what lets handlers run without sockets.
"""

from __future__ import annotations

import random
import re
import threading
import uuid as uuidlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pplx_export.emulator.faults import FaultPlan, FaultSpec
from pplx_export.emulator.library import Library
from pplx_export.emulator.upkeep import Upkeep

JSON = dict[str, Any]

SESSION_COOKIE = "__Secure-next-auth.session-token"
DEFAULT_EMAIL = "alice@example.com"
DEFAULT_NAME = "Alice Example"
DEFAULT_USERNAME = "alice"
DEFAULT_TOKEN = "emulator-session-token-alice"
DEFAULT_PAGE_SIZE = 5
# Which library listings answer (docs/emulator.md): "rest" lists like the live site in 2026
# (REST rows; GraphQL answers PERSISTED_QUERY_NOT_FOUND), "both" is the old behaviour
# (GraphQL answers too), "graphql" has GraphQL only (REST answers 404).
LISTING_MODES = ("rest", "both", "graphql")
DEFAULT_LISTING = "rest"

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
    listing: str = DEFAULT_LISTING
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


class Emulator:
    """One emulated site: what every route handler may read or change."""

    def __init__(self, library: Library, config: EmulatorConfig, faults: FaultSpec) -> None:
        self.library = library
        self.config = config
        self.faults = FaultPlan(faults, config.seed)
        self.stats = Stats()
        self.upkeep = Upkeep.from_manifest(library.manifest)  # owners, failures, URL lifetime
        self.base_url = ""  # set by the server once it has its port
        # Which listings answer; the `listing` mutation flips it while serving.
        self.listing = config.listing
        # Separate stream for generated ids, so faults and ids never shift each other.
        self._ids = random.Random(f"ids-{config.seed}")
        self._ids_lock = threading.Lock()
        # Set when the server stops: streams that wait (ask silences, `ask=hang`) end early.
        self.closing = threading.Event()
        # Thread UUID -> GETs still to answer 404 (a just-created thread, fault `ask_404`).
        self._hidden: dict[str, int] = {}
        # Thread UUID -> (turn still running, GETs before it completes) (fault `ask_settle`).
        self._settling: dict[str, tuple[str, int]] = {}
        # Context UUIDs sent to mark_viewed, in order (what tests check a read receipt by).
        self.viewed: list[str] = []
        self._lock = threading.Lock()

    def serves(self, listing: str) -> bool:
        """Whether the library listing `listing` ("rest" | "graphql") answers now."""
        return self.listing in ("both", listing)

    def hide(self, thread_id: str, gets: int) -> None:
        with self._lock:
            self._hidden[thread_id] = gets

    def settle(self, thread_id: str, backend_uuid: str, gets: int) -> None:
        with self._lock:
            self._settling[thread_id] = (backend_uuid, gets)

    def take_settled(self, thread_id: str) -> str:
        """The turn that this GET of the thread sees completed ("" for none; counts down)."""
        with self._lock:
            backend_uuid, left = self._settling.get(thread_id, ("", 0))
            if not backend_uuid:
                return ""
            if left > 1:
                self._settling[thread_id] = (backend_uuid, left - 1)
                return ""
            del self._settling[thread_id]
            return backend_uuid

    def take_hidden(self, thread_id: str) -> bool:
        """True when this GET of the thread must answer 404 (and count it down)."""
        with self._lock:
            left = self._hidden.get(thread_id, 0)
            if left <= 0:
                return False
            self._hidden[thread_id] = left - 1
            return True

    def mark_viewed(self, context_uuids: list[str]) -> None:
        with self._lock:
            self.viewed.extend(context_uuids)

    def new_id(self) -> str:
        with self._ids_lock:
            return str(uuidlib.UUID(int=self._ids.getrandbits(128), version=4))
