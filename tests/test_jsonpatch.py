"""util/jsonpatch: RFC 6902 operations and RFC 6901 pointers (the examples of RFC 6902 §A)."""

from __future__ import annotations

from typing import Any

import pytest

from pplx_export.util.jsonpatch import PatchError, apply_patch, get_value, parse_pointer


@pytest.mark.parametrize(
    ("doc", "ops", "expected"),
    [
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/baz", "value": "qux"}],
            {"foo": "bar", "baz": "qux"},
        ),
        (
            {"foo": ["bar", "baz"]},
            [{"op": "add", "path": "/foo/1", "value": "qux"}],
            {"foo": ["bar", "qux", "baz"]},
        ),
        ({"foo": [1]}, [{"op": "add", "path": "/foo/-", "value": 2}], {"foo": [1, 2]}),
        ({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
        (
            {"foo": ["bar", "qux", "baz"]},
            [{"op": "remove", "path": "/foo/1"}],
            {"foo": ["bar", "baz"]},
        ),
        ({"baz": "qux"}, [{"op": "replace", "path": "/baz", "value": "boo"}], {"baz": "boo"}),
        ({"a": [1, 2]}, [{"op": "replace", "path": "/a/0", "value": 9}], {"a": [9, 2]}),
        (None, [{"op": "replace", "path": "", "value": {"chunks": ["Hey"]}}], {"chunks": ["Hey"]}),
        (
            {"foo": {"bar": 1}},
            [{"op": "move", "from": "/foo/bar", "path": "/qux"}],
            {"foo": {}, "qux": 1},
        ),
        ({"a": [1, 2, 3]}, [{"op": "move", "from": "/a/0", "path": "/a/2"}], {"a": [2, 3, 1]}),
        (
            {"a": {"b": 1}},
            [{"op": "copy", "from": "/a", "path": "/c"}],
            {"a": {"b": 1}, "c": {"b": 1}},
        ),
        (
            {"a/b": 1, "m~n": 2},
            [
                {"op": "test", "path": "/a~1b", "value": 1},
                {"op": "test", "path": "/m~0n", "value": 2},
            ],
            {"a/b": 1, "m~n": 2},
        ),
        (
            {"chunks": ["a"]},
            [
                {"op": "add", "path": "/chunks/1", "value": "b"},
                {"op": "add", "path": "/chunks/2", "value": "c"},
            ],
            {"chunks": ["a", "b", "c"]},
        ),
    ],
)
def test_operations(doc: Any, ops: list[dict[str, Any]], expected: Any) -> None:
    assert apply_patch(doc, ops) == expected


@pytest.mark.parametrize(
    ("doc", "ops"),
    [
        ({"a": 1}, [{"op": "remove", "path": "/b"}]),
        ({"a": 1}, [{"op": "replace", "path": "/b", "value": 2}]),
        ({"a": [1]}, [{"op": "add", "path": "/a/3", "value": 2}]),
        ({"a": [1]}, [{"op": "add", "path": "/a/01", "value": 2}]),
        ({"a": [1]}, [{"op": "remove", "path": "/a/1"}]),
        ({"a": 1}, [{"op": "test", "path": "/a", "value": 2}]),
        ({"a": 1}, [{"op": "frobnicate", "path": "/a"}]),
        ({"a": 1}, [{"op": "add", "path": "a", "value": 2}]),
        ({"a": 1}, [{"op": "add", "path": "/x/y", "value": 2}]),
        ({"a": 1}, [{"op": "add", "path": "/a/y", "value": 2}]),
        ({"a": {"b": {}}}, [{"op": "move", "from": "/a", "path": "/a/b/c"}]),
        ({"a": 1}, [{"op": "add", "path": "/b"}]),
        ({"a": 1}, ["not an op"]),
    ],
)
def test_bad_operations_raise_and_change_nothing(doc: Any, ops: list[Any]) -> None:
    before = repr(doc)
    with pytest.raises(PatchError):
        apply_patch(doc, ops)
    assert repr(doc) == before


def test_the_input_is_never_changed_and_values_are_copied() -> None:
    doc = {"chunks": ["a"]}
    value = {"deep": [1]}
    out = apply_patch(doc, [{"op": "add", "path": "/x", "value": value}])
    value["deep"].append(2)
    assert doc == {"chunks": ["a"]} and out["x"] == {"deep": [1]}


def test_pointers() -> None:
    assert parse_pointer("") == []
    assert parse_pointer("/a~1b/~01") == ["a/b", "~1"]
    assert get_value({"a": [{"b": 3}]}, "/a/0/b") == 3
