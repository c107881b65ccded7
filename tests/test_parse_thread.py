"""Conversation assembly (§5.1, §4.3): identity, dates, author, space, pages, raw kept."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pplx_export.errors import SchemaError
from pplx_export.parse import merge_pages, parse_thread, row_from_thread_json

U = "0b7c2f4e-5a61-4d3b-9e8f-1c2d3e4f5a6b"


def ent(uuid: str, created: Any, **kw: Any) -> dict[str, Any]:
    base = {
        "uuid": uuid,
        "query_str": f"q {uuid}",
        "created_us": created,
        "updated_us": created,
        "context_uuid": "",
        "author_username": "",
        "text": json.dumps(
            [{"step_type": "FINAL", "content": {"answer": json.dumps({"answer": f"a {uuid}"})}}]
        ),
        "thread_url_slug": U,
    }
    base.update(kw)
    return base


def plain(*entries: Any, **meta: Any) -> dict[str, Any]:
    return {"thread_metadata": meta, "entries": list(entries), "background_entries": []}


def test_web_uuid_precedence_and_schema_error() -> None:
    p = plain(ent("a", 1))
    assert parse_thread(p, web_uuid="arg").web_uuid == "arg"
    assert parse_thread(p, None, {"entryUUID": "row"}).web_uuid == "row"
    assert parse_thread(p).web_uuid == U
    with pytest.raises(SchemaError) as err:
        parse_thread(plain(ent("a", 1, thread_url_slug="")))
    assert "thread_url_slug" in str(err.value)


@pytest.mark.parametrize(
    ("value", "path"),
    [([], "$"), ("text", "$"), (None, "$"), ({"entries": "x"}, "$.entries"), ({}, "$.entries")],
)
def test_unparseable_threads_raise_schema_error_naming_thread_and_path(
    value: Any, path: str
) -> None:
    with pytest.raises(SchemaError) as err:
        parse_thread(value, web_uuid="t-1")
    assert err.value.path == path and err.value.thread == "t-1"
    assert "t-1" in str(err.value) and path in str(err.value)


def test_url_rule() -> None:
    p = plain(ent("a", 1))
    assert parse_thread(p).url == f"https://www.perplexity.ai/search/{U}"
    conv = parse_thread(p, None, {"mode": "asi"})
    assert conv.url == f"https://www.perplexity.ai/computer/tasks/{U}" and conv.mode == "computer"
    assert parse_thread(p, url="https://www.perplexity.ai/search/given").url.endswith("given")


def test_title_psc_author_and_dates() -> None:
    p = plain(
        ent("late", 2_000_000_000_000_000, context_uuid="ctx-2", author_username="second"),
        ent("early", 1_000_000_000_000_000, context_uuid="", author_username="first"),
        title="  Spaced title  ",
    )
    conv = parse_thread(p, export_via="acct", exported_at="2035-01-01T00:00:00Z")
    assert [t.uuid for t in conv.turns] == ["early", "late"]
    assert [t.index for t in conv.turns] == [1, 2]
    assert conv.title == "Spaced title"
    assert conv.psc_uuid == "ctx-2"
    assert conv.author == "first" and conv.export_via == "acct"
    assert conv.last_updated == "2033-05-18T03:33:20Z"
    assert conv.exported_at == "2035-01-01T00:00:00Z"
    assert conv.raw_plain is p and conv.raw_blocks is None

    row = {
        "title": "Row title",
        "lastUpdated": "2035-12-26T02:12:19.927523Z",
        "authorUsername": "rowauthor",
    }
    conv = parse_thread(plain(ent("a", None)), None, row, export_via="acct")
    assert (conv.title, conv.last_updated, conv.author) == (
        "Row title",
        row["lastUpdated"],
        "rowauthor",
    )
    assert conv.psc_uuid is None
    assert parse_thread(plain(ent("a", None)), export_via="acct").author == "acct"
    assert parse_thread(plain(ent("a", None), title="   ")).title == "untitled"
    assert parse_thread(plain(ent("a", None))).last_updated == ""


def test_space_from_row_either_shape_or_collection_info_without_row() -> None:
    space = {"uuid": "s1", "title": "Space", "slug": "space-1", "emoji": "x"}
    p = plain(ent("a", 1, collection_info={"uuid": "c1", "title": "Info", "slug": "info"}))
    first = parse_thread(p, None, {"space": space}).space
    assert first is not None
    assert first.to_json() == {"uuid": "s1", "title": "Space", "slug": "space-1"}
    second = parse_thread(p, None, {"collection": space}).space
    assert second is not None and second.slug == "space-1"
    assert parse_thread(p, None, {"space": None}).space is None  # a row says: no space
    assert parse_thread(p).space.slug == "info"  # type: ignore[union-attr]


def test_row_from_thread_json_round_trip() -> None:
    tj = {
        "web_uuid": U,
        "title": "T",
        "mode": "computer",
        "lastUpdated": "L",
        "space": None,
        "author": "a",
        "url": "u",
    }
    row = row_from_thread_json(tj)
    assert row["mode"] == "COMPUTER" and row["entryUUID"] == U
    conv = parse_thread(plain(ent("a", 1)), None, row)
    assert conv.mode == "computer" and conv.last_updated == "L"


def test_multi_page_merge() -> None:
    page1 = {
        "thread_metadata": {"title": "first page"},
        "entries": [ent("b", 20)],
        "background_entries": [{"uuid": "bg1"}],
        "has_next_page": True,
    }
    page2 = {
        "thread_metadata": {"title": "ignored"},
        "entries": [ent("a", 10), ent("c", 30)],
        "background_entries": None,
    }
    merged = merge_pages([page1, "junk", page2])  # type: ignore[list-item]
    assert merged["thread_metadata"] == {"title": "first page"}
    assert [e["uuid"] for e in merged["entries"]] == ["b", "a", "c"]
    assert merged["background_entries"] == [{"uuid": "bg1"}]
    conv = parse_thread(merged)
    assert [t.uuid for t in conv.turns] == ["a", "b", "c"] and conv.title == "first page"
    assert [t.answer for t in conv.turns] == ["a a", "a b", "a c"]


def test_stable_sort_with_lenient_created_us() -> None:
    p = plain(ent("x", "12"), ent("y", None), ent("z", "junk"), ent("w", 5.0))
    assert [t.uuid for t in parse_thread(p).turns] == ["y", "z", "w", "x"]


def test_metadata_and_blocks_of_wrong_type_degrade_with_warnings() -> None:
    p = plain(ent("a", 1))
    p["thread_metadata"] = ["not", "a", "dict"]
    conv = parse_thread(p, "not blocks")  # type: ignore[arg-type]
    assert conv.metadata == {} and conv.raw_blocks is None
    assert len(conv.warnings) == 2


def test_computer_without_blocks_warns_about_background_entries() -> None:
    p = plain(ent("a", 1, search_mode="ASI"))
    p["background_entries"] = [ent("bg", 2)]
    conv = parse_thread(p)
    assert conv.mode == "computer"
    assert any("background entries" in w for w in conv.warnings)


def test_schema_error_names_the_row_thread_when_no_uuid_argument() -> None:
    with pytest.raises(SchemaError) as err:
        parse_thread({"entries": None}, None, {"entryUUID": "from-row"})
    assert err.value.thread == "from-row" and err.value.path == "$.entries"
