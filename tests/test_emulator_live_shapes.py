"""The sample threads in live-site shapes (protocol §9) are served as built; thread pages can
come newest window first; schematized pages leave out blocks whose use case was not asked.

How these shapes render is the parser's business (tests of parse/ and render/); here only
the wire and the export pipeline's files are checked.
"""

from __future__ import annotations

import base64
import json
import re
import uuid as uuidlib
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from pplx_export.emulator import DEFAULT_EMAIL, SAMPLE_DIR, Library, RunningEmulator, run_emulator
from pplx_export.emulator.blocks import USE_CASES, use_case_of
from pplx_export.site import constants as C
from pplx_export.site.api import PerplexityAPI
from pplx_export.site.client import ApiClient, ClientSettings
from pplx_export.site.thread import merge_pages
from tests.e2e_support import E2E, redacted, served_raw, thread_dirs, thread_uuid
from tests.emulator_support import (
    LIVE_SHAPE_KEYS,
    SCHEMATIZED_EARLIER,
    STD,
    client,
    fetch_pages,
    graphql_all,
    rest_all,
    sample_uuid,
    schematized_query,
)
from tests.net_fakes import make_runtime

NAIVE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$")
AWARE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$")
US_FIELDS = ("created_us", "updated_us")


@pytest.fixture(scope="module")
def emu() -> Any:
    with run_emulator(listing="both") as running:
        yield running


@pytest.fixture
def http(emu: RunningEmulator) -> Any:
    with client(emu) as session:
        yield session


def built(key: str, name: str = "raw_entries.json") -> dict[str, Any]:
    """A sample thread's raw file as the builder wrote it."""
    record = Library.load().get(sample_uuid(key))
    assert record is not None
    doc: dict[str, Any] = json.loads((SAMPLE_DIR / record.source_dir / name).read_text("utf-8"))
    return doc


def dumped(value: Any) -> str:
    """Text that differs when a key, a value or the key order does."""
    return json.dumps(value, ensure_ascii=False)


def served(http: httpx.Client, key: str, *, query: str = STD) -> dict[str, Any]:
    """Every page of a thread (plain, or schematized with `query`), merged as the client
    merges them."""
    pages = []
    url = f"/rest/thread/{sample_uuid(key)}?{query}"
    cursor = ""
    while True:
        response = http.get(url + (f"&cursor={cursor}" if cursor else ""))
        assert response.status_code == 200, response.text[:300]
        pages.append(response.json())
        if not pages[-1]["has_next_page"]:
            return merge_pages(pages)
        cursor = quote(pages[-1]["next_cursor"], safe="")


def usages(entry: dict[str, Any]) -> list[str]:
    return [b["intended_usage"] for b in entry.get("blocks", [])]


def test_every_live_shape_thread_is_listed(http: httpx.Client) -> None:
    listed = {n["entryId"] for n in graphql_all(http)}
    assert {sample_uuid(k) for k in LIVE_SHAPE_KEYS} <= listed


# -- a. an object `text` (2024) --------------------------------------------------------------


def test_object_text_thread_is_served_as_built(http: httpx.Client) -> None:
    raw = built("bike-chain")
    page = served(http, "bike-chain")
    assert dumped(page["entries"]) == dumped(raw["entries"])
    assert len(raw["entries"]) == 2
    for entry in raw["entries"]:
        body = json.loads(entry["text"])
        assert isinstance(body, dict)  # no step list
        assert set(body) == {"answer", "web_results", "chunks", "extra_web_results"}
        assert re.search(r"\[1\]", body["answer"]) and body["web_results"]
        assert all(set(r) == {"name", "url", "snippet"} for r in body["web_results"])
        assert (entry["mode"], entry["display_model"]) == ("concise", "turbo")
        for absent in ("search_mode", *US_FIELDS, "entry_created_datetime"):
            assert absent not in entry
        assert NAIVE.match(entry["updated_datetime"])
        assert entry["updated_datetime"].startswith("2024-03-14T09:1")


# -- b. blocks only --------------------------------------------------------------------------


def test_blocks_only_thread_is_served_as_built(http: httpx.Client) -> None:
    raw = built("houseplant")
    assert dumped(served(http, "houseplant")["entries"]) == dumped(raw["entries"])
    entries = raw["entries"]
    assert len(entries) == 6  # two plain pages at the default page size of 5
    assert "text" not in entries[0]
    assert all(e["text"] == "" for e in entries[1:])
    for entry in entries:
        assert usages(entry) == ["ask_text_0_markdown", "web_results"]
        markdown, results = (b for b in entry["blocks"])
        assert markdown["markdown_block"]["answer"] == "".join(markdown["markdown_block"]["chunks"])
        assert results["web_result_block"]["web_results"]
        for absent in (*US_FIELDS, "display_model"):
            assert absent not in entry
        assert AWARE.match(entry["entry_created_datetime"])
        assert AWARE.match(entry["entry_updated_datetime"])
        assert NAIVE.match(entry["updated_datetime"])
    schem = built("houseplant", "raw_blocks.json")
    for query in (schematized_query(C.SCHEMATIZED_BLOCK_USE_CASES), SCHEMATIZED_EARLIER):
        assert dumped(served(http, "houseplant", query=query)["entries"]) == dumped(
            schem["entries"]
        )
    assert all("text" not in e and not set(US_FIELDS) & set(e) for e in schem["entries"])


# -- c. a 2026 pro search: steps and blocks ---------------------------------------------------


def test_pro_search_entry_carries_steps_and_blocks(http: httpx.Client) -> None:
    raw = built("espresso")
    assert dumped(served(http, "espresso")["entries"]) == dumped(raw["entries"])
    (entry,) = raw["entries"]
    steps = json.loads(entry["text"])
    assert [s["step_type"] for s in steps] == [
        "INITIAL_QUERY",
        "SEARCH_WEB",
        "SEARCH_RESULTS",
        "URL_NAVIGATE",
        "TERMINATE",
        "FINAL",
    ]
    answer = json.loads(steps[-1]["content"]["answer"])["answer"]
    assert usages(entry) == [
        "plan",
        "pro_search_steps",
        "ask_text_0_markdown",
        "web_results",
        "media_items",
        "sources_answer_mode",
    ]
    blocks = {b["intended_usage"]: b for b in entry["blocks"]}
    assert blocks["ask_text_0_markdown"]["markdown_block"]["answer"] == answer
    assert blocks["plan"]["plan_block"]["goals"] == entry["plan"]["goals"]
    pro = blocks["pro_search_steps"]["plan_block"]
    content_keys = [next(k for k in s if k.endswith("_content")) for s in pro["steps"]]
    assert content_keys == [
        "initial_query_content",
        "search_web_content",
        "web_results_content",
        "url_navigate_content",
        "terminate_content",
    ]
    assert [s["uuid"] for s in pro["steps"]] == [s["uuid"] for s in steps[:-1]]
    media = blocks["media_items"]["media_block"]["media_items"]
    assert [m["medium"] for m in media] == ["image", "video"]
    rows = blocks["sources_answer_mode"]["sources_mode_block"]["rows"]
    assert [r["citation"] for r in rows] == [1, 2, 3]
    assert [r["web_result"]["url"] for r in rows] == [
        r["url"] for r in blocks["web_results"]["web_result_block"]["web_results"]
    ]
    assert entry["related_queries"] and all(isinstance(q, str) for q in entry["related_queries"])
    assert not set(US_FIELDS) & set(entry) and AWARE.match(entry["entry_created_datetime"])


# -- d. plain Markdown `text` ----------------------------------------------------------------


def test_plain_markdown_text_is_served_as_built(http: httpx.Client) -> None:
    raw = built("soft-egg")
    assert dumped(served(http, "soft-egg")["entries"]) == dumped(raw["entries"])
    (entry,) = raw["entries"]
    with pytest.raises(ValueError):
        json.loads(entry["text"])
    assert "[1]" in entry["text"] and entry["sources"]


# -- e. a title slug ---------------------------------------------------------------------------


def test_title_slug_names_the_thread(emu: RunningEmulator, http: httpx.Client) -> None:
    uuid = sample_uuid("descale")
    slug = next(n["slug"] for n in graphql_all(http) if n["entryId"] == uuid)
    assert slug == next(r["slug"] for r in rest_all(http) if r["uuid"] == uuid)
    words, tail = slug[:-23], slug[-22:]
    assert words == "how-do-i-descale-an-electric-kettle" and slug[-23] == "-"
    assert {"-", "_"} <= set(tail)  # split at the last hyphen and the UUID is lost
    assert str(uuidlib.UUID(bytes=base64.urlsafe_b64decode(tail + "=="))) == uuid
    raw = built("descale")
    assert {e["thread_url_slug"] for e in raw["entries"]} == {slug}
    emu.reset_stats()
    by_uuid = fetch_pages(http, uuid)
    by_slug = fetch_pages(http, slug)
    assert by_slug == by_uuid
    assert dumped(merge_pages(by_uuid)["entries"]) == dumped(raw["entries"])
    assert emu.stats()["by_thread"] == {uuid: 2}  # counted under the UUID either way
    assert http.get(f"/rest/thread/how-to-descale-{tail}?{STD}").status_code == 404


# -- newest window first -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "schematized", "windows"),
    [
        ("sourdough", False, [(7, 12), (2, 7), (0, 2)]),
        ("houseplant", False, [(1, 6), (0, 1)]),
        ("houseplant", True, [(1, 6), (0, 1)]),
    ],
)
def test_newest_first_serves_the_newest_window_first(
    key: str, schematized: bool, windows: list[tuple[int, int]]
) -> None:
    name = "raw_blocks.json" if schematized else "raw_entries.json"
    entries = [e["uuid"] for e in built(key, name)["entries"]]
    with run_emulator(faults="newest_first") as emu, client(emu) as http:
        pages = fetch_pages(http, sample_uuid(key), schematized=schematized)
    assert [[e["uuid"] for e in p["entries"]] for p in pages] == [
        entries[start:end] for start, end in windows
    ]
    assert [bool(p["next_cursor"]) for p in pages] == [True] * (len(pages) - 1) + [False]


def test_newest_first_keeps_background_entries_on_the_last_page() -> None:
    with run_emulator(faults="newest_first", page_size=1) as emu, client(emu) as http:
        pages = fetch_pages(http, sample_uuid("ssg"))
    assert [len(p["entries"]) for p in pages] == [1, 1, 1]
    assert [len(p["background_entries"]) for p in pages] == [0, 0, 3]
    assert (
        pages[0]["entries"][0]["query_str"] == "Turn the recommendation into a one-page checklist."
    )


# -- block use cases ---------------------------------------------------------------------------


def test_block_use_cases() -> None:
    assert use_case_of({"intended_usage": "ask_text"}) == "markdown"
    assert use_case_of({"intended_usage": "ask_text_0_markdown"}) == "markdown"
    assert use_case_of({"intended_usage": "workflow_root"}) == "workflow_steps"
    assert use_case_of({"intended_usage": "unified_assets"}) == "unified_assets"
    assert use_case_of({"intended_usage": "media_items"}) == "media_items"
    assert use_case_of({"intended_usage": "sources_answer_mode"}) == "answer_modes"
    assert use_case_of({"intended_usage": "x", "markdown_block": {}}) == "markdown"
    for free in ("plan", "pro_search_steps", "web_results", "something_new"):
        assert use_case_of({"intended_usage": free}) == ""


def test_client_asks_for_every_use_case_the_emulator_knows() -> None:
    assert set(C.SCHEMATIZED_BLOCK_USE_CASES) == USE_CASES


def test_blocks_of_unlisted_use_cases_are_withheld(http: httpx.Client) -> None:
    everything = [usages(e) for e in built("espresso", "raw_blocks.json")["entries"]]
    assert everything == [
        ["plan", "pro_search_steps", "ask_text_0_markdown", "web_results", "media_items",
         "sources_answer_mode"],
    ]  # fmt: skip
    earlier = served(http, "espresso", query=SCHEMATIZED_EARLIER)
    assert [usages(e) for e in earlier["entries"]] == [
        ["plan", "pro_search_steps", "ask_text_0_markdown", "web_results"]
    ]
    nothing = served(http, "espresso", query=schematized_query(()))
    assert [usages(e) for e in nothing["entries"]] == [["plan", "pro_search_steps", "web_results"]]
    # A computer thread's workflow and asset blocks need their use cases too.
    computer = served(http, "ssg", query=schematized_query(("markdown",)))
    assert all(usages(e) in ([], ["plan"]) for e in computer["entries"])
    assert all(usages(e) == [] for e in computer["background_entries"])
    # The plain response is never filtered: it carries what the entry holds.
    assert usages(served(http, "espresso")["entries"][0])[-2:] == [
        "media_items",
        "sources_answer_mode",
    ]


def test_the_client_receives_every_block(emu: RunningEmulator) -> None:
    settings = ClientSettings(base_url=emu.base_url, max_attempts=1)
    with PerplexityAPI(ApiClient(settings, make_runtime(), cookies=emu.cookies)) as api:
        for key in ("espresso", "houseplant", "heat-pumps", "ssg"):
            got = api.thread_schematized(sample_uuid(key))
            raw = built(key, "raw_blocks.json")
            assert [usages(e) for e in got["entries"]] == [usages(e) for e in raw["entries"]]
            assert [usages(e) for e in got["background_entries"]] == [
                usages(e) for e in raw["background_entries"]
            ]


# -- the export pipeline ---------------------------------------------------------------------------


@pytest.mark.parametrize("faults", ["", "newest_first"])
def test_index_and_batch_export_every_live_shape_thread(tmp_path: Path, faults: str) -> None:
    with run_emulator(faults=faults) as emu:
        env = E2E(emu, tmp_path, account="alice")
        env.write_files(DEFAULT_EMAIL)
        assert env.cli("index").exit_code == 0
        result = env.cli("batch", "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["failed"] == 0
        dirs = {thread_uuid(d): d for d in thread_dirs(env.out)}
        for key in LIVE_SHAPE_KEYS:
            directory = dirs[sample_uuid(key)]
            for name in ("thread.json", "conversation.md", "turns/turn_0001.md"):
                assert (directory / name).is_file(), (key, name)
            stored = json.loads((directory / "raw_entries.json").read_text("utf-8"))
            assert stored == redacted(served_raw(emu, sample_uuid(key), schematized=False))
        # no display_model anywhere: the mode is uncertain, so the blocks were fetched too
        houseplant = dirs[sample_uuid("houseplant")]
        stored = json.loads((houseplant / "raw_blocks.json").read_text("utf-8"))
        assert stored == redacted(served_raw(emu, sample_uuid("houseplant"), schematized=True))
