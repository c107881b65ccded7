"""`sync-deleted` and `sync --check-deleted` against the emulator (protocol §2.11, issue 11).

One archive of the fixture library is exported once per module and copied for each test;
each test runs its own emulator, so mutations (a thread deleted, a failing server) stay put.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pplx_export.store.library_index import index_path, load_index, save_index
from pplx_export.store.space_files import listing_row, save_listing
from tests.e2e_support import E2E, THREAD_ENDPOINT, by_endpoint
from tests.upkeep_support import (
    BASIL_UUID,
    SEARCH_UUID,
    export_fixture_library,
    upkeep_env,
)
from tests.upkeep_support import as_json as _json
from tests.upkeep_support import dir_of as _dir_of
from tests.upkeep_support import snapshot as _snapshot


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_fixture_library(tmp_path_factory.mktemp("exported"))


@pytest.fixture
def env(tmp_path: Path, exported: Path) -> Iterator[E2E]:
    with upkeep_env(tmp_path, exported) as e:
        yield e


def _drop_from_index(env: E2E, *uuids: str) -> None:
    rows = load_index(env.out, env.account).threads
    save_index(env.out, env.account, [r for r in rows if r["entryUUID"] not in uuids])


def test_offline_lists_candidates_newest_first_with_zero_requests(env: E2E) -> None:
    _drop_from_index(env, SEARCH_UUID, BASIL_UUID)
    env.emu.reset_stats()
    result = env.cli("sync-deleted")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    # Basil (2031-06-25) is newer than Rust lifetimes (2031-05-04); both exported by maya.
    assert [line.split()[2] for line in lines] == [BASIL_UUID, SEARCH_UUID]
    assert all(line.split()[1] == "maya" for line in lines)
    assert "2 candidate(s)" in result.stderr
    assert env.stats()["total"] == 0
    assert env.state()[SEARCH_UUID]["status"] == "ok"


def test_union_rule_a_thread_in_another_accounts_index_is_no_candidate(env: E2E) -> None:
    rows = load_index(env.out, env.account).threads
    (shared,) = [r for r in rows if r["entryUUID"] == SEARCH_UUID]
    _drop_from_index(env, SEARCH_UUID)
    save_index(env.out, "tomas", [shared])  # listed for tomas (a shared space, say)
    doc = _json(env.cli("sync-deleted", "--json").stdout)
    assert doc["candidates"] == []
    assert doc["indexes"] == ["maya", "tomas"]
    index_path(env.out, "tomas").unlink()
    doc = _json(env.cli("sync-deleted", "--json").stdout)
    assert [c["uuid"] for c in doc["candidates"]] == [SEARCH_UUID]


def test_a_thread_from_a_space_listing_is_judged_against_that_space(env: E2E) -> None:
    """Issue 32: another member's thread (exported through `space-index`) is in no library
    of ours; while its space's listing holds it, it is no deletion candidate."""
    _drop_from_index(env, SEARCH_UUID)
    space = {"slug": "garden-x", "uuid": "space-uuid", "title": "Garden"}
    row = {"uuid": SEARCH_UUID, "title": "Rust lifetimes", "author_username": "erin"}
    save_listing(env.out, space, [listing_row(row, space)])
    doc = _json(env.cli("sync-deleted", "--json").stdout)
    assert doc["candidates"] == []
    save_listing(env.out, space, [])  # the space no longer lists it
    doc = _json(env.cli("sync-deleted", "--json").stdout)
    assert [c["uuid"] for c in doc["candidates"]] == [SEARCH_UUID]


def test_no_readable_index_means_no_candidate_and_says_why(env: E2E) -> None:
    index_path(env.out, env.account).write_text("{not json", "utf-8")
    result = env.cli("sync-deleted", "--online", "--json")
    assert result.exit_code == 0, result.output
    doc = _json(result.stdout)
    assert doc["candidates"] == []
    assert "no readable library index" in str(doc["reason"])
    assert by_endpoint(env.stats(), THREAD_ENDPOINT) == 0
    assert index_path(env.out, env.account).read_text("utf-8") == "{not json"  # untouched


def test_confirmed_deletion_is_tombstoned_and_files_stay(env: E2E) -> None:
    env.emu.mutate(delete=SEARCH_UUID)  # deleted on the platform, gone from the listing
    _drop_from_index(env, SEARCH_UUID)
    directory = _dir_of(env, SEARCH_UUID)
    before = _snapshot(directory)
    env.emu.reset_stats()
    result = env.cli("sync-deleted", "--online", "--json")
    assert result.exit_code == 0, result.output
    doc = _json(result.stdout)
    assert [c["uuid"] for c in doc["confirmed"]] == [SEARCH_UUID]
    assert by_endpoint(env.stats(), THREAD_ENDPOINT) == 1
    record = env.state()[SEARCH_UUID]
    assert record["status"] == "deleted"
    assert "ENTRY_DELETED" in record["note"] and record["deleted_at"]
    after = _snapshot(directory)
    assert set(after) == set(before)  # nothing deleted, nothing added
    assert {k: v for k, v in after.items() if k != "thread.json"} == {
        k: v for k, v in before.items() if k != "thread.json"
    }
    old, new = json.loads(before["thread.json"]), json.loads(after["thread.json"])
    stamp = new.pop("remote_deleted")
    assert stamp.endswith("Z") and new == old
    assert list(json.loads(after["thread.json"]))[-1] == "remote_deleted"

    # Re-render keeps the tombstone; status lists the thread; a rerun changes nothing.
    assert env.offline("re-render").exit_code == 0
    assert json.loads((directory / "thread.json").read_text("utf-8"))["remote_deleted"] == stamp
    status = _json(env.offline("status", "--json").stdout)
    assert [t["uuid"] for t in status["tombstoned"]] == [SEARCH_UUID]
    assert "deleted on Perplexity, kept here (1)" in env.offline("status").stdout
    env.emu.reset_stats()
    again = _json(env.cli("sync-deleted", "--online", "--json").stdout)
    assert again["candidates"] == [] and env.stats()["total"] == 0


def test_a_temp_file_of_a_killed_run_goes_even_with_no_candidate_left(env: E2E) -> None:
    """A run killed while saving the state after its last tombstone leaves a temp file in
    index/ and no candidate: the next online run removes it all the same (the offline
    listing writes nothing, so it leaves it)."""
    torn = env.out / "index" / ".pplx-tmp-99999-8"
    torn.write_text("{")
    assert env.cli("sync-deleted").exit_code == 0
    assert torn.exists()
    result = env.cli("sync-deleted", "--online", "--json")
    assert result.exit_code == 0, result.output
    assert _json(result.stdout)["candidates"] == []
    assert not torn.exists()


def test_a_tombstone_is_never_overwritten(env: E2E) -> None:
    env.emu.mutate(expire=SEARCH_UUID)
    _drop_from_index(env, SEARCH_UUID)
    tj = _dir_of(env, SEARCH_UUID) / "thread.json"
    doc = json.loads(tj.read_text("utf-8"))
    doc["remote_deleted"] = "2030-01-01T00:00:00Z"  # a run killed after the tombstone
    tj.write_text(json.dumps(doc, ensure_ascii=False, indent=1), "utf-8")
    result = env.cli("sync-deleted", "--online")
    assert result.exit_code == 0, result.output
    assert json.loads(tj.read_text("utf-8"))["remote_deleted"] == "2030-01-01T00:00:00Z"
    assert "ENTRY_EXPIRED" in env.state()[SEARCH_UUID]["note"]


def test_a_404_confirms_and_a_false_positive_is_left_alone(env: E2E) -> None:
    env.emu.mutate(fail_thread=SEARCH_UUID, status=404)
    _drop_from_index(env, SEARCH_UUID, BASIL_UUID)  # basil is still there
    basil = _snapshot(_dir_of(env, BASIL_UUID))
    doc = _json(env.cli("sync-deleted", "--online", "--json").stdout)
    assert doc["still_there"] == [BASIL_UUID]
    assert [c["uuid"] for c in doc["confirmed"]] == [SEARCH_UUID]
    assert env.state()[BASIL_UUID]["status"] == "ok"
    assert _snapshot(_dir_of(env, BASIL_UUID)) == basil


def test_a_5xx_is_left_for_the_next_run(env: E2E) -> None:
    env.emu.mutate(delete=SEARCH_UUID)
    env.emu.mutate(fail_thread=SEARCH_UUID, status=503)
    _drop_from_index(env, SEARCH_UUID)
    before = _snapshot(_dir_of(env, SEARCH_UUID))
    result = env.cli("sync-deleted", "--online")
    assert result.exit_code == 4, result.output
    assert f"failed: {SEARCH_UUID}: ServerError" in result.stderr
    assert env.state()[SEARCH_UUID]["status"] == "ok"
    assert _snapshot(_dir_of(env, SEARCH_UUID)) == before
    env.emu.mutate(fail_thread=SEARCH_UUID, status=0)  # the server recovers
    result = env.cli("sync-deleted", "--online")
    assert result.exit_code == 0, result.output
    assert env.state()[SEARCH_UUID]["status"] == "deleted"


def test_three_auth_failures_in_a_row_stop_the_run_with_exit_3(env: E2E) -> None:
    uuids = [r["entryUUID"] for r in load_index(env.out, env.account).threads][1:]
    assert len(uuids) >= 4  # the index keeps one row: an empty one would stop it earlier
    for uuid in uuids:
        env.emu.mutate(fail_thread=uuid, status=401)
    _drop_from_index(env, *uuids)
    state_before = env.state()
    env.emu.reset_stats()
    result = env.cli("sync-deleted", "--online")
    assert result.exit_code == 3, result.output
    assert "3 authentication failures in a row" in result.stderr
    assert by_endpoint(env.stats(), THREAD_ENDPOINT) == 3  # stopped, not walked to the end
    assert env.state() == state_before


def test_plain_sync_check_deleted_tombstones_a_deletion(env: E2E) -> None:
    """Issue 32: the incremental index walked to the end of the listing (a small library),
    so it dropped the deleted row itself and the check finds it without --full."""
    env.emu.mutate(delete=SEARCH_UUID)  # and unlisted
    result = env.cli("sync", "--check-deleted")
    assert result.exit_code == 0, result.output
    assert "sync-deleted: 1 candidate(s): 1 deleted" in result.stderr
    assert env.state()[SEARCH_UUID]["status"] == "deleted"
    result = env.cli("sync", "--full")
    assert result.exit_code == 0, result.output
    assert "sync-deleted: 0 candidate(s)" in result.stderr
    assert "remote_deleted" in json.loads(
        (_dir_of(env, SEARCH_UUID) / "thread.json").read_text("utf-8")
    )


def test_the_tombstone_goes_in_its_place_and_keeps_unknown_keys(tmp_path: Path) -> None:
    from pplx_export.archive.thread_docs import add_remote_deleted

    doc = {"web_uuid": "u", "title": "t", "exported_at": "x", "zz_newer_tool": 1}
    (tmp_path / "thread.json").write_text(json.dumps(doc), "utf-8")
    assert add_remote_deleted(tmp_path, "2031-01-01T00:00:00Z")
    written = json.loads((tmp_path / "thread.json").read_text("utf-8"))
    assert list(written) == ["web_uuid", "title", "exported_at", "remote_deleted", "zz_newer_tool"]
    assert not add_remote_deleted(tmp_path, "2032-01-01T00:00:00Z")  # never overwritten
    assert json.loads((tmp_path / "thread.json").read_text("utf-8")) == written
    (tmp_path / "thread.json").write_text("[]", "utf-8")
    assert not add_remote_deleted(tmp_path, "2032-01-01T00:00:00Z")
