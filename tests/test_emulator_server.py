"""The emulator's endpoints over the bundled sample: auth, listings, thread pages, spaces, misc."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from pplx_export.emulator import (
    DEFAULT_EMAIL,
    DEFAULT_TOKEN,
    SAMPLE_COOKIES,
    SESSION_COOKIE,
    RunningEmulator,
    run_emulator,
)
from tests.emulator_support import (
    STD,
    client,
    fetch_pages,
    graphql_all,
    graphql_page,
    rest_all,
    sample_uuid,
    thread_url,
)


@pytest.fixture(scope="module")
def emu() -> Iterator[RunningEmulator]:
    # The old behaviour (GraphQL answers too): these tests check both listings.
    with run_emulator(listing="both") as running:
        yield running


@pytest.fixture
def http(emu: RunningEmulator) -> Iterator[httpx.Client]:
    with client(emu) as c:
        yield c


# -- auth ------------------------------------------------------------------------------------


def test_session_probe_answers_configured_identity(http: httpx.Client) -> None:
    response = http.get("/api/auth/session")
    assert response.status_code == 200
    assert response.json()["user"]["email"] == DEFAULT_EMAIL
    assert response.json()["user"]["name"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/auth/session"),
        ("POST", "/rest/perplexity_ask/graphql"),
        ("POST", f"/rest/thread/list_ask_threads?{STD}"),
        ("GET", f"/rest/thread/{sample_uuid('tides')}?{STD}"),
        ("GET", "/rest/collections/list_user_collections"),
        ("GET", "/rest/models/config/v2"),
        ("POST", "/rest/sse/perplexity_ask"),
    ],
)
def test_every_api_endpoint_needs_the_session_cookie(
    emu: RunningEmulator, method: str, path: str
) -> None:
    for cookies in ({}, {SESSION_COOKIE: "wrong"}):
        with httpx.Client(base_url=emu.base_url, cookies=cookies) as anonymous:
            response = anonymous.request(method, path, json={})
        assert response.status_code == 401


def test_custom_identity_and_token() -> None:
    with run_emulator(email="bob@example.org", session_token="tok-bob") as emu:
        good = httpx.get(f"{emu.base_url}/api/auth/session", cookies={SESSION_COOKIE: "tok-bob"})
        bad = httpx.get(f"{emu.base_url}/api/auth/session", cookies={SESSION_COOKIE: DEFAULT_TOKEN})
    assert good.json()["user"]["email"] == "bob@example.org"
    assert bad.status_code == 401


def test_sample_cookie_file_matches_default_token() -> None:
    cookies = json.loads(SAMPLE_COOKIES.read_text())
    assert cookies == {SESSION_COOKIE: DEFAULT_TOKEN}


# -- listings --------------------------------------------------------------------------------


def test_graphql_listing_pages_newest_first(http: httpx.Client) -> None:
    nodes = graphql_all(http, count=4)
    # the whole sample, deleted and expired included; bob's thread is in its space's listing only
    assert len(nodes) == 21
    stamps = [n["updatedAt"] for n in nodes]
    assert stamps == sorted(stamps, reverse=True)
    assert len({n["entryId"] for n in nodes}) == len(nodes)
    first = nodes[0]
    assert set(first) == {
        "name",
        "entryId",
        "slug",
        "mode",
        "displayModel",
        "updatedAt",
        "status",
        "space",
    }
    assert first["mode"] == "COMPUTER"
    assert first["displayModel"] == {"modelID": "pplx_asi_opus"}
    assert first["space"] == {
        "spaceUuid": first["space"]["spaceUuid"],
        "title": "Ocean Notes",
        "slug": "ocean-notes-4b1e0a",
    }
    assert {n["mode"] for n in nodes} == {"SEARCH", "COMPUTER"}


def test_graphql_page_info(http: httpx.Client) -> None:
    threads = graphql_page(http, count=10).json()["data"]["viewer"]["recentGroup"]["threads"]
    assert len(threads["edges"]) == 10
    assert threads["pageInfo"]["hasNextPage"] is True
    cursor = threads["pageInfo"]["endCursor"]
    second = graphql_page(http, count=10, cursor=cursor).json()["data"]["viewer"]["recentGroup"]
    assert len(second["threads"]["edges"]) == 10
    assert second["threads"]["pageInfo"]["hasNextPage"] is True
    cursor = second["threads"]["pageInfo"]["endCursor"]
    last = graphql_page(http, count=10, cursor=cursor).json()["data"]["viewer"]["recentGroup"]
    assert len(last["threads"]["edges"]) == 1  # 21 listed threads
    assert last["threads"]["pageInfo"]["hasNextPage"] is False


def test_graphql_unknown_hash_is_persisted_query_not_found(http: httpx.Client) -> None:
    body = graphql_page(http, hash_="0" * 64).json()
    assert body["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"


def test_rest_listing_lists_what_graphql_lists_in_the_live_shape(http: httpx.Client) -> None:
    """Same threads, same order, same instants; the REST rows as the live site writes them
    (§9.3): naive `last_query_datetime`, UI modes, the extra keys."""
    nodes = graphql_all(http)
    rows = rest_all(http, limit=3)
    assert [r["uuid"] for r in rows] == [n["entryId"] for n in nodes]
    for row, node in zip(rows, nodes, strict=True):
        assert {
            "context_uuid",
            "query_count",
            "thread_status",
            "locked_reason",
            "source",
            "assets",
            "total_threads",
            "frontend_context_uuid",
            "read_write_token",
        } <= set(row)
        assert not row["last_query_datetime"].endswith("Z")
        assert row["last_query_datetime"] + "Z" == node["updatedAt"] or (
            row["last_query_datetime"][:19] == node["updatedAt"][:19]
        )
        assert row["title"] == node["name"]
        assert row["mode"] in ("copilot", "concise", "asi")
        assert (row["mode"] == "asi") == (node["mode"] == "COMPUTER")
        space = node["space"]
        if space is None:
            assert "collection" not in row
        else:
            assert row["collection"]["uuid"] == space["spaceUuid"]
            assert row["collection"]["slug"] == space["slug"]


def test_rest_listing_search_and_ascending(http: httpx.Client) -> None:
    body = {"limit": 25, "offset": 0, "ascending": False, "search_term": "sourdough"}
    rows = http.post(f"/rest/thread/list_ask_threads?{STD}", json=body).json()
    assert [r["uuid"] for r in rows] == [sample_uuid("sourdough")]
    body = {"limit": 25, "offset": 0, "ascending": True, "search_term": ""}
    rows = http.post(f"/rest/thread/list_ask_threads?{STD}", json=body).json()
    stamps = [r["last_query_datetime"] for r in rows]
    assert stamps == sorted(stamps)


# -- thread detail ---------------------------------------------------------------------------


def test_long_thread_has_three_plain_pages(http: httpx.Client) -> None:
    pages = fetch_pages(http, sample_uuid("sourdough"))
    assert len(pages) == 3
    assert [len(p["entries"]) for p in pages] == [5, 5, 2]
    assert all(p["thread_metadata"]["title"] == "Planning a sourdough schedule" for p in pages)
    assert [p["has_next_page"] for p in pages] == [True, True, False]
    assert pages[-1]["next_cursor"] == ""
    texts = [e["text"] for p in pages for e in p["entries"]]
    assert all(isinstance(t, str) and json.loads(t)[0]["step_type"] for t in texts)


def test_cursor_must_be_percent_encoded(http: httpx.Client) -> None:
    first = http.get(thread_url(sample_uuid("sourdough"))).json()
    cursor = first["next_cursor"]
    assert any(ch in cursor for ch in "/=+&")
    raw = http.get(f"/rest/thread/{sample_uuid('sourdough')}?{STD}&cursor={cursor}")
    assert raw.status_code == 400
    assert "INVALID_CURSOR" in raw.text
    encoded = http.get(thread_url(sample_uuid("sourdough"), cursor=cursor))
    assert encoded.status_code == 200


def test_background_entries_only_on_the_last_page(emu: RunningEmulator) -> None:
    with run_emulator(page_size=1) as small, client(small) as http:
        for schematized in (False, True):
            pages = fetch_pages(http, sample_uuid("ssg"), schematized=schematized)
            assert len(pages) == 3
            assert [len(p["background_entries"]) for p in pages] == [0, 0, 3]
            assert all(p["thread_metadata"]["mode"] == "4" for p in pages)


def test_schematized_pages_carry_blocks(http: httpx.Client) -> None:
    pages = fetch_pages(http, sample_uuid("ssg"), schematized=True)
    entries = [e for p in pages for e in p["entries"]]
    assert [e["trigger"] for e in entries] == [None, "subagent_result", None]
    usages = [b["intended_usage"] for b in entries[0]["blocks"]]
    assert "workflow_root" in usages
    assert entries[1]["blocks"] == []
    assert "text" not in entries[0]


def test_schematized_without_raw_blocks_has_empty_blocks(http: httpx.Client) -> None:
    plain = fetch_pages(http, sample_uuid("sourdough"))
    schem = fetch_pages(http, sample_uuid("sourdough"), schematized=True)
    plain_ids = [e["uuid"] for p in plain for e in p["entries"]]
    schem_entries = [e for p in schem for e in p["entries"]]
    assert [e["uuid"] for e in schem_entries] == plain_ids
    assert all(e["blocks"] == [] for e in schem_entries)


def test_deleted_expired_and_unknown_threads(http: httpx.Client) -> None:
    deleted = http.get(thread_url(sample_uuid("packing")))
    assert deleted.status_code == 400
    assert "ENTRY_DELETED" in deleted.text[:200]
    expired = http.get(thread_url(sample_uuid("summer"), schematized=True))
    assert expired.status_code == 400
    assert "ENTRY_EXPIRED" in expired.text[:200]
    assert "ENTRY_DELETED" not in expired.text
    unknown = http.get(thread_url("00000000-0000-4000-8000-000000000000"))
    assert unknown.status_code == 404


# -- stats -----------------------------------------------------------------------------------


def test_stats_count_endpoints_and_threads() -> None:
    with run_emulator() as emu, client(emu) as http:
        http.get("/api/auth/session")
        graphql_page(http)
        fetch_pages(http, sample_uuid("sourdough"))
        fetch_pages(http, sample_uuid("ssg"), schematized=True)
        http.get(f"{emu.base_url}/__emulator/stats")  # control endpoints are not counted
        stats = http.get("/__emulator/stats").json()
        assert stats == emu.stats()
        assert stats["total"] == 6
        assert stats["by_endpoint"] == {
            "GET /api/auth/session": 1,
            "POST /rest/perplexity_ask/graphql": 1,
            "GET /rest/thread": 3 + 1,
        }
        assert stats["by_thread"] == {sample_uuid("sourdough"): 3, sample_uuid("ssg"): 1}
        assert http.post("/__emulator/reset-stats").status_code == 200
        assert emu.stats() == {"total": 0, "by_endpoint": {}, "by_thread": {}}


# -- spaces, models, usage, read receipts ----------------------------------------------------


def test_spaces(http: httpx.Client) -> None:
    spaces = http.get(f"/rest/collections/list_user_collections?{STD}").json()
    # Team Roadmap is forbidden to this account (it sees the spaces it may view)
    assert {s["title"] for s in spaces} == {"Ocean Notes", "Kitchen Lab", "Garden Club"}
    meta = http.get(
        f"/rest/collections/get_collection?collection_slug=kitchen-lab-9c7d21&{STD}"
    ).json()
    assert meta["title"] == "Kitchen Lab"
    assert meta["owner_user"]["permission"] == 4
    threads = http.get(
        f"/rest/collections/list_collection_threads?collection_slug=kitchen-lab-9c7d21&offset=0&{STD}"
    ).json()
    assert {t["uuid"] for t in threads} == {sample_uuid("basil"), sample_uuid("sourdough")}
    assert threads[0]["has_next_page"] is False
    assert all(t["context_uuid"] for t in threads)
    missing = http.get(f"/rest/collections/get_collection?collection_slug=nope&{STD}")
    assert missing.status_code == 404


def test_space_thread_list_pages_by_twenty(tmp_path: object) -> None:
    with run_emulator() as emu, client(emu) as http:
        for n in range(25):
            body = {
                "query_str": f"question {n}",
                "params": {
                    "model_preference": "pplx_pro",
                    "target_collection_uuid": emu.library.space_by_slug("ocean-notes-4b1e0a").uuid,  # type: ignore[union-attr]
                },
            }
            http.post("/rest/sse/perplexity_ask", json=body).read()
        url = "/rest/collections/list_collection_threads?collection_slug=ocean-notes-4b1e0a"
        first = http.get(f"{url}&offset=0&{STD}").json()
        second = http.get(f"{url}&offset=20&{STD}").json()
    assert len(first) == 20 and first[0]["has_next_page"] is True
    assert len(second) == 25 + 3 - 20 and second[0]["has_next_page"] is False


def test_create_space_and_move_threads() -> None:
    with run_emulator(listing="both") as emu, client(emu) as http:
        created = http.post(
            f"/rest/collections/create_collection?{STD}",
            json={"title": "Bot Inbox", "description": "", "emoji": "1f4c1", "access": 1},
        ).json()
        assert created["user_permission"] == 4
        assert created["slug"].startswith("bot-inbox-")
        ctx = emu.library.get(sample_uuid("tides")).context_uuid  # type: ignore[union-attr]
        moved = http.post(
            f"/rest/collections/batch_move_threads?{STD}",
            json={"context_uuids": [ctx], "new_collection_uuid": created["uuid"]},
        )
        assert moved.json()["moved"] == 1
        node = next(n for n in graphql_all(http) if n["entryId"] == sample_uuid("tides"))
        assert node["space"]["spaceUuid"] == created["uuid"]
        # The web UUID is not a context UUID: nothing moves.
        again = http.post(
            f"/rest/collections/batch_move_threads?{STD}",
            json={"context_uuids": [sample_uuid("bayes")], "new_collection_uuid": created["uuid"]},
        )
        assert again.json()["moved"] == 0


def test_models_usage_and_mark_viewed(http: httpx.Client, emu: RunningEmulator) -> None:
    models = http.get(f"/rest/models/config/v2?{STD}").json()
    assert models["default_models"]["research"] == "pplx_alpha"
    assert len(models["agentic_research_compare_models"]) == 3
    ctx = emu.library.get(sample_uuid("ssg")).context_uuid  # type: ignore[union-attr]
    usage = http.get(f"/rest/billing/credits/thread-usage?thread_id={ctx}&{STD}")
    assert usage.status_code == 200
    assert usage.json()["usage_cents"] >= 0
    wrong = http.get(f"/rest/billing/credits/thread-usage?thread_id={sample_uuid('ssg')}&{STD}")
    assert wrong.status_code == 403
    assert "thread_usage_forbidden" in wrong.text
    viewed = http.post(f"/rest/thread/mark_viewed?{STD}", json={"context_uuids": [ctx]})
    assert viewed.json() == {"status": "success"}


def test_extra_accounts_share_the_library() -> None:
    extra = {"tok-bob": ("bob@example.org", "Bob Example")}
    with run_emulator(extra_accounts=extra, listing="both") as emu:
        bob = httpx.Client(base_url=emu.base_url, cookies={SESSION_COOKIE: "tok-bob"})
        with bob, client(emu) as alice:
            assert bob.get("/api/auth/session").json()["user"]["email"] == "bob@example.org"
            assert alice.get("/api/auth/session").json()["user"]["email"] == DEFAULT_EMAIL
            assert len(graphql_all(bob)) == len(graphql_all(alice))
