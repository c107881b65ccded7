"""What `pplx-ask ask` shows while it waits: a live rich view on a terminal, plain lines
otherwise, nothing with -q (product.md §4: progress on stderr, stdout is for the answer).

The rich view redraws from the values the watcher hands it (elapsed, silence, answer), so a
fixed-width `Console` renders it the same way every time (tests/test_ask_view.py).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from types import TracebackType
from typing import Protocol

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.rule import Rule
from rich.segment import Segment
from rich.spinner import Spinner
from rich.text import Text

from pplx_export.site.ask import AskState, thread_url

log = logging.getLogger("pplx_export.ask")

PLAIN_HEARTBEAT_S = 30.0  # a plain "still working" line at most this often
HEADER_LINES = 4  # status, URL, rule, one spare: the answer gets the rest of the screen


def duration(seconds: float) -> str:
    """`42s`, `3m05s`, `1h02m`: short enough for a status line."""
    total = int(seconds)
    if total < 60:
        return f"{total}s"
    if total < 3600:
        return f"{total // 60}m{total % 60:02d}s"
    return f"{total // 3600}h{total % 3600 // 60:02d}m"


class AskView(Protocol):
    def __enter__(self) -> AskView: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    def update(self, state: AskState, elapsed: float) -> None: ...

    def heartbeat(self, state: AskState, elapsed: float, silent: float) -> None: ...

    def polling(self, state: AskState, elapsed: float, note: str) -> None:
        """The stream is gone; the thread is being polled (`note` says why and how far)."""
        ...


def sources_note(state: AskState) -> str:
    return f"{state.sources} source{'s' if state.sources != 1 else ''}" if state.sources else ""


class SilentView:
    """-q: nothing at all."""

    def __enter__(self) -> SilentView:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def update(self, state: AskState, elapsed: float) -> None:
        pass

    def heartbeat(self, state: AskState, elapsed: float, silent: float) -> None:
        pass

    def polling(self, state: AskState, elapsed: float, note: str) -> None:
        pass


class PlainView:
    """Not a terminal: one log line when the thread exists, one per status change, and a
    "still working" line every `every` seconds of silence."""

    def __init__(self, base_url: str, mode: str, *, every: float = PLAIN_HEARTBEAT_S) -> None:
        self.base_url = base_url
        self.mode = mode
        self.every = every
        self._thread = ""
        self._status = ""
        self._beats = 0
        self._note = ""

    def __enter__(self) -> PlainView:
        log.info("asking (%s)", self.mode)
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def update(self, state: AskState, elapsed: float) -> None:
        self._beats = 0
        if state.thread_uuid and state.thread_uuid != self._thread:
            self._thread = state.thread_uuid
            log.info("thread %s", thread_url(self.base_url, state.thread_uuid))
        if state.status and state.status != self._status:
            self._status = state.status
            log.info("status %s after %s", state.status, duration(elapsed))

    def polling(self, state: AskState, elapsed: float, note: str) -> None:
        if note != self._note:
            level = logging.INFO if self._note else logging.WARNING  # the first says why
            self._note = note
            log.log(level, "%s (%s elapsed)", note, duration(elapsed))

    def heartbeat(self, state: AskState, elapsed: float, silent: float) -> None:
        beats = int(silent // self.every)
        if beats > self._beats:
            self._beats = beats
            chars = f", {len(state.answer)} characters so far" if state.answer else ""
            if state.sources:
                chars += f", {sources_note(state)}"
            log.info(
                "still working: %s elapsed, quiet for %s%s",
                duration(elapsed),
                duration(silent),
                chars,
            )


class _Tail:
    """The last `lines` lines of a renderable: a growing answer keeps its newest part in view."""

    def __init__(self, inner: RenderableType, lines: int) -> None:
        self.inner = inner
        self.lines = max(1, lines)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        rendered = console.render_lines(self.inner, options, pad=False)
        for line in rendered[-self.lines :]:
            yield from line
            yield Segment.line()


class RichView:
    """A terminal: status line with a spinner (it keeps turning through long silences),
    elapsed time and quiet time, the thread URL, and the answer as rendered Markdown."""

    def __init__(self, base_url: str, mode: str, console: Console | None = None) -> None:
        self.base_url = base_url
        self.mode = mode
        self.console = console or Console(stderr=True)
        self.state = AskState()
        self.elapsed = 0.0
        self.silent = 0.0
        self.note = ""  # set while the thread is polled after its stream was lost
        self._spinner = Spinner("dots")
        self._live: Live | None = None

    def __enter__(self) -> RichView:
        self._live = Live(
            self,
            console=self.console,
            transient=True,  # the answer goes to stdout afterwards; no second copy on screen
            refresh_per_second=8,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._live.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._live is not None:
            self._live.__exit__(exc_type, exc, tb)
            self._live = None
            # The live view was transient: keep one line of it (the URL above all).
            self.console.print(self.summary_line(), highlight=False)

    def summary_line(self) -> Text:
        parts = [self.mode, self.state.status or "no status", duration(self.elapsed)]
        if self.state.thread_uuid:
            parts.append(thread_url(self.base_url, self.state.thread_uuid))
        return Text(" · ".join(parts), style="dim")

    def update(self, state: AskState, elapsed: float) -> None:
        self.state = state
        self.elapsed = elapsed
        self.silent = 0.0

    def heartbeat(self, state: AskState, elapsed: float, silent: float) -> None:
        self.state = state
        self.elapsed = elapsed
        self.silent = silent

    def polling(self, state: AskState, elapsed: float, note: str) -> None:
        self.state = state
        self.elapsed = elapsed
        self.silent = 0.0
        self.note = note

    def status_line(self) -> Text:
        parts = [self.mode, self.state.status or "starting", f"{duration(self.elapsed)} elapsed"]
        if self.state.sources:
            parts.append(sources_note(self.state))
        if self.note:
            parts.append(self.note)
        elif self.silent >= 1:
            parts.append(f"quiet for {duration(self.silent)}")
        return Text(" · ".join(parts))

    def lines(self) -> Iterable[RenderableType]:
        self._spinner.text = self.status_line()
        yield self._spinner
        if self.state.thread_uuid:
            yield Text(thread_url(self.base_url, self.state.thread_uuid), style="cyan")
        else:
            yield Text("waiting for the thread to be created…", style="dim")
        yield Rule(style="dim")
        if self.state.answer:
            room = self.console.size.height - HEADER_LINES
            yield _Tail(Markdown(self.state.answer), room)
        else:
            yield Text("waiting for the answer…", style="dim")

    def __rich__(self) -> RenderableType:
        return Group(*self.lines())


def make_view(base_url: str, mode: str, *, quiet: bool, tty: bool | None = None) -> AskView:
    """Rich on a terminal (stderr), plain log lines when stderr is not one, silence with -q."""
    if quiet:
        return SilentView()
    if not (sys.stderr.isatty() if tty is None else tty):
        return PlainView(base_url, mode)
    return RichView(base_url, mode)
