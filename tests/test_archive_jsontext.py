"""pplx_export.util.jsontext must reproduce json.dumps(indent=n, ensure_ascii=False) exactly."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pplx_export.util.jsontext import dumps_compact, dumps_indented, identical, loads

FIXTURES = Path(__file__).parent / "fixtures" / "archive"

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
keys = st.text() | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(keys, inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=400)
@given(values, st.sampled_from([0, 1, 2, 4]))
def test_matches_json_dumps(value: Any, indent: int) -> None:
    assert dumps_indented(value, indent) == json.dumps(value, ensure_ascii=False, indent=indent)


def test_special_values() -> None:
    doc = {
        "nan": math.nan,
        "inf": [math.inf, -math.inf],
        1.5: "float key",
        2: "int key",
        True: "bool key",
        None: "null key",
        "s": 'quote " backslash \\ newline \n tab \t nul \x00 ü 中 \u2028',
        "empty": [{}, [], ""],
    }
    assert dumps_indented(doc, 1) == json.dumps(doc, ensure_ascii=False, indent=1)


def test_every_fixture_document() -> None:
    paths = sorted(FIXTURES.glob("*/*/*/*.json"))
    assert paths
    for path in paths:
        doc = json.loads(path.read_text(encoding="utf-8"))
        assert dumps_indented(doc, 1) == json.dumps(doc, ensure_ascii=False, indent=1), path


def test_unserialisable_raises_like_json() -> None:
    with pytest.raises(TypeError):
        dumps_indented({"a": object()}, 1)
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises((ValueError, RecursionError)):
        dumps_indented(cyclic, 1)


# `identical` stands in for "these two documents dump to the same text" (the writer skips
# dumping a thread.json or manifest identical to the one on disk).
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2) | st.text(max_size=2),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3)
    ),
    max_leaves=20,
)


def _shuffled(value: Any, seed: int) -> Any:
    """The same value with every dict's keys reordered (reversed when seed is odd)."""
    if isinstance(value, dict):
        items = [(k, _shuffled(v, seed)) for k, v in value.items()]
        return dict(reversed(items) if seed % 2 else items)
    if isinstance(value, list):
        return [_shuffled(v, seed) for v in value]
    return value


@settings(max_examples=400)
@given(json_values, json_values, st.integers(0, 3))
def test_identical_means_same_dump(a: Any, b: Any, seed: int) -> None:
    for x, y in ((a, b), (a, json.loads(json.dumps(a))), (a, _shuffled(a, seed))):
        same = json.dumps(x, ensure_ascii=False) == json.dumps(y, ensure_ascii=False)
        assert identical(x, y) == same, (x, y)


def test_identical_examples() -> None:
    assert identical({"a": 1, "b": [1, {"c": None}]}, {"a": 1, "b": [1, {"c": None}]})
    assert not identical({"a": 1, "b": 2}, {"b": 2, "a": 1})  # equal, other key order
    assert not identical({"a": [{"x": 1, "y": 2}]}, {"a": [{"y": 2, "x": 1}]})
    assert not identical([1], [1.0]) and not identical([1], [True]) and not identical(0, False)
    assert not identical({"a": 1}, {"a": 1, "b": 2})


def _outcome(fn: Any, data: Any) -> tuple[str, str]:
    try:
        return "ok", json.dumps(fn(data))  # NaN-safe comparison
    except (ValueError, RecursionError) as exc:
        return "error", type(exc).__name__


_DOCS = st.lists(
    st.sampled_from(['{"a": [1, 2.5, null]}', " ", "\n", "1", '"é"', "]", "{", "NaN", "x", ","])
    | st.text(max_size=3),
    max_size=6,
).map("".join)


@settings(max_examples=500)
@given(_DOCS, st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-32-le"]))
def test_loads_is_json_loads(text: str, encoding: str) -> None:
    assert _outcome(loads, text) == _outcome(json.loads, text)
    try:
        data = text.encode(encoding)
    except UnicodeEncodeError:
        return
    assert _outcome(loads, data) == _outcome(json.loads, data)


wide_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()  # any size: past 64 bits too
    | st.floats()  # NaN and infinities too (json.dumps writes them; json.loads reads them)
    | st.text(st.characters(), max_size=4),  # lone surrogates too
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(st.characters(), max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
)


def _nan_free(value: Any) -> bool:
    # NaN != NaN: documents holding one are compared through _outcome's dumps instead.
    if isinstance(value, float):
        return not math.isnan(value)
    if isinstance(value, list):
        return all(_nan_free(v) for v in value)
    if isinstance(value, dict):
        return all(_nan_free(v) for v in value.values())
    return True


@settings(max_examples=400)
@given(wide_values, st.booleans(), st.sampled_from([None, 1, 2]))
def test_loads_of_any_json_document_is_json_loads_value(
    value: Any, ascii_only: bool, indent: int | None
) -> None:
    # Through msgspec when it accepts the text, else the stdlib: the value json.loads gives,
    # with the same types (1 vs 1.0) and key order.
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    for data in (text, text.encode("utf-8", "surrogatepass")):
        if _nan_free(value):
            assert identical(loads(data), json.loads(data)), text
        else:
            assert _outcome(loads, data) == _outcome(json.loads, data), text


@pytest.mark.parametrize(
    "text",
    [
        "123456789012345678901234567890",  # past 64 bits: exact, never a float
        "-1e400",  # json.loads: -inf (msgspec refuses; the stdlib path decides)
        '"\\ud800"',  # a lone surrogate escape
        '{"a": 1, "a": 2, "b": 3}',  # the last duplicate wins, in first-seen order
        "NaN",
        '"a\x01b"',  # a raw control character: an error either way
        "\ufeff{}",  # a BOM in a str: an error either way
        '{"\ud800": null}',  # a raw lone surrogate in a str (not encodable to UTF-8)
    ],
)
def test_loads_edge_cases_are_json_loads(text: str) -> None:
    assert _outcome(loads, text) == _outcome(json.loads, text)
    data = text.encode("utf-8", "surrogatepass")
    assert _outcome(loads, data) == _outcome(json.loads, data)


@given(json_values)
def test_dumps_compact_reads_back_as_the_same_value(value: Any) -> None:
    data = dumps_compact(value)
    assert loads(data) == json.loads(json.dumps(value))
    assert dumps_compact(value) == data  # deterministic


def test_dumps_compact_keeps_what_msgspec_refuses() -> None:
    for value in ({"big": 2**70}, ["\ud800"], {"n": [1.5, -0.0]}):
        assert loads(dumps_compact(value)) == value
