"""Loading arbitrary archive directories: derived ids, titles, modes, timestamps, order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from pplx_export.emulator import Library, run_emulator
from pplx_export.emulator.library import slug_uuid
from pplx_export.emulator.timeutil import format_us, parse_time


def write_thread(
    root: Path,
    rel: str,
    *,
    entries: list[dict[str, Any]],
    thread_json: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
) -> None:
    directory = root / rel
    directory.mkdir(parents=True)
    plain = {"thread_metadata": metadata or {}, "entries": entries, "background_entries": []}
    (directory / "raw_entries.json").write_text(json.dumps(plain))
    if thread_json is not None:
        (directory / "thread.json").write_text(json.dumps(thread_json))


def entry(uuid: str, updated_us: int, **extra: Any) -> dict[str, Any]:
    return {"uuid": uuid, "query_str": f"question {uuid}", "text": "[]", "updated_us": updated_us,
            **extra}  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2030-01-02T03:04:05.123456Z", "2030-01-02T03:04:05.123456Z"),
        ("2030-01-02T03:04:05Z", "2030-01-02T03:04:05.000000Z"),
        ("2030-01-02T03:04:05+00:00", "2030-01-02T03:04:05.000000Z"),
        ("2030-01-02T04:04:05+0100", "2030-01-02T03:04:05.000000Z"),
        ("2030-01-02T03:04:05.5", "2030-01-02T03:04:05.500000Z"),
        ("2030-01-02 03:04 UTC", "2030-01-02T03:04:00.000000Z"),
    ],
)
def test_parse_time_forms(text: str, expected: str) -> None:
    parsed = parse_time(text)
    assert parsed is not None
    assert format_us(parsed) == expected


def test_parse_time_rejects_garbage() -> None:
    assert parse_time("") is None
    assert parse_time("yesterday") is None


def test_derivations_and_order(tmp_path: Path) -> None:
    # lastUpdated verbatim (µs Z), display form, no thread.json at all, no fraction.
    write_thread(tmp_path, "bob/search/2030-01-01_a_aaaa",
                 entries=[entry("a1", 0, thread_url_slug="thread-a")],
                 thread_json={"web_uuid": "thread-a", "title": "Alpha", "mode": "search",
                              "lastUpdated": "2030-01-01T00:00:00.500000Z"})  # fmt: skip
    write_thread(tmp_path, "bob/council/2030-01-01_b_bbbb",
                 entries=[entry("b1", 0)],
                 thread_json={"web_uuid": "thread-b", "title": "Beta", "mode": "council",
                              "lastUpdated": "2030-01-01 00:03 UTC"})  # fmt: skip
    write_thread(tmp_path, "bob/computer/2030-01-01_c_cccc",
                 entries=[entry("c1", 1_893_456_000_000_001, thread_url_slug="thread-c")],
                 metadata={"title": "Gamma", "mode": "4"})  # fmt: skip
    no_fraction = {"web_uuid": "thread-d", "lastUpdated": "2030-01-01T00:00:00Z"}
    write_thread(tmp_path, "bob/search/2030-01-01_d_dddd", entries=[entry("d1", 0)],
                 thread_json=no_fraction)  # fmt: skip
    library = Library.load(tmp_path)
    gamma = library.get("thread-c")
    assert gamma is not None
    assert (gamma.title, gamma.mode, gamma.listing_mode) == ("Gamma", "computer", "COMPUTER")
    assert gamma.last_updated == "2030-01-01T00:00:00.000001Z"
    beta = library.get("thread-b")
    assert beta is not None and beta.last_updated == "2030-01-01T00:03:00.000000Z"
    delta = library.get("thread-d")
    assert delta is not None and delta.title == "question d1"
    order = [t.uuid for t in library.listing()]
    # 00:03 > 00:00.5 > 00:00.000001 > 00:00 (a string sort would put thread-d first)
    assert order == ["thread-b", "thread-a", "thread-c", "thread-d"]
    assert library.next_timestamp() == "2030-01-01T00:03:01.000001Z"


def test_duplicate_uuid_keeps_the_newest_copy(tmp_path: Path) -> None:
    for day, stamp in (
        ("01", "2030-01-01T00:00:00.000000Z"),
        ("02", "2030-01-02T00:00:00.000000Z"),
    ):
        write_thread(tmp_path, f"bob/search/2030-01-{day}_same_ssss",
                     entries=[entry(f"e{day}", 0)],
                     thread_json={"web_uuid": "same", "title": f"copy {day}",
                                  "lastUpdated": stamp})  # fmt: skip
    library = Library.load(tmp_path)
    assert len(library.threads) == 1
    record = library.get("same")
    assert record is not None and record.title == "copy 02"


def test_missing_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        Library.load(tmp_path / "nope")


def test_title_slugs_name_their_thread(tmp_path: Path) -> None:
    # protocol §9.4's checked pair; a UUID's own last 22 characters must not be decoded
    assert slug_uuid("x-Xs6pxUAfRwqwP8Wg0SsM6Q") == "5ecea9c5-401f-470a-b03f-c5a0d12b0ce9"
    assert slug_uuid("5ecea9c5-401f-470a-b03f-c5a0d12b0ce9") == ""
    assert slug_uuid("stubtest01") == slug_uuid("no-tail") == ""
    slug = "what-is-a-kettle-Xs6pxUAfRwqwP8Wg0SsM6Q"
    write_thread(tmp_path, "bob/search/2030-01-01_k_5ecea9c5",
                 entries=[entry("k1", 1_893_456_000_000_000, thread_url_slug=slug)])  # fmt: skip
    library = Library.load(tmp_path)
    record = library.get(slug)
    assert record is not None and record.uuid == "5ecea9c5-401f-470a-b03f-c5a0d12b0ce9"
    assert library.canonical_id(slug) == record.uuid and library.canonical_id("nope") == "nope"
    with run_emulator(library) as emu:
        with httpx.Client(base_url=emu.base_url, cookies=emu.cookies) as http:
            pages = [http.get(f"/rest/thread/{t}").json() for t in (record.uuid, slug)]
        assert pages[0] == pages[1] and pages[0]["entries"][0]["uuid"] == "k1"
        assert emu.stats()["by_thread"] == {record.uuid: 2}


def test_blocks_of_plain_entries(tmp_path: Path) -> None:
    """A blocks-only plain entry (protocol §9.1) keeps its blocks in the schematized answer of
    a thread without raw_blocks.json; a touched turn does not copy them."""
    answer = {"intended_usage": "ask_text_0_markdown", "markdown_block": {"answer": "Hi."}}
    write_thread(tmp_path, "bob/search/2030-01-01_b_bbbb",
                 entries=[{"uuid": "b1", "query_str": "hello", "blocks": [answer]}],
                 thread_json={"web_uuid": "thread-b"})  # fmt: skip
    with run_emulator(tmp_path) as emu:
        emu.mutate(touch="thread-b")
        with httpx.Client(base_url=emu.base_url, cookies=emu.cookies) as http:
            query = "with_schematized_response=true&supported_block_use_cases=markdown"
            page = http.get(f"/rest/thread/thread-b?{query}").json()
    first, touched = page["entries"]
    assert first["blocks"] == [answer]
    assert touched["query_str"] == "Any news since last time?"
    assert touched["blocks"] == []  # its answer is its text, not a copy of turn 1's blocks
