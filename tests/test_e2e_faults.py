"""End to end: the pipeline under network faults, rotated GraphQL hashes and auth failures."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pplx_export.emulator import DEFAULT_EMAIL, run_emulator
from pplx_export.emulator.http import Request, Response, json_response
from pplx_export.emulator.routes import threads
from pplx_export.store.library_index import load_index
from pplx_export.store.state_check import check_state_vs_dirs
from tests.e2e_support import (
    E2E,
    FIXTURES,
    GRAPHQL_ENDPOINT,
    REST_LISTING_ENDPOINT,
    SESSION_ENDPOINT,
    by_endpoint,
    fixture_threads,
    leftover_temp_files,
    redacted,
    thread_dirs,
    thread_uuid,
    unparseable_json,
)

FAULTS = "429=0.2,500=0.1,drop=0.05,truncate=0.05,challenge=0.02,retry_after=0"
# One faultable request fails with probability 1 - 0.8*0.9*0.95*0.95*0.98 = 0.363, so a
# request needs 1 / (1 - 0.363) = 1.57 attempts on average. With max_retries = 10 a logical
# request gives up with probability 0.363**10 = 4e-5 (the default 5 would lose one of ~160).
MAX_RETRIES = 10
MEAN_ATTEMPTS = 1 / (0.8 * 0.9 * 0.95 * 0.95 * 0.98)
PAGE_SIZE = 2


def _with_retries(env: E2E, retries: int) -> None:
    text = env.config.read_text("utf-8")
    env.config.write_text(
        text.replace("[network]\n", f"[network]\nmax_retries = {retries}\n"), "utf-8"
    )


def _assert_complete(env: E2E) -> None:
    dirs = thread_dirs(env.out)
    uuids = [thread_uuid(d) for d in dirs]
    assert sorted(uuids) == sorted(fixture_threads())  # all there, none twice
    for directory in dirs:
        uuid = thread_uuid(directory)
        plain = json.loads((directory / "raw_entries.json").read_text("utf-8"))
        # The library's own entries (asking the faulty emulator again would hit faults).
        record = env.emu.library.get(uuid)
        assert record is not None
        assert redacted(plain["entries"]) == redacted(record.plain["entries"]), uuid
        # No turn duplicated by a retried page.
        n_turns = len(list((directory / "turns").glob("turn_*.md")))
        assert n_turns == len(plain["entries"]), uuid
    assert leftover_temp_files(env.out) == []
    assert unparseable_json(env.out) == []
    assert check_state_vs_dirs(env.out, env.state()).ok
    assert {r["status"] for r in env.state().values()} == {"ok"}


def _baseline(tmp_path: Path) -> dict[str, Any]:
    """The requests of the same sync without faults: the minimum the export needs."""
    with run_emulator(FIXTURES, page_size=PAGE_SIZE) as emu:
        env = E2E(emu, tmp_path / "baseline")
        env.tmp.mkdir()
        env.write_files(DEFAULT_EMAIL)
        assert env.cli("sync").exit_code == 0
        return env.stats()


def test_every_thread_is_exported_under_faults_with_bounded_retries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    minimum = _baseline(tmp_path)
    with run_emulator(FIXTURES, page_size=PAGE_SIZE, faults=FAULTS, seed=4) as emu:
        env = E2E(emu, tmp_path)
        env.write_files(DEFAULT_EMAIL)
        _with_retries(env, MAX_RETRIES)
        result = env.cli("sync")
        assert result.exit_code == 0, result.output[-3000:]
        stats = env.stats()
        _assert_complete(env)
    # Faults hit API requests only (not the session probe, not CDN downloads).
    faultable = minimum["total"] - by_endpoint(minimum, SESSION_ENDPOINT)
    faultable -= by_endpoint(minimum, "GET /__emulator/files")
    extra = stats["total"] - minimum["total"]
    with capsys.disabled():
        print(
            f"\n[faults] {stats['total']} requests under faults vs {minimum['total']} without "
            f"({faultable} faultable; {extra} retries, expected about "
            f"{faultable * (MEAN_ATTEMPTS - 1):.0f})"
        )
    assert extra > 0  # the faults did happen
    # Hard bound: no logical request is tried more than max_retries times.
    for uuid, n in minimum["by_thread"].items():
        assert stats["by_thread"][uuid] <= n * MAX_RETRIES, uuid
    assert stats["total"] <= minimum["total"] + faultable * (MAX_RETRIES - 1)
    # Statistical bound: 2.5x the faultable requests is > 5 standard deviations above the
    # mean of 1.57x (and the seeded fault stream makes the run reproducible anyway).
    assert stats["total"] - (minimum["total"] - faultable) <= 2.5 * faultable


def test_rotated_graphql_hashes_fall_back_to_the_rest_listing(tmp_path: Path) -> None:
    with run_emulator(FIXTURES, faults="graphql_rotated", listing="both") as emu:
        env = E2E(emu, tmp_path)
        env.write_files(DEFAULT_EMAIL, listing="graphql")
        result = env.cli("sync")
        assert result.exit_code == 0, result.output
        stats = env.stats()
        assert by_endpoint(stats, GRAPHQL_ENDPOINT) >= 1  # tried, answered not-found
        assert by_endpoint(stats, REST_LISTING_ENDPOINT) >= 1
        rows = load_index(env.out, env.account).threads
        assert sorted(r["entryUUID"] for r in rows) == sorted(fixture_threads())
        _assert_complete(env)


@pytest.mark.parametrize(
    "command",
    [["sync"], ["index"], ["export", "24a76805-90eb-5b12-a5e0-d0288d7ceae3"]],
    ids=["sync", "index", "export"],
)
def test_a_wrong_session_token_exits_3_after_the_probe_without_touching_the_archive(
    tmp_path: Path, command: list[str]
) -> None:
    with run_emulator(FIXTURES) as emu:
        env = E2E(emu, tmp_path)
        env.write_files(DEFAULT_EMAIL, cookies={"__Secure-next-auth.session-token": "stale"})
        result = env.cli(*command)
        assert result.exit_code == 3, result.output
        stats = env.stats()
        assert stats["by_endpoint"] == {SESSION_ENDPOINT: 1}
        assert not env.out.exists()


def test_a_session_of_another_account_exits_3(tmp_path: Path) -> None:
    with run_emulator(FIXTURES) as emu:
        env = E2E(emu, tmp_path)
        env.write_files("someone.else@example.com")
        result = env.cli("sync")
        assert result.exit_code == 3, result.output
        assert by_endpoint(env.stats(), "GET /rest/thread") == 0
        assert not env.out.exists()


Route = Callable[[Request], Response]


@pytest.fixture
def indexed(tmp_path: Path) -> Iterator[E2E]:
    with run_emulator(FIXTURES, page_size=100) as emu:
        env = E2E(emu, tmp_path)
        env.write_files(DEFAULT_EMAIL)
        assert env.cli("index").exit_code == 0
        emu.reset_stats()
        yield env


def test_a_thread_not_allowed_is_recorded_and_the_batch_goes_on_with_exit_4(
    indexed: E2E, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The emulator has no per-thread permission; answer 403 for one thread in front of it.
    denied = "1a8f1da8-8aa6-52aa-8eeb-ae2a4072541d"
    original: Route = threads.thread_detail

    def detail(req: Request) -> Response:
        if threads.thread_id_of(req.method, req.path) == denied:
            return json_response(
                403, {"error_code": "VIEW_THREAD_NOT_ALLOWED", "message": "Not allowed"}
            )
        return original(req)

    monkeypatch.setattr(threads, "thread_detail", detail)
    result = indexed.cli("batch")
    assert result.exit_code == 4, result.output
    state = indexed.state()
    assert state[denied]["status"] == "error"
    assert "VIEW_THREAD_NOT_ALLOWED" in state[denied]["error"]
    others = set(fixture_threads()) - {denied}
    assert {state[u]["status"] for u in others} == {"ok"}
    assert indexed.stats()["by_thread"][denied] == 1  # a 403 is not retried
    assert {thread_uuid(d) for d in thread_dirs(indexed.out)} == others

    # The next batch retries only the failed thread (and it still fails: exit 4 again).
    indexed.emu.reset_stats()
    result = indexed.cli("batch")
    assert result.exit_code == 4
    assert indexed.stats()["by_thread"] == {denied: 1}


def test_three_auth_errors_in_a_row_stop_the_batch_with_exit_3_and_state_saved(
    indexed: E2E, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The session dies after two threads: the emulator's token changes under the client.
    original: Route = threads.thread_detail
    served: set[str] = set()

    def detail(req: Request) -> Response:
        served.add(threads.thread_id_of(req.method, req.path))
        if len(served) == 3:
            req.app.config.session_token = "rotated-elsewhere"
            return json_response(401, {"error_code": "UNAUTHORIZED"})
        return original(req)

    monkeypatch.setattr(threads, "thread_detail", detail)
    result = indexed.cli("batch")
    assert result.exit_code == 3, result.output
    state = indexed.state()
    statuses = [state[u]["status"] for u in state]
    assert statuses.count("error") == 3
    assert all("AuthError" in state[u]["error"] for u in state if state[u]["status"] == "error")
    fetched = indexed.stats()["by_thread"]
    # Stopped: two threads reached the route, three more were refused, the rest untouched.
    assert len(fetched) == 5, fetched
    assert statuses.count("ok") == 2
    assert len(thread_dirs(indexed.out)) == 2
    assert check_state_vs_dirs(indexed.out, state).ok
    assert leftover_temp_files(indexed.out) == []


@pytest.mark.parametrize("flavor", ["plain", "schematized"])
def test_a_thread_answer_without_entries_fails_and_keeps_the_earlier_export(
    indexed: E2E, monkeypatch: pytest.MonkeyPatch, flavor: str
) -> None:
    target = "cb11e506-373b-5e2d-9156-c7629f699010"  # computer: plain + schematized
    assert indexed.cli("batch").exit_code == 0
    old_dir = indexed.out / indexed.state()[target]["dir"]
    before = {p.name: p.read_bytes() for p in old_dir.glob("raw_*.json")}
    indexed.emu.mutate(touch=target)
    original: Route = threads.thread_detail

    def detail(req: Request) -> Response:
        schematized = req.arg("with_schematized_response") == "true"
        if threads.thread_id_of(req.method, req.path) == target and schematized == (
            flavor == "schematized"
        ):
            # A glitch: a well-formed answer that holds no turn at all.
            empty = {"entries": [], "background_entries": [], "has_next_page": False}
            return json_response(200, {**empty, "next_cursor": ""})
        return original(req)

    monkeypatch.setattr(threads, "thread_detail", detail)
    result = indexed.cli("sync")
    assert result.exit_code == 4, result.output
    record = indexed.state()[target]
    assert record["status"] == "error"
    assert "no entries" in record["error"]
    # The earlier export is untouched and still the only directory of the thread.
    assert {p.name: p.read_bytes() for p in old_dir.glob("raw_*.json")} == before
    assert [thread_uuid(d) for d in thread_dirs(indexed.out)].count(target) == 1

    monkeypatch.setattr(threads, "thread_detail", original)
    result = indexed.cli("sync")
    assert result.exit_code == 0, result.output
    assert indexed.state()[target]["status"] == "ok"
    new_dir = indexed.out / indexed.state()[target]["dir"]
    assert len(list((new_dir / "turns").glob("turn_*.md"))) == 4  # 3 turns + the touch
    assert [thread_uuid(d) for d in thread_dirs(indexed.out)].count(target) == 1


def test_an_unexpected_error_in_one_thread_is_recorded_and_the_batch_goes_on(
    indexed: E2E, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A parser bug on one odd payload must cost that thread only, not the whole run.
    from pplx_export.commands.export import thread as export_mod

    victim = "1a8f1da8-8aa6-52aa-8eeb-ae2a4072541d"
    original = export_mod.needs_blocks  # type: ignore[attr-defined]  # patched where it is used

    def exploding(plain: dict[str, Any], *args: Any, **kwargs: Any) -> bool:
        entries = plain.get("entries") or []
        if any(e.get("thread_url_slug") == victim for e in entries if isinstance(e, dict)):
            raise RuntimeError("boom")
        return original(plain, *args, **kwargs)

    monkeypatch.setattr(export_mod, "needs_blocks", exploding)
    result = indexed.cli("batch")
    assert result.exit_code == 4, result.output
    state = indexed.state()
    assert state[victim]["status"] == "error"
    assert "RuntimeError: boom" in state[victim]["error"]
    assert {state[u]["status"] for u in set(fixture_threads()) - {victim}} == {"ok"}
