"""Progress for long runs: a rich bar on a terminal, plain log lines otherwise, none with -q."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

log = logging.getLogger("pplx_export.progress")
PLAIN_EVERY = 100
MANUAL_REFRESH = 0.1  # seconds between redraws without the refresh thread


class Reporter(Protocol):
    def set_total(self, total: int) -> None: ...
    def advance(self, note: str = "") -> None: ...


class _Silent:
    def set_total(self, total: int) -> None:
        pass

    def advance(self, note: str = "") -> None:
        pass


class _Plain:
    def __init__(self, label: str) -> None:
        self.label = label
        self.total = 0
        self.done = 0

    def set_total(self, total: int) -> None:
        self.total = total
        log.info("%s: %d threads", self.label, total)

    def advance(self, note: str = "") -> None:
        self.done += 1
        if self.done % PLAIN_EVERY == 0 or self.done == self.total:
            log.info("%s: %d/%d", self.label, self.done, self.total)


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
    label: str, *, quiet: bool, tty: bool | None = None, refresh_thread: bool = True
) -> Iterator[Reporter]:
    """`refresh_thread=False` redraws the bar from `advance` instead of from rich's refresh
    thread: for runs that fork worker processes (a thread holding the terminal's lock at the
    fork would leave that lock held forever in the child) and advance often anyway."""
    if quiet:
        yield _Silent()
        return
    if not (sys.stderr.isatty() if tty is None else tty):
        yield _Plain(label)
        return
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
        auto_refresh=refresh_thread,
    ) as bar:
        yield _Rich(bar, label, manual=not refresh_thread)
