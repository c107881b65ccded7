"""Issue 31: the ask stream as the live site sends it (protocol §9.6), assembled as the
browser does, and a lost stream that never loses the thread.

tests/fixtures/ask_streams/*.sse are streams of the project's own making: the emulator's
answer to one search ask, recorded once with and once without `diff_blocks` in
`supported_block_use_cases` (diff blocks; chunk deltas). The expected answer after every event
is computed here independently of site/stream.py, from the patches or deltas themselves.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from pplx_export.commands.ask.run import prompt_from_editor
from pplx_export.commands.ask.view import RichView
from pplx_export.emulator import run_emulator
from pplx_export.parse.answer_forms import extract_answer
from pplx_export.parse.steps import decode_steps
from pplx_export.site import constants as C
from pplx_export.site.ask import AskState, build_ask_body, turn_answer
from pplx_export.site.sse import iter_events
from pplx_export.site.stream import StreamAssembler, place_chunks
from tests.test_ask_cli import ASK_ENDPOINT, THREAD_ENDPOINT, Rig, faulted

STREAMS = Path(__file__).parent / "fixtures" / "ask_streams"
FORMATS = ("diff_blocks", "chunk_deltas")

JSON = dict[str, Any]


def expected_answers(events: list[JSON]) -> list[tuple[str, int]]:
    """(answer, sources) after each event, read naively from the stream itself."""
    chunks: list[str] = []
    sources = 0
    out = []
    for event in events:
        if event.get("message_mode") == "FULL":
            steps = decode_steps(event.get("text"))
            web = [b for b in event["blocks"] if b["intended_usage"] == "web_results"]
            out.append(
                (extract_answer(event, steps), len(web[0]["web_result_block"]["web_results"]))
            )
            continue
        for block in event.get("blocks", []):
            usage = block["intended_usage"]
            if "diff_block" in block:
                for op in block["diff_block"]["patches"]:
                    if usage == "ask_text_0_markdown" and op["path"] == "":
                        chunks = list(op["value"]["chunks"])
                    elif usage == "ask_text_0_markdown":
                        chunks.insert(int(op["path"].rsplit("/", 1)[1]), op["value"])
                    elif usage == "web_results":
                        sources = (
                            len(op["value"]["web_results"]) if op["path"] == "" else sources + 1
                        )
            elif usage == "ask_text_0_markdown":
                start = block["markdown_block"]["chunk_starting_offset"]
                new = block["markdown_block"]["chunks"]
                chunks[start : start + len(new)] = new
            elif usage == "web_results":
                sources = len(block["web_result_block"]["web_results"])
        out.append(("".join(chunks), sources))
    return out


def recorded(name: str) -> list[JSON]:
    events = list(iter_events([(STREAMS / f"{name}.sse").read_bytes()]))
    assert events[-1] == {}  # the trailing end_of_stream
    return events[:-1]


@pytest.mark.parametrize("name", FORMATS)
def test_recorded_streams_show_the_answer_as_assembled_after_every_event(name: str) -> None:
    events = recorded(name)
    assert all("text" not in e for e in events[:-1])  # never a growing text
    state = AskState()
    shown = []
    for event in events:
        state.update(event)
        shown.append((state.answer, state.sources))
    expected = expected_answers(events)
    assert shown == expected
    growing = [answer for answer, _ in shown[1:-1]]
    assert all(a and b.startswith(a) and len(b) > len(a) for a, b in itertools.pairwise(growing))
    assert shown[-1][0] == turn_answer({"entries": [events[-1]]}, events[-1]["backend_uuid"])
    assert state.completed and shown[-1][1] == 2


def test_the_two_formats_assemble_the_same_answer() -> None:
    finals = [expected_answers(recorded(name))[-2] for name in FORMATS]
    assert finals[0] == finals[1]  # before the FULL event: patches and deltas agree


def ask_live(diff: bool) -> tuple[list[JSON], str]:
    """One ask against the emulator, with or without diff blocks; (events, thread answer)."""
    cases = [c for c in C.ASK_BLOCK_USE_CASES if diff or c != "diff_blocks"]
    with run_emulator() as emu, httpx.Client(base_url=emu.base_url, cookies=emu.cookies) as http:
        body = build_ask_body("How do bees find flowers?")
        body["params"]["supported_block_use_cases"] = cases
        raw = http.post("/rest/sse/perplexity_ask", json=body).content
        events = [e for e in iter_events([raw]) if e]
        thread = http.get(f"/rest/thread/{events[0]['backend_uuid']}").json()
    return events, turn_answer(thread, events[0]["backend_uuid"])


@pytest.mark.parametrize("diff", [True, False], ids=["diff_blocks", "chunk_deltas"])
def test_live_view_follows_the_emulator_in_both_formats(diff: bool) -> None:
    events, thread_answer = ask_live(diff)
    assert any("diff_block" in b for e in events for b in e.get("blocks", [])) is diff
    state = AskState()
    view = RichView("https://www.perplexity.ai", "search")
    expected = expected_answers(events)
    for event, (answer, sources) in zip(events, expected, strict=True):
        state.update(event)
        view.update(state, 1.0)
        assert (view.state.answer, view.state.sources) == (answer, sources)
    assert view.state.answer == thread_answer
    assert "2 sources" in view.status_line().plain


def test_assembler_details() -> None:
    assert place_chunks(["a", "b"], ["c"], 3) == ["a", "b", "", "c"]  # a lost delta: a gap
    assert place_chunks(["a", "b", "c"], ["B"], 1) == ["a", "B", "c"]
    assembler = StreamAssembler()
    block = {
        "field": "markdown_block",
        "patches": [{"op": "add", "path": "/chunks/5", "value": "x"}],
    }
    assembler.feed({"blocks": [{"intended_usage": "ask_text", "diff_block": block}]})
    assert assembler.patches_skipped == 1 and assembler.answer() == ""  # skipped, not fatal
    assembler.feed(
        {
            "message_mode": "FULL",
            "blocks": [{"intended_usage": "ask_text", "markdown_block": {"answer": "Done."}}],
        }
    )
    assert assembler.full and assembler.answer() == "Done."


def test_editor_text_loses_its_comment_lines() -> None:
    assert prompt_from_editor("Why is the sky blue?\n\n# Write your question above.\n") == (
        "Why is the sky blue?"
    )
    assert prompt_from_editor(None) == "" and prompt_from_editor("# only\n") == ""


# -- the CLI: a lost stream never loses the thread ---------------------------------------------


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    with run_emulator() as emu:
        r = Rig(emu, tmp_path)
        r.write_config()
        yield r


@pytest.mark.parametrize(
    ("faults", "extra"),
    [
        ("ask=cut_running,ask_settle=3", ()),  # cut after half its events, still running
        ("ask=end,ask_settle=2", ()),  # closed without a final event
        ("ask=hang,ask_settle=2", ("--timeout", "1")),  # stalls after its first event
    ],
    ids=["cut", "end", "stall"],
)
def test_a_lost_stream_is_polled_until_the_thread_completes(
    rig: Rig, faults: str, extra: tuple[str, ...]
) -> None:
    faulted(rig, faults)
    result = rig.run("ask", "Lost midway", "--json", *extra)
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["status"] == "COMPLETED" and doc["archived_to"]
    assert "Lost midway" in doc["answer"]
    assert [e["step"] for e in doc["step_errors"]] == ["stream"]
    assert "polling the thread" in result.stderr
    assert rig.calls(ASK_ENDPOINT) == 1  # never asked twice
    assert rig.calls(THREAD_ENDPOINT) >= int(faults[-1])
    [directory] = rig.thread_dirs()
    assert "Lost midway" in (directory / "conversation.md").read_text("utf-8")


def test_a_failed_thread_exits_non_zero_and_archives_nothing(rig: Rig) -> None:
    faulted(rig, "ask=error")
    result = rig.run("ask", "Doomed")
    assert result.exit_code == 1 and "FAILED" in result.stderr
    assert rig.thread_dirs() == []


# -- -c, --models, prompts, chat (piped; tests/test_ask_terminal.py runs them in a terminal) ---


def test_continue_follows_up_the_last_thread_asked(rig: Rig) -> None:
    result = rig.run("ask", "-c", "Anything?")
    assert result.exit_code == 2 and "no thread was asked" in result.stderr
    first = rig.ask_json("What do otters eat?")
    second = rig.ask_json("-c", "And sea otters?")
    assert second["follow_up"] and second["thread_uuid"] == first["thread_uuid"]
    assert len(rig.record(first["thread_uuid"]).entries) == 2
    both = rig.run("ask", "-c", "--follow-up", first["thread_uuid"], "x")
    assert both.exit_code == 2


def test_ask_reads_the_prompt_before_refusing_c_with_follow_up_chat_before_reading(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pplx_export.cli.ask as cli_ask

    read: list[str] = []

    def prompt_of(prompt: str | None) -> str:
        read.append("prompt")  # where `ask` with no PROMPT on a terminal opens $EDITOR
        return "x"

    def read_turn() -> str | None:
        read.append("turn")
        return None

    monkeypatch.setattr(cli_ask, "_prompt_of", prompt_of)
    monkeypatch.setattr(cli_ask, "_read_turn", read_turn)
    uuid = "0b7c6a5e-1d2f-4e3a-9b8c-7d6e5f4a3b2c"
    asked = rig.run("ask", "-c", "--follow-up", uuid)
    assert asked.exit_code == 2 and "give one" in asked.stderr
    assert read == ["prompt"]
    chatted = rig.run("chat", "-c", "--follow-up", uuid)
    assert chatted.exit_code == 2 and "give one" in chatted.stderr
    assert read == ["prompt"] and rig.calls(ASK_ENDPOINT) == 0


def test_unknown_model_ids_exit_2_with_the_valid_ones(rig: Rig) -> None:
    result = rig.run("ask", "Which?", "--models", "gpt-9000")
    assert result.exit_code == 2
    assert "unknown model id gpt-9000" in result.stderr and "gemini31pro_high" in result.stderr
    assert rig.calls(ASK_ENDPOINT) == 0
    ok = rig.ask_json("Which?", "--models", "experimental")
    assert ok["status"] == "COMPLETED"


def test_no_prompt_reads_piped_stdin(rig: Rig) -> None:
    result = rig.run("ask", stdin="Why do onions make me cry?\n")
    assert result.exit_code == 0, result.stderr
    assert "onions" in result.stdout


def test_chat_asks_every_line_in_one_thread_until_eof(rig: Rig) -> None:
    result = rig.run("chat", stdin="Why is the sea salty?\n\nAnd the Dead Sea?\n")
    assert result.exit_code == 0, result.stderr
    assert "the sea salty" in result.stdout and "the Dead Sea" in result.stdout
    [directory] = rig.thread_dirs()  # one thread, archived after each turn
    assert len(list((directory / "turns").glob("turn_*.md"))) == 2
    assert rig.calls(ASK_ENDPOINT) == 2
    again = rig.run("chat", "-c", stdin="One more?\n")
    assert again.exit_code == 0, again.stderr
    assert len(list((directory / "turns").glob("turn_*.md"))) == 3
