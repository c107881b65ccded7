"""End to end: a sync costs only what changed (product.md §2.4), counted by the emulator."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e_support import (
    E2E,
    REST_LISTING_ENDPOINT,
    THREAD_ENDPOINT,
    by_endpoint,
    fixture_threads,
    signed_in,
    thread_dirs,
)

SEARCH_UUID = "24a76805-90eb-5b12-a5e0-d0288d7ceae3"  # search: plain only
COMPUTER_UUID = "c0b720ca-5034-5675-b730-44eca9d66db2"  # computer: plain + schematized
STUDY_UUID = "64d35152-d27e-5754-b2a4-f8d5afb310bc"  # study: plain + schematized
COUNCIL_UUID = "1a8f1da8-8aa6-52aa-8eeb-ae2a4072541d"


@pytest.fixture
def e2e(tmp_path: Path) -> Iterator[E2E]:
    # One page per thread detail (and per library listing): counts are then per thread.
    with signed_in(tmp_path, page_size=100) as env:
        result = env.cli("sync")
        assert result.exit_code == 0, result.output
        env.emu.reset_stats()
        yield env


def test_a_second_sync_with_nothing_changed_lists_once_and_fetches_no_thread(e2e: E2E) -> None:
    result = e2e.cli("sync")
    assert result.exit_code == 0, result.output
    stats = e2e.stats()
    assert by_endpoint(stats, REST_LISTING_ENDPOINT) == 1
    assert by_endpoint(stats, THREAD_ENDPOINT) == 0
    assert stats["by_thread"] == {}
    # Besides the listing, only the session probe.
    assert stats["total"] == 2, stats


@pytest.mark.parametrize(
    ("uuid", "requests"),
    [(SEARCH_UUID, 1), (COMPUTER_UUID, 2), (STUDY_UUID, 2)],
    ids=["search-plain-only", "computer-plain+blocks", "study-plain+blocks"],
)
def test_a_touched_thread_and_only_it_is_fetched_again(e2e: E2E, uuid: str, requests: int) -> None:
    before = {thread: d for thread, d in _dirs(e2e).items()}
    turns_before = len(list((before[uuid] / "turns").glob("turn_*.md")))
    e2e.emu.mutate(touch=uuid)
    result = e2e.cli("sync")
    assert result.exit_code == 0, result.output
    stats = e2e.stats()
    assert stats["by_thread"] == {uuid: requests}
    assert by_endpoint(stats, REST_LISTING_ENDPOINT) == 1
    after = _dirs(e2e)
    assert set(after) == set(before)  # moved (new date) or not, still one directory each
    assert len(list((after[uuid] / "turns").glob("turn_*.md"))) == turns_before + 1
    assert e2e.state()[uuid]["lastUpdated"] == e2e.emu.library.get(uuid).last_updated  # type: ignore[union-attr]

    # And then nothing again.
    e2e.emu.reset_stats()
    assert e2e.cli("sync").exit_code == 0
    assert e2e.stats()["by_thread"] == {}


def test_deleted_and_expired_threads_become_terminal_and_are_never_fetched_again(
    e2e: E2E,
) -> None:
    # A deletion the listing does not show yet: the thread changed, then was deleted.
    e2e.emu.mutate(touch=COMPUTER_UUID)
    e2e.emu.mutate({"delete": COMPUTER_UUID, "listed": True})
    result = e2e.cli("sync")
    assert result.exit_code == 0, result.output  # terminal states are not failures
    assert e2e.stats()["by_thread"] == {COMPUTER_UUID: 1}
    assert e2e.state()[COMPUTER_UUID]["status"] == "deleted"

    # An expired thread whose listing row did not change: a forced batch finds it out.
    e2e.emu.mutate(expire=COUNCIL_UUID)
    e2e.emu.reset_stats()
    result = e2e.cli("batch", "--force")
    assert result.exit_code == 0, result.output
    fetched = e2e.stats()["by_thread"]
    assert COMPUTER_UUID not in fetched
    assert fetched[COUNCIL_UUID] == 1
    state = e2e.state()
    assert state[COUNCIL_UUID]["status"] == "expired"
    assert state[COMPUTER_UUID]["status"] == "deleted"

    # Never again: not by sync, sync --full, nor batch --force.
    for command in (["sync"], ["sync", "--full"], ["batch", "--force"], ["batch", "--full"]):
        e2e.emu.reset_stats()
        result = e2e.cli(*command)
        assert result.exit_code == 0, (command, result.output)
        fetched = e2e.stats()["by_thread"]
        assert COMPUTER_UUID not in fetched and COUNCIL_UUID not in fetched, command
    # The local copies stay (tombstones never delete files).
    assert COMPUTER_UUID in _dirs(e2e) and COUNCIL_UUID in _dirs(e2e)
    assert len(thread_dirs(e2e.out)) == len(fixture_threads())


def _dirs(env: E2E) -> dict[str, Path]:
    return {
        json.loads((d / "thread.json").read_text("utf-8"))["web_uuid"]: d
        for d in thread_dirs(env.out)
    }
