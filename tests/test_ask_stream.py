"""Watching the ask stream: heartbeats through silences, the silence timeout, endings, Ctrl-C;
the stream-reading helpers of site/ask.py; the live view (rich at a fixed width, plain
lines when not a terminal)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from pplx_export.commands.ask.run import AskRequest, check_models, plan_ask, run_ask
from pplx_export.commands.ask.stream import Item, ThreadFeed, watch
from pplx_export.commands.ask.view import PlainView, RichView, SilentView, duration, make_view
from pplx_export.config import Account, Config
from pplx_export.context import RunOptions
from pplx_export.errors import Interrupted, TransportError, UsageError
from pplx_export.site.ask import (
    AskState,
    answer_so_far,
    follow_up_from,
    thread_mode,
    turn_status,
)

IDS = {"backend_uuid": "b-1", "uuid": "e-1", "context_uuid": "c-1", "thread_url_slug": "t-1"}


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class ScriptedFeed:
    """Items at given (virtual) times; waiting past the next one's time returns it."""

    def __init__(self, clock: FakeClock, script: list[tuple[float, Item]]) -> None:
        self.clock = clock
        self.script = list(script)

    def next(self, timeout: float) -> Item:
        if self.script and self.script[0][0] <= self.clock.now + timeout:
            at, item = self.script.pop(0)
            self.clock.now = max(self.clock.now, at)
            return item
        self.clock.now += timeout
        return ("idle", None)


class Recorder:
    def __init__(self) -> None:
        self.updates: list[tuple[str, str]] = []
        self.beats: list[tuple[float, float]] = []
        self.notes: list[str] = []

    def update(self, state: AskState, elapsed: float) -> None:
        self.updates.append((state.status, state.answer))

    def polling(self, state: AskState, elapsed: float, note: str) -> None:
        self.notes.append(note)

    def heartbeat(self, state: AskState, elapsed: float, silent: float) -> None:
        self.beats.append((round(elapsed, 3), round(silent, 3)))


def event(status: str = "PENDING", text: str = "", final: bool = False) -> Item:
    return ("event", {**IDS, "status": status, "text": text, "final_sse_message": final})


def test_a_three_second_gap_gives_heartbeats_every_second() -> None:
    clock = FakeClock()
    feed = ScriptedFeed(
        clock,
        [
            (0.0, event()),
            (3.0, event(text="Tides are")),  # after 3 s of silence
            (3.2, event("COMPLETED", "Tides are caused by the moon.", final=True)),
        ],
    )
    view = Recorder()
    result = watch(feed, view, clock, heartbeat=1.0, timeout=600)
    assert view.beats == [(1.0, 1.0), (2.0, 2.0)]
    assert result.stream_error == "" and result.state.completed
    assert result.state.answer == "Tides are caused by the moon."
    assert [u[0] for u in view.updates] == ["PENDING", "PENDING", "COMPLETED"]


def test_minutes_of_silence_then_the_timeout() -> None:
    clock = FakeClock()
    feed = ScriptedFeed(clock, [(0.0, event()), (900.0, event("COMPLETED", "late", True))])
    view = Recorder()
    result = watch(feed, view, clock, heartbeat=1.0, timeout=300)
    assert result.timed_out and result.stream_error == "no event for 300 s (--timeout)"
    assert len(view.beats) == 299 and view.beats[-1] == (299.0, 299.0)
    assert clock.now == 300.0
    assert result.state.thread_uuid == "t-1"  # known from the first event


def test_end_and_error_before_the_final_event() -> None:
    clock = FakeClock()
    ended = watch(ScriptedFeed(clock, [(0, event()), (1, ("end", None))]), Recorder(), clock)
    assert ended.stream_error == "the stream ended before its final event"
    broken = TransportError("stream interrupted: ReadError", endpoint="POST /x")
    feed = ScriptedFeed(clock, [(0, event()), (1, ("error", broken))])
    assert watch(feed, Recorder(), clock).stream_error == (
        "the stream broke (stream interrupted: ReadError)"
    )


def test_thread_feed_reads_on_its_own_thread() -> None:
    def events() -> Iterator[dict[str, Any]]:
        yield {**IDS, "status": "PENDING"}
        raise TransportError("stream interrupted: ReadError")

    feed = ThreadFeed(events())
    assert feed.next(5)[0] == "event"
    kind, value = feed.next(5)
    assert kind == "error" and isinstance(value, TransportError)
    assert ThreadFeed(iter([])).next(5) == ("end", None)


# -- reading events and fetched threads --------------------------------------------------------


def test_answer_so_far_reads_text_steps_and_markdown_blocks() -> None:
    assert answer_so_far({"text": "Plain answer"}) == "Plain answer"
    steps = [
        {"step_type": "INITIAL_QUERY", "content": {"query": "q"}},
        {"step_type": "FINAL", "content": {"answer": json.dumps({"answer": "From steps"})}},
    ]
    assert answer_so_far({"text": json.dumps(steps)}) == "From steps"
    block = {"intended_usage": "ask_text_0_markdown", "markdown_block": {"chunks": ["A", "B"]}}
    assert answer_so_far({"blocks": [block], "text": ""}) == "AB"
    assert answer_so_far({"status": "PENDING"}) == ""


def test_follow_up_reads_the_newest_turn_and_token() -> None:
    plain = {
        "entries": [
            {"backend_uuid": "b1", "read_write_token": "tok", "search_mode": "RESEARCH"},
            {"backend_uuid": "b2", "status": "COMPLETED", "search_mode": "SEARCH"},
        ]
    }
    follow = follow_up_from(plain)
    assert follow is not None
    assert (follow.last_backend_uuid, follow.read_write_token) == ("b2", "tok")
    assert "tok" not in repr(follow)
    assert thread_mode(plain) == "search"
    assert turn_status(plain, "b2") == "COMPLETED" and turn_status(plain, "zz") == ""
    assert follow_up_from({"entries": []}) is None


def test_models_per_mode() -> None:
    assert check_models("search", [], {}) == (None, ())
    assert check_models("search", ["experimental"], {}) == ("experimental", ())
    assert check_models("council", [], {})[1] == (
        "gpt56_sol_thinking",
        "claude50opusthinking",
        "gemini31pro_high",
    )
    configured = {"models": {"council": ["x", "y"], "defaults": {"search": "sonar"}}}
    assert check_models("council", [], configured) == (None, ("x", "y"))
    assert check_models("search", [], configured) == ("sonar", ())
    for mode, ids in (("council", ["a"]), ("study", ["a"]), ("search", ["a", "b"])):
        with pytest.raises(UsageError):
            check_models(mode, ids, {})
    with pytest.raises(UsageError):
        plan_ask(AskRequest(prompt="\n "), {})


# -- the views ---------------------------------------------------------------------------------


def rich_view(height: int = 12) -> tuple[RichView, Console]:
    console = Console(
        file=io.StringIO(), width=80, height=height, force_terminal=True, color_system=None
    )
    return RichView("https://www.perplexity.ai", "deep-research", console), console


def test_rich_view_at_80_columns() -> None:
    view, console = rich_view()
    state = AskState()
    state.update({**IDS, "status": "PENDING", "text": ""})
    view.heartbeat(state, 151.0, 100.0)
    console.print(view)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "deep-research · PENDING · 2m31s elapsed · quiet for 1m40s" in text
    assert "https://www.perplexity.ai/search/t-1" in text
    assert "waiting for the answer" in text
    assert all(len(line) <= 80 for line in text.splitlines())


def test_rich_view_renders_markdown_and_keeps_the_newest_lines() -> None:
    view, console = rich_view(height=10)
    state = AskState()
    lines = "\n\n".join(f"Paragraph **{n}**." for n in range(1, 30))
    state.update({**IDS, "status": "PENDING", "text": "# Title\n\n" + lines})
    view.update(state, 3.0)
    console.print(view)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "Paragraph 29." in text and "**" not in text  # rendered, newest part in view
    assert "Paragraph 1." not in text
    assert "quiet for" not in text


def test_plain_view_lines(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="pplx_export.ask")
    view = PlainView("https://www.perplexity.ai", "council", every=30)
    state = AskState()
    with view:
        state.update({**IDS, "status": "PENDING"})
        view.update(state, 0.5)
        for second in range(1, 95):
            view.heartbeat(state, second + 0.5, float(second))
        state.update({**IDS, "status": "COMPLETED", "text": "done", "final_sse_message": True})
        view.update(state, 95.0)
    assert caplog.messages == [
        "asking (council)",
        "thread https://www.perplexity.ai/search/t-1",
        "status PENDING after 0s",
        "still working: 30s elapsed, quiet for 30s",
        "still working: 1m00s elapsed, quiet for 1m00s",
        "still working: 1m30s elapsed, quiet for 1m30s",
        "status COMPLETED after 1m35s",
    ]


def test_make_view_degrades() -> None:
    assert isinstance(make_view("u", "search", quiet=True, tty=True), SilentView)
    assert isinstance(make_view("u", "search", quiet=False, tty=False), PlainView)
    assert isinstance(make_view("u", "search", quiet=False, tty=True), RichView)
    assert [duration(s) for s in (5, 65, 3725)] == ["5s", "1m05s", "1h02m"]


# -- live against the emulator: a real silence, Ctrl-C -----------------------------------------


def options(tmp_path: Path, base_url: str) -> RunOptions:
    cookies = tmp_path / "cookies.json"
    from pplx_export.emulator import DEFAULT_TOKEN, SESSION_COOKIE

    cookies.write_text(json.dumps({SESSION_COOKIE: DEFAULT_TOKEN}), "utf-8")
    config = Config(path=tmp_path / "config.toml")
    config.network.min_interval = 0
    config.network.backoff_cap = 0
    return RunOptions(
        config=config,
        account=Account(name="alice", display_name="Alice Example", email="alice@example.com"),
        out=tmp_path / "archive",
        lang="en",
        base_url=base_url,
        cookies_file=cookies,
    )


class RecordingView(Recorder):
    def __enter__(self) -> RecordingView:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def test_a_real_silence_shows_heartbeats(tmp_path: Path) -> None:
    from pplx_export.emulator import run_emulator

    with run_emulator(faults="ask_silence=1s") as emu:
        view = RecordingView()
        request = AskRequest(prompt="Quiet please", mode="deep-research", export=False)
        result = run_ask(options(tmp_path, emu.base_url), request, view=view, heartbeat=0.2)
    assert result.ok and result.status == "COMPLETED"
    assert len(view.beats) >= 2  # the second of silence was seen passing
    assert max(silent for _, silent in view.beats) >= 0.4


def test_ctrl_c_says_where_the_thread_is(tmp_path: Path) -> None:
    from pplx_export.emulator import run_emulator

    class Impatient(RecordingView):
        def update(self, state: AskState, elapsed: float) -> None:
            raise KeyboardInterrupt

    with run_emulator(faults="ask_silence=5s") as emu:
        request = AskRequest(prompt="Never mind", mode="council")
        with pytest.raises(Interrupted) as caught:
            run_ask(options(tmp_path, emu.base_url), request, view=Impatient())
        uuid = emu.library.listing()[0].uuid
    assert caught.value.exit_code == 130
    assert f"{emu.base_url}/search/{uuid}" in str(caught.value)
    assert "pplx-export export" in str(caught.value)
    assert not (tmp_path / "archive").exists()


def test_a_follow_up_keeps_the_thread_uuid_when_events_do_not_name_it() -> None:
    state = AskState(thread_uuid="thread-1")
    state.update({"backend_uuid": "turn-2", "status": "PENDING"})
    assert (state.thread_uuid, state.backend_uuid) == ("thread-1", "turn-2")
    fresh = AskState()
    fresh.update({"backend_uuid": "new-thread", "status": "PENDING"})
    assert fresh.thread_uuid == "new-thread"  # a new thread's first turn id is the thread's


def test_a_ctrl_c_inside_the_queue_wait_is_a_ctrl_c() -> None:
    """CPython can turn a Ctrl-C inside `queue.get(timeout=)` into "RuntimeError: release
    unlocked lock" (the KeyboardInterrupt its context): the feed raises the Ctrl-C, so the
    watch stops with exit 130 instead of an internal error."""
    feed = ThreadFeed(iter([]))

    def get(timeout: float) -> Item:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise RuntimeError("release unlocked lock") from None

    def broken(timeout: float) -> Item:
        raise RuntimeError("something else")

    feed._queue.get = get  # type: ignore[method-assign, assignment]
    with pytest.raises(KeyboardInterrupt):
        feed.next(1.0)
    feed._queue.get = broken  # type: ignore[method-assign, assignment]
    with pytest.raises(RuntimeError, match="something else"):
        feed.next(1.0)
