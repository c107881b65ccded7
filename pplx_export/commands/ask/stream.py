"""Watching an ask's event stream: events, heartbeats through long silences, a silence timeout.

Deep research and council runs can be silent for minutes (protocol §2.12), and a blocking
read cannot show that time passing. So the stream is read on a daemon thread that hands
events over a queue (`ThreadFeed`), and the watcher waits on the queue one heartbeat at a
time: each wait that ends empty is a heartbeat for the view, and a silence as long as the
timeout ends the watch. The main thread only ever waits on the queue, so Ctrl-C lands there.

`Feed` is the seam for tests: a scripted feed with a fake clock replays a 3-minute silence in
no time.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pplx_export.errors import PplxError
from pplx_export.site.ask import AskState
from pplx_export.site.pacing import Clock

JSON = dict[str, Any]
Kind = Literal["event", "idle", "end", "error"]
Item = tuple[Kind, Any]


class Feed(Protocol):
    def next(self, timeout: float) -> Item:
        """The next item: ("event", dict), ("end", None), ("error", PplxError), or
        ("idle", None) when `timeout` seconds passed without one."""
        ...


class Watcher(Protocol):
    """What the live view implements (see commands/ask/view.py)."""

    def update(self, state: AskState, elapsed: float) -> None: ...

    def heartbeat(self, state: AskState, elapsed: float, silent: float) -> None: ...


class ThreadFeed:
    """Reads `events` on a daemon thread; the thread ends with the stream (or the process)."""

    def __init__(self, events: Iterator[JSON]) -> None:
        self._queue: queue.Queue[Item] = queue.Queue()
        self._thread = threading.Thread(
            target=self._pump, args=(events,), name="pplx-ask-stream", daemon=True
        )
        self._thread.start()

    def _pump(self, events: Iterator[JSON]) -> None:
        try:
            for event in events:
                self._queue.put(("event", event))
        except PplxError as exc:
            self._queue.put(("error", exc))
        except Exception as exc:  # a reader thread must report, never die silently
            self._queue.put(("error", PplxError(f"{type(exc).__name__}: {exc}")))
        else:
            self._queue.put(("end", None))

    def next(self, timeout: float) -> Item:
        try:
            return self._queue.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return ("idle", None)
        except RuntimeError as exc:
            # A Ctrl-C that lands while Condition.wait re-takes its lock leaves the lock
            # free, and the queue's `with` then fails to release it: CPython raises this
            # RuntimeError with the KeyboardInterrupt as its context. It is the Ctrl-C.
            if isinstance(exc.__context__, KeyboardInterrupt):
                raise exc.__context__ from None
            raise


@dataclass
class WatchResult:
    state: AskState
    stream_error: str = ""  # "" when the stream ended with its final event
    timed_out: bool = False
    elapsed: float = 0.0
    error: PplxError | None = None  # what broke the stream, when something raised


def watch(
    feed: Feed,
    view: Watcher,
    clock: Clock,
    *,
    state: AskState | None = None,
    heartbeat: float = 1.0,
    timeout: float = 600.0,
) -> WatchResult:
    """Fold the stream into `state` until its final event, its end, an error, or a silence
    of `timeout` seconds; the view sees every event and every heartbeat. The caller may own
    `state`, so what the stream said survives a Ctrl-C."""
    state = state if state is not None else AskState()
    started = clock.monotonic()
    last_news = started
    while True:
        now = clock.monotonic()
        wait = min(heartbeat, max(0.0, last_news + timeout - now))
        kind, value = feed.next(wait)
        now = clock.monotonic()
        elapsed = now - started
        if kind == "event":
            state.update(value)
            last_news = now
            view.update(state, elapsed)
            if state.final:
                return WatchResult(state, elapsed=elapsed)
        elif kind == "idle":
            silent = now - last_news
            if silent >= timeout:
                reason = f"no event for {timeout:g} s (--timeout)"
                return WatchResult(state, reason, timed_out=True, elapsed=elapsed)
            view.heartbeat(state, elapsed, silent)
        elif kind == "end":
            return WatchResult(state, "the stream ended before its final event", elapsed=elapsed)
        else:
            # An ApiError's reason without its "POST /rest/sse/perplexity_ask: " prefix.
            reason = getattr(value, "reason", "") or str(value)
            return WatchResult(state, f"the stream broke ({reason})", elapsed=elapsed, error=value)
