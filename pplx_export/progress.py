"""Progress for long runs: a rich bar on a terminal, plain log lines otherwise, none with -q
or `--no-progress`.

On a terminal the bar's console also carries the log lines while it is up
(`logs.live_console`): they print above an intact bar. Elsewhere (a pipe, cron, a log
file) a plain line comes every `PLAIN_EVERY` items and at least every `PLAIN_SECONDS` while
work advances, with the rate and, when the total is known, an ETA. A run whose total is
not known up front (the library listing) counts what it has seen; `expected` may give an
estimate (the size of the last index) for the ETA.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

from pplx_export.logs import live_console

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

log = logging.getLogger("pplx_export.progress")
PLAIN_EVERY = 100
PLAIN_SECONDS = 30.0
MANUAL_REFRESH = 0.1  # seconds between redraws without the refresh thread


class Reporter(Protocol):
    def set_total(self, total: int) -> None: ...
    def advance(self, note: str = "") -> None: ...


class _Silent:
    def set_total(self, total: int) -> None:
        pass

    def advance(self, note: str = "") -> None:
        pass


def _clock_text(seconds: float) -> str:
    seconds = max(int(seconds), 0)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02}:{seconds % 60:02}"


class PlainReporter:
    """Periodic log lines: `batch: 120/288 (41%), 2.1/s, ETA 0:01:20`."""

    def __init__(
        self,
        label: str,
        *,
        unit: str = "threads",
        expected: int | None = None,
        every: int | None = None,
        seconds: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.unit = unit
        self.total: int | None = None
        self.expected = expected
        self.done = 0
        self.every = every or PLAIN_EVERY
        self.seconds = PLAIN_SECONDS if seconds is None else seconds
        self.clock = clock
        self.started = clock()
        self.last_line = self.started
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._beat: threading.Thread | None = None

    def start_heartbeat(self) -> None:
        """A line at least every `seconds` even while nothing advances (a slow listing, a
        long retry wait): a cron log must show the run is alive, with its ETA."""
        self._beat = threading.Thread(target=self._heartbeat, name="progress-beat", daemon=True)
        self._beat.start()

    def stop_heartbeat(self) -> None:
        self._stopped.set()
        if self._beat is not None:
            self._beat.join()

    def _heartbeat(self) -> None:
        while not self._stopped.wait(self.seconds / 4):
            with self._lock:
                now = self.clock()
                if now - self.last_line >= self.seconds:
                    self.last_line = now
                    log.info("%s", self.line(now))

    def set_total(self, total: int) -> None:
        with self._lock:
            self.total = total
            self.started = self.last_line = self.clock()
        log.info("%s: %d %s", self.label, total, self.unit)

    def advance(self, note: str = "") -> None:
        with self._lock:
            self.done += 1
            now = self.clock()
            if not (
                self.done % self.every == 0
                or self.done == self.total
                or now - self.last_line >= self.seconds
            ):
                return
            self.last_line = now
            text = self.line(now)
        log.info("%s", text)

    def line(self, now: float) -> str:
        elapsed = max(now - self.started, 1e-9)
        rate = self.done / elapsed
        target = self.total if self.total is not None else self.expected
        if self.total is not None:
            head = f"{self.label}: {self.done}/{self.total}"
            if self.total:
                head += f" ({100 * self.done // self.total}%)"
        else:
            head = f"{self.label}: {self.done} {self.unit}"
        parts = [head, f"{rate:.1f}/s"]
        if target and self.done < target and rate > 0:
            eta = _clock_text((target - self.done) / rate)
            parts.append(f"ETA {eta}" if self.total is not None else f"ETA ~{eta}")
        return ", ".join(parts)


class _Rich:
    def __init__(self, progress: Progress, label: str, *, manual: bool = False) -> None:
        self.progress = progress
        self.task = progress.add_task(label, total=None)
        self.manual = manual
        self.shown = 0.0

    def set_total(self, total: int) -> None:
        self.progress.update(self.task, total=total)

    def advance(self, note: str = "") -> None:
        self.progress.advance(self.task)
        if self.manual and time.monotonic() - self.shown >= MANUAL_REFRESH:
            self.shown = time.monotonic()
            self.progress.refresh()


@contextmanager
def progress_reporter(
    label: str,
    *,
    quiet: bool,
    enabled: bool = True,
    tty: bool | None = None,
    refresh_thread: bool = True,
    unit: str = "threads",
    expected: int | None = None,
    console: Console | None = None,
) -> Iterator[Reporter]:
    """A reporter for one long run. `enabled=False` is `--no-progress`.

    `refresh_thread=False` redraws the bar from `advance` instead of from rich's refresh
    thread: for runs that fork worker processes (a thread holding the terminal's lock at the
    fork would leave that lock held forever in the child) and advance often anyway.
    """
    if quiet or not enabled:
        yield _Silent()
        return
    if console is None and not (sys.stderr.isatty() if tty is None else tty):
        plain = PlainReporter(label, unit=unit, expected=expected)
        if refresh_thread:  # no thread where the run forks workers (re-render)
            plain.start_heartbeat()
        try:
            yield plain
        finally:
            plain.stop_heartbeat()
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn()]
    if unit != "threads":
        columns.append(TextColumn(unit))
    before = set(threading.enumerate())
    try:
        with (
            Progress(
                *columns,
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=console or Console(stderr=True),
                transient=True,
                auto_refresh=refresh_thread,
            ) as bar,
            live_console(bar.console),
        ):
            yield _Rich(bar, label, manual=not refresh_thread)
    finally:
        _join_new_threads(before)


def _join_new_threads(before: set[threading.Thread]) -> None:
    """Wait for the refresh thread the bar started. rich's `Live.stop()` only signals it: it
    may still be redrawing, holding the console's lock, when the next phase forks workers
    (re-render) or starts its own bar."""
    for thread in set(threading.enumerate()) - before:
        if type(thread).__name__ == "_RefreshThread":
            thread.join(timeout=2.0)
