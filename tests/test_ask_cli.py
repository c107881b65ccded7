"""`pplx-ask` end to end: the real CLI against the emulator (issue 13's "Done when")."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from pplx_export.cli.ask import main
from pplx_export.emulator import RunningEmulator, run_emulator
from pplx_export.emulator.library import SpaceRecord, ThreadRecord
from tests.emulator_support import sample_uuid

ASK_ENDPOINT = "POST /rest/sse/perplexity_ask"
MOVE_ENDPOINT = "POST /rest/collections/upsert_thread_collection"
THREAD_ENDPOINT = "GET /rest/thread"


@dataclass
class Rig:
    emu: RunningEmulator
    tmp: Path

    @property
    def out(self) -> Path:
        return self.tmp / "archive"

    def write_config(self, *, bot_space: str = "") -> None:
        bot = f'\n[bot_space]\nuuid = "{bot_space}"\nslug = "bots"\n' if bot_space else ""
        (self.tmp / "config.toml").write_text(
            "[network]\nmin_interval = 0\nbackoff_cap = 0\n\n"
            '[accounts.alice]\ndisplay_name = "Alice Example"\nemail = "alice@example.com"\n' + bot,
            encoding="utf-8",
        )

    def run(self, *args: str, stdin: str | None = None, cookies: Any = None) -> Result:
        (self.tmp / "cookies.json").write_text(json.dumps(cookies or self.emu.cookies), "utf-8")
        common = [
            "--config",
            str(self.tmp / "config.toml"),
            "--cookies",
            str(self.tmp / "cookies.json"),
            "--out",
            str(self.out),
            "--base-url",
            self.emu.base_url,
        ]
        return CliRunner().invoke(main, [*args, *common], input=stdin, catch_exceptions=False)

    def ask_json(self, *args: str, code: int = 0) -> dict[str, Any]:
        result = self.run("ask", *args, "--json")
        assert result.exit_code == code, result.stderr
        doc: dict[str, Any] = json.loads(result.stdout)
        return doc

    def calls(self, endpoint: str) -> int:
        return int(self.emu.stats()["by_endpoint"].get(endpoint, 0))

    def record(self, uuid: str) -> ThreadRecord:
        record = self.emu.library.get(uuid)
        assert record is not None
        return record

    def space(self, title: str) -> SpaceRecord:
        return next(s for s in self.emu.library.spaces.values() if s.title == title)

    def thread_dirs(self) -> list[Path]:
        return sorted(p for p in self.out.glob("*/*/*") if (p / "thread.json").is_file())


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    with run_emulator() as emu:
        r = Rig(emu, tmp_path)
        r.write_config()
        yield r


def faulted(rig: Rig, faults: str) -> None:
    """Script the next asks (the spec is read per request)."""
    from pplx_export.emulator import parse_faults

    rig.emu.server.app.faults.spec = parse_faults(faults)


# -- every mode, follow-ups, council --------------------------------------------------------


def _unleveled(md: str) -> str:
    return re.sub(r"(?m)^#+ ", "# ", md)


@pytest.mark.parametrize(
    ("mode", "extra"),
    [
        ("search", ()),
        ("deep-research", ()),
        ("council", ("--models", "gpt56_sol_thinking,gemini31pro_high")),
        ("study", ()),
    ],
)
def test_every_mode_lands_in_its_mode_folder(rig: Rig, mode: str, extra: tuple[str, ...]) -> None:
    prompt = f"Explain tides, {mode} edition"
    result = rig.run("ask", prompt, "--mode", mode, *extra)
    assert result.exit_code == 0, result.stderr
    [directory] = rig.thread_dirs()
    assert directory.parent.name == mode
    assert directory.parent.parent.name == "Alice Example"
    conversation = (directory / "conversation.md").read_text("utf-8")
    assert prompt in conversation
    answer = result.stdout.strip()
    assert answer
    # The whole answer is archived, verbatim but for its headings' levels (the pages demote
    # them below their own turn and Answer headings).
    assert _unleveled(answer) in _unleveled(conversation)
    assert _unleveled(answer) in _unleveled(
        (directory / "turns" / "turn_0001.md").read_text("utf-8")
    )
    thread = json.loads((directory / "thread.json").read_text("utf-8"))
    assert thread["mode"] == mode
    assert (directory / "raw_entries.json").is_file()
    assert rig.calls(ASK_ENDPOINT) == 1
    # Plain progress lines on stderr (not a terminal): the thread URL and the statuses.
    assert "/search/" in result.stderr and "COMPLETED" in result.stderr


@pytest.mark.parametrize(
    "models",
    [
        "gpt56_sol_thinking,gemini31pro_high",
        "gpt56_sol_thinking,gemini31pro_high,claude50opusthinking",
    ],
)
def test_council_takes_two_or_three_models(rig: Rig, models: str) -> None:
    doc = rig.ask_json("Which format lasts?", "--mode", "council", "--models", models)
    assert doc["status"] == "COMPLETED" and doc["mode"] == "council"
    blocks = rig.record(doc["thread_uuid"]).blocks
    assert blocks is not None
    council = [b for b in blocks["entries"][0]["blocks"] if "workflow_block" in b]
    items = council[0]["workflow_block"]["steps"][0]["items"]
    assert [i["payload"]["workflow_payload"]["model"] for i in items] == models.split(",")
    directory = Path(doc["archived_to"])
    assert directory.parent.name == "council"
    turn = (directory / "turns" / "turn_0001.md").read_text("utf-8")
    assert doc["answer"] in turn
    for model in models.split(","):  # every model's own answer, in full
        assert f"{model} view on Which format lasts?: a careful, sourced answer." in turn


def test_council_defaults_to_the_configured_pool_else_the_pinned_one(rig: Rig) -> None:
    doc = rig.ask_json("Pinned pool?", "--mode", "council")
    items = rig.record(doc["thread_uuid"]).blocks["entries"][0]["blocks"]  # type: ignore[index]
    names = json.dumps(items)
    assert "gpt56_sol_thinking" in names and "gemini31pro_high" in names
    config = rig.tmp / "config.toml"
    config.write_text(
        config.read_text("utf-8") + '\n[models]\ncouncil = ["m-one", "m-two"]\n', "utf-8"
    )
    doc = rig.ask_json("Configured pool?", "--mode", "council")
    names = json.dumps(rig.record(doc["thread_uuid"]).blocks)
    assert "m-one" in names and "m-two" in names and "gpt56_sol_thinking" not in names


def test_a_model_catalog_older_than_seven_days_is_mentioned(rig: Rig) -> None:
    config = rig.tmp / "config.toml"
    config.write_text(
        config.read_text("utf-8") + '\n[models]\nlast_refreshed = "2020-01-01T00:00:00Z"\n',
        "utf-8",
    )
    result = rig.run("ask", "Stale catalog?")
    assert result.exit_code == 0, result.stderr
    assert "days old; `pplx-ask models --refresh` updates it" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("--mode", "council", "--models", "only-one"),
        ("--mode", "council", "--models", "a,b,c,d"),
        ("--mode", "search", "--models", "a,b"),
        ("--mode", "deep-research", "--models", "a"),
        ("--mode", "computer"),
        ("--mode", "nonsense"),
    ],
)
def test_bad_models_or_mode_are_usage_errors_before_any_request(
    rig: Rig, args: tuple[str, ...]
) -> None:
    result = rig.run("ask", "A question", *args)
    assert result.exit_code == 2
    assert rig.emu.stats()["total"] == 0
    assert "Traceback" not in result.stderr


def test_follow_up_adds_turn_two_to_an_archived_thread(rig: Rig) -> None:
    first = rig.ask_json("Why is the sea salty?")
    directory = Path(first["archived_to"])
    raw = (directory / "raw_entries.json").read_text("utf-8")
    assert "rw-" not in raw  # the token is redacted on disk, so it must come from a fetch
    second = rig.ask_json("And lakes?", "--follow-up", first["thread_url"])
    assert second["follow_up"] is True
    assert second["thread_uuid"] == first["thread_uuid"]
    assert second["context_uuid"] == first["context_uuid"]
    assert second["moved_to_space"] is None
    assert Path(second["archived_to"]) == directory
    entries = rig.record(first["thread_uuid"]).entries
    assert [e["query_source"] for e in entries] == ["home", "followup"]
    conversation = (directory / "conversation.md").read_text("utf-8")
    assert "Why is the sea salty?" in conversation and "And lakes?" in conversation
    assert (directory / "turns" / "turn_0002.md").is_file()
    assert "lakes" in second["answer"]


def test_follow_up_of_a_sample_thread_by_uuid_keeps_its_mode(rig: Rig) -> None:
    uuid = sample_uuid("bayes")  # a study thread, never archived here
    doc = rig.ask_json("One more example, please", "--follow-up", uuid.upper())
    assert doc["mode"] == "study"
    assert doc["thread_uuid"] == uuid
    assert rig.record(uuid).entries[-1]["display_model"] == "pplx_study"
    assert Path(doc["archived_to"]).parent.name == "study"


# -- completion steps: spaces, read receipts, the 404 after creation -------------------------


def test_bot_space_move_and_mark_read(rig: Rig) -> None:
    bot = rig.space("Kitchen Lab")
    rig.write_config(bot_space=bot.uuid)
    doc = rig.ask_json("Where do I go?", "--mark-read")
    assert doc["moved_to_space"] == "bots"
    assert rig.record(doc["thread_uuid"]).space_uuid == bot.uuid
    assert doc["marked_read"] is True
    assert rig.emu.server.app.viewed == [doc["context_uuid"]]
    assert rig.calls(MOVE_ENDPOINT) == 1


def test_space_option_creates_in_that_space_and_skips_the_bot_move(rig: Rig) -> None:
    rig.write_config(bot_space=rig.space("Kitchen Lab").uuid)
    ocean = rig.space("Ocean Notes")
    doc = rig.ask_json("Created in a space", "--space", ocean.slug)
    assert rig.record(doc["thread_uuid"]).space_uuid == ocean.uuid
    assert doc["moved_to_space"] is None
    assert rig.calls(MOVE_ENDPOINT) == 0
    assert rig.emu.server.app.viewed == []


def test_a_failed_move_is_a_step_error_not_a_failure(rig: Rig) -> None:
    rig.write_config(bot_space="no-such-space-uuid")
    doc = rig.ask_json("Move me")
    assert doc["moved_to_space"] is None
    assert [e["step"] for e in doc["step_errors"]] == ["move"]
    assert doc["archived_to"]


def test_a_brief_404_after_creation_is_retried(rig: Rig) -> None:
    faulted(rig, "ask_404=2")
    doc = rig.ask_json("Fresh thread")
    assert doc["archived_to"] and doc["step_errors"] == []
    assert rig.emu.stats()["by_thread"][doc["thread_uuid"]] == 3  # two 404s, then the fetch


def test_no_export_archives_nothing(rig: Rig) -> None:
    doc = rig.ask_json("Just ask", "--no-export")
    assert doc["archived_to"] is None
    assert rig.thread_dirs() == []
    assert rig.calls(THREAD_ENDPOINT) == 0


def test_prompt_from_stdin(rig: Rig) -> None:
    result = rig.run("ask", "-", stdin="How do tides work\nin lakes?\n")
    assert result.exit_code == 0, result.stderr
    [directory] = rig.thread_dirs()
    assert "in lakes?" in (directory / "conversation.md").read_text("utf-8")


# -- streams that do not complete ---------------------------------------------------------------


def test_a_failed_final_status_moves_and_archives_nothing(rig: Rig) -> None:
    rig.write_config(bot_space=rig.space("Kitchen Lab").uuid)
    faulted(rig, "ask=error")
    result = rig.run("ask", "Doomed", "--mark-read")
    assert result.exit_code == 1
    assert "FAILED" in result.stderr and "INTERNAL_SERVER_ERROR" in result.stderr
    assert rig.thread_dirs() == []
    assert rig.calls(MOVE_ENDPOINT) == 0 and rig.calls(THREAD_ENDPOINT) == 0
    assert rig.emu.server.app.viewed == []


@pytest.mark.parametrize("outcome", ["end", "cut_running"])
def test_a_stream_without_completed_archives_nothing(rig: Rig, outcome: str) -> None:
    faulted(rig, f"ask={outcome}")
    doc = rig.ask_json("Unfinished", "--poll-for", "30", code=1)
    assert doc["status"] == "PENDING" and doc["archived_to"] is None
    assert rig.thread_dirs() == []
    # Polled (bounded: 30 s at one poll per 10 s), never asked again.
    assert rig.calls(THREAD_ENDPOINT) == 4 and rig.calls(ASK_ENDPOINT) == 1
    result = rig.run("ask", "Unfinished again", "--poll-for", "0")
    assert result.exit_code == 1
    assert "still PENDING" in result.stderr
    assert "pplx-export export" in result.stderr and "/search/" in result.stderr


def test_a_dropped_stream_of_a_completed_thread_is_archived(rig: Rig) -> None:
    faulted(rig, "ask=cut")
    result = rig.run("ask", "Dropped but done", "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["status"] == "COMPLETED"
    assert [e["step"] for e in doc["step_errors"]] == ["stream"]
    assert "stream broke" in doc["step_errors"][0]["error"]
    assert "stream broke" in result.stderr
    assert doc["archived_to"] and "Dropped but done" in doc["answer"]
    assert rig.calls(ASK_ENDPOINT) == 1  # never asked twice


def test_silence_past_the_timeout_stops_watching(rig: Rig) -> None:
    faulted(rig, "ask=hang")
    result = rig.run("ask", "Silent", "--timeout", "1", "--poll-for", "0")
    assert result.exit_code == 1
    assert "no event for 1 s" in result.stderr and "PENDING" in result.stderr
    assert rig.thread_dirs() == []


# -- bad input ----------------------------------------------------------------------------------


def test_empty_prompt_makes_no_request(rig: Rig) -> None:
    for args, stdin in ((("ask", "   "), None), (("ask", "-"), "\n\n")):
        result = rig.run(*args, stdin=stdin)
        assert result.exit_code == 2
        assert "prompt is empty" in result.stderr
    assert rig.emu.stats()["total"] == 0


def test_follow_up_of_an_unreadable_thread(rig: Rig) -> None:
    uuid = sample_uuid("tides")
    rig.emu.mutate(forbid=uuid)
    result = rig.run("ask", "Let me in", "--follow-up", uuid)
    assert result.exit_code == 1
    assert f"cannot continue thread {uuid}" in result.stderr
    assert "VIEW_THREAD_NOT_ALLOWED" in result.stderr
    assert rig.calls(ASK_ENDPOINT) == 0
    bad = rig.run("ask", "x", "--follow-up", "not-a-thread")
    assert bad.exit_code == 2 and "not a thread URL or UUID" in bad.stderr


def test_unknown_space_slug(rig: Rig) -> None:
    result = rig.run("ask", "Somewhere", "--space", "no-such-space")
    assert result.exit_code == 2
    assert "'no-such-space': no such space" in result.stderr
    assert rig.calls(ASK_ENDPOINT) == 0


def test_dead_session(rig: Rig) -> None:
    result = rig.run("ask", "Hello?", cookies={"__Secure-next-auth.session-token": "expired"})
    assert result.exit_code == 3
    assert result.stderr.count("\n") <= 2 and "Traceback" not in result.stderr
    assert rig.calls(ASK_ENDPOINT) == 0


# -- mark-read, space-create --------------------------------------------------------------------


def test_mark_read_command(rig: Rig) -> None:
    uuid = sample_uuid("tides")
    result = rig.run("mark-read", f"https://www.perplexity.ai/search/{uuid}", "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert rig.emu.server.app.viewed == [doc["context_uuid"]] == [rig.record(uuid).context_uuid]
    assert rig.run("mark-read", "00000000-0000-4000-8000-000000000000").exit_code == 1


def test_space_create_prints_uuid_slug_url(rig: Rig) -> None:
    result = rig.run("space-create", "Bot answers", "--description", "from pplx-ask")
    assert result.exit_code == 0, result.stderr
    lines = dict(line.split(None, 1) for line in result.stdout.splitlines())
    space = rig.emu.library.spaces[lines["uuid"]]
    assert (space.title, space.slug, space.description) == (
        "Bot answers",
        lines["slug"],
        "from pplx-ask",
    )
    assert lines["url"].endswith(f"/spaces/{space.slug}")
    doc = json.loads(rig.run("space-create", "Second", "--json").stdout)
    assert set(doc) == {"uuid", "slug", "title", "url"}
    assert rig.run("space-create", "  ").exit_code == 2


def test_the_ask_request_is_never_retried(rig: Rig) -> None:
    faulted(rig, "503=1")  # every request but the session probe answers 503
    result = rig.run("ask", "Once only")
    assert result.exit_code == 1
    assert "503" in result.stderr
    assert rig.calls(ASK_ENDPOINT) == 1
    assert rig.emu.library.listing()[0].title != "Once only"


def test_ctrl_c_stops_watching_with_exit_130(rig: Rig) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    faulted(rig, "ask_silence=60s")
    (rig.tmp / "cookies.json").write_text(json.dumps(rig.emu.cookies), "utf-8")
    argv = [sys.executable, "-c", "from pplx_export.cli.ask import run; run()", "ask", "Slow"]
    argv += ["--mode", "council", "--config", str(rig.tmp / "config.toml")]
    argv += ["--cookies", str(rig.tmp / "cookies.json"), "--out", str(rig.out)]
    argv += ["--base-url", rig.emu.base_url]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    lines: list[str] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the thread exists once its URL is printed
        line = proc.stderr.readline()
        lines.append(line)
        if "/search/" in line or not line:
            break
    try:
        os.kill(proc.pid, signal.SIGINT)
        # Generous: a loaded machine is slow, and the wait ends as soon as the child does.
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, "".join(lines) + err
    uuid = rig.emu.library.listing()[0].uuid
    assert f"/search/{uuid}" in err and f"pplx-export export {rig.emu.base_url}" in err
    assert out == "" and "Traceback" not in err
    assert rig.thread_dirs() == []


def test_a_failed_archive_fails_the_run_and_says_how_to_retry(rig: Rig) -> None:
    from pplx_export.store.lock import archive_lock

    rig.out.mkdir(parents=True)
    with archive_lock(rig.out):  # another run (a cron sync) holds the archive
        result = rig.run("ask", "Locked out", "--json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["status"] == "COMPLETED" and doc["archived_to"] is None
    assert [e["step"] for e in doc["step_errors"]] == ["archive"]
    assert f"retry with: pplx-export export {doc['thread_url']}" in result.stderr
    assert rig.thread_dirs() == []
