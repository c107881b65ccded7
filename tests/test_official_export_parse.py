"""The pure half of `import`: the streamed reader of the conversations array, and the
export's conversations matched and merged by question text (protocol §9.8)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from pplx_export.parse.official_export import (
    ExportShapeError,
    match_turns,
    merge_plain,
    missing_entries,
    parse_conversation,
    synthetic_plain,
)
from pplx_export.parse.thread import parse_thread
from pplx_export.util import jsonstream
from pplx_export.util.jsonstream import StreamFormatError, iter_array_in_object


def _conv(*questions: str, uuid: str = "u-1") -> dict[str, Any]:
    return {
        "context_uuid": "ctx",
        "context_title": questions[0],
        "created_at": "2025-01-01T10:00:00+00:00",
        "updated_at": "2025-01-01T10:00:00+00:00",  # older than the last entry
        "mode": "COPILOT",
        "collection_uuid": None,
        "entries": [
            {
                "entry_uuid": uuid if n == 0 else f"e-{n}",
                "query": q,
                "answer": f"answer to {q} [1]",
                "created_at": f"2025-01-0{n + 1}T10:00:00+00:00",
                "label": None,
                "query_status": "COMPLETED",
                "engine_mode": None,
            }
            for n, q in enumerate(questions)
        ],
    }


@pytest.mark.parametrize("chunk", [1, 2, 7, 64, 1 << 20])
def test_the_array_streams_whatever_the_chunk_size(
    monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(jsonstream, "CHUNK", chunk)
    doc = {
        "before": {"n": 12345, "s": "ü ✓ [not, the, array]"},
        "conversations": [_conv("a"), _conv("b ✓", "c"), 7, "x", None],
        "after": 1.5e10,
    }
    data = ("\ufeff" + json.dumps(doc, ensure_ascii=False, indent=2)).encode("utf-8")
    read: list[int] = []
    out = list(iter_array_in_object(io.BytesIO(data), "conversations", on_bytes=read.append))
    assert out == doc["conversations"]
    assert sum(read) == len(data)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        '{"other": []}',
        '{"conversations": [{"a": 1}, {"b":',
        '{"conversations": [1 2]}',
        '{"conversations": {}}',
        '{"conversations": []} trailing',
        '{"conversations": [1], ',
    ],
)
def test_damage_is_a_format_error(text: str) -> None:
    with pytest.raises(StreamFormatError):
        list(iter_array_in_object(io.BytesIO(text.encode()), "conversations"))


def test_elements_before_the_damage_are_handed_out() -> None:
    got: list[Any] = []
    with pytest.raises(StreamFormatError, match="truncated"):
        for item in iter_array_in_object(
            io.BytesIO(b'{"conversations": [1, 2, {"x'), "conversations"
        ):
            got.append(item)
    assert got == [1, 2]


def test_conversation_fields_and_the_later_update_time() -> None:
    conv = parse_conversation(_conv("first?", "second?", uuid="ABC"))
    assert conv.web_uuid == "abc" and conv.title == "first?"
    assert conv.updated_at == "2025-01-02T10:00:00+00:00"  # the last entry is later
    with pytest.raises(ExportShapeError):
        parse_conversation({"context_uuid": "x", "entries": []})
    with pytest.raises(ExportShapeError):
        parse_conversation([1])


def test_turns_match_by_question_text_in_order() -> None:
    archived = ["a", "b  ", "a", "c"]
    assert match_turns(archived, ["a", "a", "b", "x", "c"]) == [0, 2, None, None, 3]
    assert match_turns(archived, ["a", " b", "a", "c"]) == [0, 1, 2, 3]


def test_missing_turns_go_where_they_belong_and_api_entries_stay() -> None:
    plain: dict[str, Any] = {
        "thread_metadata": {"title": "t"},
        "entries": [
            {"uuid": "p1", "query_str": "one", "text": "API one"},
            {"uuid": "p2", "query_str": "", "trigger": "subagent_result", "text": "[]"},
            {"uuid": "p3", "query_str": "three", "text": "API three"},
        ],
    }
    conv = parse_conversation(_conv("zero", "one", "two", "three", "four"))
    assert [(at, e.query) for at, e in missing_entries(plain, conv)] == [
        (0, "zero"),
        (1, "two"),
        (3, "four"),
    ]
    merged = merge_plain(plain, conv)
    assert [e.get("query_str") for e in merged["entries"]] == [
        "zero",
        "one",
        "two",
        "",
        "three",
        "four",
    ]
    assert plain["entries"][0]["text"] == "API one" and len(plain["entries"]) == 3
    assert merge_plain(merged, conv) is merged  # nothing more to add: idempotent
    parsed = parse_thread(merged, None, None, web_uuid="u-1")
    imported = [t.query for t in parsed.turns if t.metadata.imported_from]
    assert imported == ["zero", "two", "four"]
    api = [t.answer for t in parsed.turns if not t.metadata.imported_from and t.query]
    assert api == ["API one", "API three"]


def test_a_recovered_thread_parses_with_its_answers_and_no_sources() -> None:
    conv = parse_conversation(_conv("q1", "q2"))
    parsed = parse_thread(synthetic_plain(conv), None, None, web_uuid=conv.web_uuid)
    assert [(t.query, t.answer) for t in parsed.turns] == [
        ("q1", "answer to q1 [1]"),
        ("q2", "answer to q2 [1]"),
    ]
    assert all(t.metadata.imported_from == "official_export" for t in parsed.turns)
    assert not parsed.citations and not parsed.losses
