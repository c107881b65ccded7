"""The lenient accessors' `type(v) is T` fast paths return exactly what the plain isinstance
definitions return, for every kind of value (subclasses, bools, numbers, nested JSON)."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pplx_export.util.lenient import (
    as_dict,
    as_list,
    as_str,
    decode_json,
    dicts,
    first,
    first_str,
)


class SubDict(dict[str, Any]):
    pass


class SubList(list[Any]):
    pass


class SubStr(str):
    pass


# The definitions before the fast paths, as the reference.
def ref_as_dict(value: Any) -> Any:
    return value if isinstance(value, dict) else {}


def ref_as_list(value: Any) -> Any:
    return value if isinstance(value, list) else []


def ref_as_str(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, int | float):
        return str(value)
    return ""


def ref_dicts(value: Any) -> list[Any]:
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, dict)]


def ref_decode_json(value: Any) -> Any:
    if isinstance(value, dict | list):
        return value
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return None
    return None


def ref_first_str(d: dict[str, Any], *keys: str) -> str:
    for key in keys:
        if d.get(key) is not None:
            return ref_as_str(d[key])
    return ""


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.text().map(SubStr),
    st.binary(),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(SubList),
        st.tuples(inner),
        st.dictionaries(st.text(max_size=3), inner, max_size=4),
        st.dictionaries(st.text(max_size=3), inner, max_size=4).map(SubDict),
    ),
    max_leaves=12,
)


def same(a: Any, b: Any) -> bool:
    """Equal, of the same type, and (for containers handed through) the same object."""
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return type(a) is type(b) and a == b


@given(values)
def test_as_dict_as_list_as_str_dicts_agree(value: Any) -> None:
    assert as_dict(value) is value if isinstance(value, dict) else as_dict(value) == {}
    assert same(as_dict(value), ref_as_dict(value))
    assert same(as_list(value), ref_as_list(value))
    assert as_str(value) == ref_as_str(value)
    assert type(as_str(value)) is type(ref_as_str(value))
    got, want = dicts(value), ref_dicts(value)
    assert len(got) == len(want) and all(a is b for a, b in zip(got, want, strict=True))


json_text = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text()),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=10,
).map(lambda v: json.dumps(v, ensure_ascii=False))


@given(st.one_of(values, json_text, st.text(), json_text.map(SubStr)))
def test_decode_json_agrees(value: Any) -> None:
    got, want = decode_json(value), ref_decode_json(value)
    assert got == want or (got != got and want != want)  # NaN in a list compares unequal
    assert type(got) is type(want)


@given(
    st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), values, max_size=4),
    st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=4),
)
def test_first_str_agrees(d: dict[str, Any], keys: list[str]) -> None:
    assert first_str(d, *keys) == ref_first_str(d, *keys)
    assert first_str(d, *keys) == as_str(first(d, *keys))
