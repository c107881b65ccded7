"""Helpers shared by the tests/test_emulator_*.py files (plain httpx against the emulator)."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

import httpx

from pplx_export.emulator import RunningEmulator
from pplx_export.site import constants as C
from tools.sample_shapes import uid

STD = "version=2.18&source=default"


def schematized_query(use_cases: tuple[str, ...]) -> str:
    return (
        "with_parent_info=true&with_schematized_response=true&version=2.18&source=default"
        "&limit=100&offset=0&from_first=false"
        + "".join(f"&supported_block_use_cases={u}" for u in use_cases)
    )


# As the client asks (every use case), and as the earlier tool did (8 of them, protocol §2.4).
SCHEMATIZED = schematized_query(C.SCHEMATIZED_BLOCK_USE_CASES)
SCHEMATIZED_EARLIER = schematized_query(C.EARLIER_SCHEMATIZED_BLOCK_USE_CASES)
FIRST_HASH = "a5229c390a6a00f81764187a21885cff655670029355c663fe393cc6e98f9ebe"
NEXT_HASH = "4f6dfcb8e9d3c065aca20ca1e82ca7fe464aaffc1faefade295bb7e333199629"
BASE_VARS = {
    "includeSearchPreview": False,
    "searchTerm": None,
    "sortOrder": "NEWEST",
    "statuses": None,
    "threadTypes": None,
    "sources": None,
    "includeTemporary": None,
}


# Builder keys of the sample threads in live-site shapes (tools/sample_live.py, protocol §9).
LIVE_SHAPE_KEYS = ("bike-chain", "houseplant", "espresso", "soft-egg", "descale")


def sample_uuid(key: str) -> str:
    """UUID of a bundled sample thread, by its builder key (see sample_builder.py)."""
    return uid(f"thread:{key}")


def client(emu: RunningEmulator, **kwargs: Any) -> httpx.Client:
    return httpx.Client(base_url=emu.base_url, cookies=emu.cookies, timeout=10, **kwargs)


def thread_url(thread_id: str, *, schematized: bool = False, cursor: str | None = None) -> str:
    url = f"/rest/thread/{thread_id}?{SCHEMATIZED if schematized else STD}"
    if cursor is not None:
        url += "&cursor=" + quote(cursor, safe="")
    return url


def fetch_pages(http: httpx.Client, thread_id: str, *, schematized: bool = False) -> list[Any]:
    pages: list[Any] = []
    cursor: str | None = None
    while True:
        response = http.get(thread_url(thread_id, schematized=schematized, cursor=cursor))
        assert response.status_code == 200, response.text[:300]
        page = response.json()
        pages.append(page)
        if not (page["has_next_page"] and page["next_cursor"]):
            return pages
        cursor = page["next_cursor"]
        assert len(pages) < 50, "pagination does not end"


def graphql_page(
    http: httpx.Client, *, count: int = 25, cursor: str | None = None, hash_: str | None = None
) -> httpx.Response:
    variables: dict[str, Any] = {**BASE_VARS, "count": count}
    if cursor is None:
        op, default_hash = "LibraryThreadsRelayQuery", FIRST_HASH
    else:
        op, default_hash = "LibraryRecentThreadsPaginationQuery", NEXT_HASH
        variables["cursor"] = cursor
    body = {
        "operationName": op,
        "variables": variables,
        "extensions": {"persistedQuery": {"version": 1, "sha256Hash": hash_ or default_hash}},
    }
    return http.post("/rest/perplexity_ask/graphql", json=body)


def graphql_all(http: httpx.Client, count: int = 25) -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        data = graphql_page(http, count=count, cursor=cursor).json()
        threads = data["data"]["viewer"]["recentGroup"]["threads"]
        nodes += [edge["node"] for edge in threads["edges"]]
        if not threads["pageInfo"]["hasNextPage"]:
            return nodes
        cursor = threads["pageInfo"]["endCursor"]


def rest_all(http: httpx.Client, limit: int = 25) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    offset = 0
    while True:
        body = {"limit": limit, "offset": offset, "ascending": False, "search_term": ""}
        page = http.post(f"/rest/thread/list_ask_threads?{STD}", json=body).json()
        rows += page
        if not page or not page[0]["has_next_page"]:
            return rows
        offset += len(page)


def parse_sse(raw: bytes) -> list[dict[str, Any]]:
    """Protocol §2.12: events at blank lines; `data:` lines stripped and concatenated."""
    events = []
    for block in re.split(rb"\r?\n\r?\n", raw):
        lines = block.decode("utf-8", "replace").splitlines()
        data = "".join(line[5:].strip() for line in lines if line.startswith("data:"))
        if data:
            events.append(json.loads(data))
    return events
