"""SSE reader: CRLF, multi-line data, comments, junk, split chunks, leftover buffer, final."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from pplx_export.site.sse import iter_events, parse_event, read_until_final


def _chunks(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


STREAM = (
    b": keep-alive comment\n\n"
    b'event: message\ndata: {"status": "PENDING", "backend_uuid": "b-1"}\n\n'
    b'data: {"text": "par\r\ndata: tial", "status": "PENDING"}\r\n\r\n'
    b"data: not json at all\n\n"
    b"event: ping\n\n"
    b"data: [1, 2]\n\n"
    b'data: {"status": "COMPLETED",\ndata:  "final_sse_message": true}\n\n'
    b'data: {"after": "final"}\n\n'
)


def test_parses_crlf_multiline_and_skips_noise() -> None:
    events = list(iter_events([STREAM]))
    assert events == [
        {"status": "PENDING", "backend_uuid": "b-1"},
        {"text": "partial", "status": "PENDING"},
        {"status": "COMPLETED", "final_sse_message": True},
        {"after": "final"},
    ]


def test_stops_after_final_message() -> None:
    events = list(read_until_final([STREAM]))
    assert events[-1] == {"status": "COMPLETED", "final_sse_message": True}
    assert {"after": "final"} not in events


def test_every_split_of_the_stream_gives_the_same_events() -> None:
    expected = list(iter_events([STREAM]))
    for size in range(1, 20):
        assert list(iter_events(_chunks(STREAM, size))) == expected, size


def test_leftover_buffer_at_eof_is_parsed() -> None:
    events = list(iter_events([b'data: {"a": 1}\n\ndata: {"b"', b": 2}"]))
    assert events == [{"a": 1}, {"b": 2}]


def test_truncated_tail_is_dropped_not_fatal() -> None:
    assert list(iter_events([b'data: {"a": 1}\n\ndata: {"b": '])) == [{"a": 1}]


def test_utf8_split_across_chunks() -> None:
    payload = 'data: {"text": "重要な結果 ✓"}\n\n'.encode()
    events = list(iter_events(_chunks(payload, 3)))
    assert events == [{"text": "重要な結果 ✓"}]


def test_invalid_utf8_is_replaced() -> None:
    assert parse_event(b'data: {"t": "a\xffb"}') == {"t": "a\ufffdb"}


def test_empty_and_dataless_events() -> None:
    assert parse_event(b"") is None
    assert parse_event(b"id: 3\nevent: x") is None
    assert list(iter_events([b"", b"\n\n", b"\r\n\r\n"])) == []


@given(
    st.lists(st.dictionaries(st.text(max_size=5), st.text(max_size=20), max_size=3), max_size=5),
    st.integers(min_value=1, max_value=17),
    st.booleans(),
)
def test_roundtrip_property(objs: list[dict[str, str]], size: int, crlf: bool) -> None:
    sep = b"\r\n" if crlf else b"\n"
    stream = b"".join(b"data: " + json.dumps(o).encode() + sep + sep for o in objs)
    assert list(iter_events(_chunks(stream, size))) == objs
