"""Time, pacing and backoff: the process-wide network runtime.

Every wait in the network layer goes through a `Clock`, so tests pass a fake clock and never
really sleep. `NetRuntime` bundles what must be shared by every client in one process: the
clock, the random source for jitter, the API pacer, the request counters and the consecutive
failure counter that drives backoff (protocol §7.1: one counter shared by the batch loop and
the transport).

Why an object and not a module global: a global pacer would leak between tests and hide who
owns it. Instead the CLI invocation creates one `NetRuntime` (see
`perplexity.session.runtime_for`, which keeps it on the invocation's `RunOptions`) and hands the
same object to every client it opens, for every account.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pplx_export.site.record import Recorder

log = logging.getLogger("pplx_export.site")

HEARTBEAT_S = 10.0
PACER_JITTER = 0.25  # +-25 % around min_interval
BACKOFF_JITTER = (0.8, 1.2)
BACKOFF_BASE_S = 20.0  # protocol §7.1 delay_max
BACKOFF_EXP_MAX = 8


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def time(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The real clock."""

    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


def sleep_with_heartbeat(clock: Clock, seconds: float, what: str) -> None:
    """Sleep `seconds`, logging a heartbeat line every 10 s so a long wait never looks hung."""
    remaining = seconds
    while remaining > 0:
        step = min(remaining, HEARTBEAT_S)
        clock.sleep(step)
        remaining -= step
        if remaining > 1e-9:
            log.info("still waiting %.0f s %s", remaining, what)


class Pacer:
    """Keeps API requests at least `min_interval` (+-25 % jitter) apart, across all clients.

    `wait(scale)` stretches the gap for calls the protocol wants slower (4 s before a
    schematized fetch = 4/3 of the 3 s default). `min_interval = 0` disables pacing (emulator).
    """

    def __init__(self, min_interval: float, clock: Clock, rng: random.Random) -> None:
        self.min_interval = max(0.0, min_interval)
        self._clock = clock
        self._rng = rng
        self._last: float | None = None
        self._lock = threading.Lock()

    def wait(self, scale: float = 1.0) -> float:
        """Block until the next API request may start; return the seconds slept."""
        with self._lock:
            slept = 0.0
            if self.min_interval > 0 and self._last is not None:
                gap = (
                    self.min_interval
                    * scale
                    * self._rng.uniform(1 - PACER_JITTER, 1 + PACER_JITTER)
                )
                due = self._last + gap - self._clock.monotonic()
                if due > 0:
                    sleep_with_heartbeat(self._clock, due, "(request pacing)")
                    slept = due
            self._last = self._clock.monotonic()
            return slept


@dataclass
class RequestStats:
    """Requests issued (every attempt counts), in total and per endpoint label."""

    per_endpoint: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, endpoint: str) -> None:
        with self._lock:
            self.per_endpoint[endpoint] += 1

    @property
    def total(self) -> int:
        return sum(self.per_endpoint.values())

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(sorted(self.per_endpoint.items()))


class NetRuntime:
    """Process-wide network state shared by every client (see the module docstring)."""

    def __init__(
        self,
        *,
        min_interval: float,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.clock: Clock = clock or SystemClock()
        self.rng = rng or random.Random()
        self.pacer = Pacer(min_interval, self.clock, self.rng)
        self.stats = RequestStats()
        # `capture` and `--write-responses`: every request of the run is recorded here
        # (net.record.Recorder; None: nothing is recorded).
        self.recorder: Recorder | None = None
        self._failures = 0
        self._lock = threading.Lock()

    @property
    def consecutive_failures(self) -> int:
        return self._failures

    def record_failure(self) -> int:
        with self._lock:
            self._failures += 1
            return self._failures

    def record_success(self) -> None:
        with self._lock:
            self._failures = 0

    def backoff_delay(self, failures: int, cap: float, base: float = BACKOFF_BASE_S) -> float:
        """`base * 3^min(n-1, 8) * U(0.8, 1.2)`, capped: n = consecutive failures (>= 1)."""
        exp = min(max(failures - 1, 0), BACKOFF_EXP_MAX)
        delay: float = base * float(3**exp) * self.rng.uniform(*BACKOFF_JITTER)
        return max(0.0, min(cap, delay))


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a `Retry-After` header: delta seconds or an HTTP date."""
    if not value:
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    # Imported here: email.utils is a tenth of the start-up of an offline command, which
    # imports this module for the run context and never reads a Retry-After.
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now)


def parse_ratelimit_reset(value: str | None, now: float) -> float | None:
    """Seconds to wait from `RateLimit-Reset` (delta seconds; an epoch stamp is tolerated)."""
    if not value:
        return None
    try:
        number = float(value.strip().split(",")[0])
    except ValueError:
        return None
    # Some servers send an absolute epoch instead of the IETF draft's delta.
    if number > 1e9:
        number -= now
    return max(0.0, number)
