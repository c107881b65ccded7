"""Issue 30: the library as the live site lists it (REST first, one clock, real modes) and
spaces as the 2026 UI asks for them, end to end against the emulator.

The emulator lists like the live site by default (REST rows with naive times and UI modes,
GraphQL answering PERSISTED_QUERY_NOT_FOUND); its `listing` mutation switches between the
two listings over the same library, which is what an archive meets when the platform (or
the setting) changes listing between two syncs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from pplx_export.cli.export import main
from pplx_export.emulator import DEFAULT_EMAIL, SESSION_COOKIE, RunningEmulator, run_emulator
from pplx_export.emulator.library import SpaceRecord
from pplx_export.store.batch_state import BatchState, legacy_path
from pplx_export.store.library_index import load_index
from tests.e2e_support import (
    E2E,
    GRAPHQL_ENDPOINT,
    REST_LISTING_ENDPOINT,
    THREAD_ENDPOINT,
    by_endpoint,
)

GARDEN = "garden-club-2f81c4"
BOB_THREAD = "17b8ffee-91bd-5f7d-b028-59d6575ec9d7"
STD = "version=2.18&source=default"


@pytest.fixture
def sample(tmp_path: Path) -> Iterator[E2E]:
    """The bundled sample (every mode), old behaviour on: both listings answer."""
    with run_emulator(listing="both", page_size=100) as emu:
        env = E2E(emu, tmp_path)
        yield env


def _sync(env: E2E, listing: str = "") -> None:
    """`sync`; with `listing`, first a fresh config with that `[network] listing` (which
    forgets what `auto` remembered in `[index_state]`)."""
    if listing:
        env.write_files(DEFAULT_EMAIL, listing=listing)
    result = env.cli("sync")
    assert result.exit_code == 0, result.output


def _threads_fetched(env: E2E) -> int:
    return by_endpoint(env.stats(), THREAD_ENDPOINT)


@pytest.mark.parametrize(("first", "second"), [("graphql", "rest"), ("rest", "graphql")])
def test_switching_listing_between_syncs_fetches_no_thread(
    sample: E2E, first: str, second: str
) -> None:
    """GraphQL says `…Z`, REST the naive `…` of the same instant: one clock, nothing fetched."""
    sample.emu.mutate(listing="graphql" if first == "graphql" else "rest")
    _sync(sample, "auto" if first == "rest" else "graphql")
    stats = sample.stats()
    used = GRAPHQL_ENDPOINT if first == "graphql" else REST_LISTING_ENDPOINT
    assert by_endpoint(stats, used) >= 1 and _threads_fetched(sample) > 0
    rows = load_index(sample.out, sample.account).threads
    assert rows and all(r["lastUpdated"].endswith("Z") for r in rows)

    sample.emu.mutate(listing=second)  # the other listing only, same library
    sample.emu.reset_stats()
    _sync(sample, "auto")  # auto tries what worked last time, then the other one
    stats = sample.stats()
    assert by_endpoint(stats, GRAPHQL_ENDPOINT if second == "graphql" else REST_LISTING_ENDPOINT)
    assert _threads_fetched(sample) == 0, stats
    assert stats["by_thread"] == {}
    assert load_index(sample.out, sample.account).threads != []
    # auto remembered the listing that answered: the next sync asks it first, and only it.
    sample.emu.reset_stats()
    _sync(sample)
    stats = sample.stats()
    other = REST_LISTING_ENDPOINT if second == "graphql" else GRAPHQL_ENDPOINT
    assert by_endpoint(stats, other) == 0 and _threads_fetched(sample) == 0


def test_rest_rows_keep_the_live_fields_and_modes_pick_the_right_threads(sample: E2E) -> None:
    sample.write_files(DEFAULT_EMAIL)
    result = sample.cli("index")
    assert result.exit_code == 0, result.output
    assert by_endpoint(sample.stats(), GRAPHQL_ENDPOINT) == 0  # REST first, like the web UI
    rows = load_index(sample.out, sample.account).threads
    assert {r["mode"] for r in rows} <= {"copilot", "concise", "asi"}
    assert all(r.get("context_uuid") and r.get("query_count") for r in rows)
    assert all("thread_status" in r for r in rows)
    truth = {  # the library listing's threads (another member's thread is in none)
        t.uuid: t.mode for t in sample.emu.library.iter_threads() if t.listed and not t.space_only
    }
    exportable = {t.uuid for t in sample.emu.library.iter_threads() if t.state == "ok"}
    by_mode: dict[str, set[str]] = {}
    for mode in ("search", "deep-research", "computer", "council", "study"):
        result = sample.cli("batch", "--mode", mode, "--dry-run", "--json")
        assert result.exit_code == 0, result.output
        todo = json.loads(result.stdout)["todo"]
        by_mode[mode] = {item["uuid"] for item in todo}
        assert by_mode[mode] == {u for u, m in truth.items() if m == mode}, mode
        assert all(item["mode"] == mode and item["dir"].startswith(f"{mode}/") for item in todo)
    assert by_mode["search"] and by_mode["computer"] and by_mode["deep-research"]
    # `status` names each indexed thread's mode before anything is exported...
    result = sample.offline("status", "--json", "-vvv")
    assert result.exit_code == 0, result.output
    (account,) = json.loads(result.stdout)["accounts"]
    assert {row["uuid"]: row["mode"] for row in account["threads"]} == truth
    # Each mode's threads land under their mode's folder.
    result = sample.cli("batch")
    assert result.exit_code == 0, result.output
    # ... and counts the exported ones per mode.
    (account,) = json.loads(sample.offline("status", "--json", "-vv").stdout)["accounts"]
    done: dict[str, int] = {}
    for uuid, mode in truth.items():
        if uuid in exportable:
            done[mode] = done.get(mode, 0) + 1
    assert account["done_by_mode"] == done
    for uuid, mode in truth.items():
        if uuid not in exportable:
            continue  # deleted / expired: nothing lands
        found = list(sample.out.glob(f"*/{mode}/*_{uuid[:8]}/thread.json"))
        assert found, (uuid, mode)


def test_upgraded_archive_with_z_times_re_downloads_nothing(sample: E2E) -> None:
    """An archive made by the release before the canonical clock: index rows and state
    records with the `Z` times GraphQL gave (and the fraction as sent, `.18033Z` style).
    Rebuilt here in those formats from today's archive; the REST sync after the upgrade
    migrates the files and fetches nothing."""
    sample.emu.mutate(listing="both")
    _sync(sample, "graphql")
    index_file = sample.out / "index" / f"library_{sample.account}.json"
    doc = json.loads(index_file.read_text("utf-8"))
    old_times = {}
    for row in doc["threads"]:
        # The release wrote GraphQL's `updatedAt` verbatim; trailing zeros of the fraction
        # were as the platform sent them.
        old = row["lastUpdated"].replace("000Z", "Z")
        old_times[row["entryUUID"]] = old
        row["lastUpdated"] = old
        for key in ("context_uuid", "query_count", "thread_status", "source", "assets"):
            row.pop(key, None)
        row["mode"] = "COMPUTER" if row["mode"] in ("asi", "COMPUTER") else "SEARCH"
    index_file.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", "utf-8")
    # The release kept the batch state in index/batch_state.json: written back as it did,
    # the state store removed, so the next run migrates it.
    threads = sample.state()
    for uuid, record in threads.items():
        record["lastUpdated"] = old_times.get(uuid, record["lastUpdated"])
    old_state = {"version": 1, "threads": threads}
    legacy_path(sample.out).write_text(json.dumps(old_state, indent=1) + "\n", "utf-8")
    for name in ("state.sqlite", "state.sqlite-wal", "state.sqlite-shm"):
        (sample.out / "index" / name).unlink(missing_ok=True)
    assert any(not t.endswith(".000000Z") and "000Z" not in t for t in old_times.values())

    sample.emu.mutate(listing="rest")  # the live site: REST only
    sample.emu.reset_stats()
    _sync(sample, "auto")
    assert _threads_fetched(sample) == 0, sample.stats()
    records = BatchState.load(sample.out).threads
    assert all(
        r["lastUpdated"].endswith("Z") and len(r["lastUpdated"]) == 27
        for r in records.values()
        if r.get("lastUpdated")
    )


def test_space_index_lists_another_members_threads(tmp_path: Path) -> None:
    with run_emulator() as emu:
        env = E2E(emu, tmp_path)
        env.write_files(DEFAULT_EMAIL)
        assert env.cli("index").exit_code == 0
        result = env.cli("space-index", GARDEN, "--json")
        assert result.exit_code == 0, result.output
        listing = json.loads((env.out / "index" / f"space_{GARDEN}.json").read_text("utf-8"))
        authors = {t["entryUUID"]: (t["author"], t["author_name"]) for t in listing["threads"]}
        assert authors[BOB_THREAD] == ("bob", "Bob Rivera")
        # Without the UI's flags the emulator (like a server with unknown defaults) would
        # have left bob's thread out.
        with httpx.Client(base_url=emu.base_url, cookies=emu.cookies) as http:
            bare = http.get(f"/rest/collections/list_collection_threads?collection_slug={GARDEN}")
            assert BOB_THREAD not in {row["uuid"] for row in bare.json()}


def test_init_finds_a_bot_space_on_the_second_page_of_spaces(tmp_path: Path) -> None:
    with run_emulator() as emu:
        for i in range(35):  # sorted by title: every "Archive …" space before "BOT"
            uuid = f"00000000-0000-4000-8000-{i:012d}"
            emu.library.add_space(SpaceRecord(uuid=uuid, title=f"Archive {i:02d}", slug=f"a-{i}"))
        bot = "11111111-0000-4000-8000-000000000000"
        emu.library.add_space(SpaceRecord(uuid=bot, title="BOT", slug="bot-111111"))
        cookies = tmp_path / "cookies.json"
        cookies.write_text(json.dumps({SESSION_COOKIE: emu.session_token}), "utf-8")
        config = tmp_path / "config.toml"
        args = ["init", "--config", str(config), "--cookies", str(cookies), "--json"]
        result = CliRunner().invoke(main, [*args, "--base-url", emu.base_url])
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        assert doc["bot_space"]["uuid"] == bot and doc["bot_space"]["created"] is False
        pages = emu.stats()["by_endpoint"]["GET /rest/collections/list_user_collections"]
        assert pages == 2


def test_moving_into_a_space_falls_back_to_batch_move_threads(emu_rest: RunningEmulator) -> None:
    from pplx_export.site import constants as C
    from tests.net_fakes import make_client, router

    r = router()
    r.post(C.UPSERT_THREAD_COLLECTION_PATH).mock(
        return_value=httpx.Response(404, json={"error_code": "NOT_FOUND"})
    )
    moved = r.post(C.BATCH_MOVE_THREADS_PATH).mock(
        return_value=httpx.Response(200, json={"status": "success"})
    )
    from pplx_export.site.spaces import move_to_space

    assert move_to_space(make_client(r), "ctx-1", "space-1") == C.BATCH_MOVE_THREADS_PATH
    assert json.loads(moved.calls[0].request.content) == {
        "context_uuids": ["ctx-1"],
        "new_collection_uuid": "space-1",
    }
    # Against the emulator (which knows the new endpoint) the UI's own call moves it.
    ctx = next(t for t in emu_rest.library.iter_threads() if t.context_uuid).context_uuid
    with httpx.Client(base_url=emu_rest.base_url, cookies=emu_rest.cookies) as http:
        space = http.post(f"/rest/collections/create_collection?{STD}", json={"title": "X"})
        answer = http.post(
            f"/rest/collections/upsert_thread_collection?{STD}",
            json={"new_collection_uuid": space.json()["uuid"], "context_uuid": ctx,
                  "return_collection": False, "return_thread": False},
        )  # fmt: skip
        assert answer.json()["status"] == "success"


@pytest.fixture
def emu_rest() -> Iterator[RunningEmulator]:
    with run_emulator() as emu:
        yield emu


def test_emulator_default_lists_like_the_live_site(emu_rest: RunningEmulator) -> None:
    with httpx.Client(base_url=emu_rest.base_url, cookies=emu_rest.cookies) as http:
        body = {"limit": 20, "ascending": False, "offset": 0, "search_term": "",
                "exclude_asi": False, "include_assets": True}  # fmt: skip
        rows = http.post(f"/rest/thread/list_ask_threads?{STD}", json=body).json()
        assert rows and not any(r["last_query_datetime"].endswith("Z") for r in rows)
        asi = [r for r in rows if r["mode"] == "asi"]
        assert asi and all(r["display_model"] == "PPLX_ASI" for r in asi)
        assert any(r["assets"] for r in asi)
        no_asi = http.post(
            f"/rest/thread/list_ask_threads?{STD}", json={**body, "exclude_asi": True}
        ).json()
        assert all(r["mode"] != "asi" for r in no_asi)
        gql = http.post("/rest/perplexity_ask/graphql", json={"operationName": "x"}).json()
        assert gql["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
        emu_rest.mutate(listing="graphql")
        assert http.post(f"/rest/thread/list_ask_threads?{STD}", json=body).status_code == 404
