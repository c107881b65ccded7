"""Progress for long runs: a rich bar on a terminal, plain log lines otherwise, none with -q."""

from __future__ import annotations

import logging
import sys
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
    def __init__(self, progress: Progress, label: str) -> None:
        self.progress = progress
        self.task = progress.add_task(label, total=None)

    def set_total(self, total: int) -> None:
        self.progress.update(self.task, total=total)

    def advance(self, note: str = "") -> None:
        self.progress.advance(self.task)


@contextmanager
def progress_reporter(label: str, *, quiet: bool, tty: bool | None = None) -> Iterator[Reporter]:
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
    ) as bar:
        yield _Rich(bar, label)
