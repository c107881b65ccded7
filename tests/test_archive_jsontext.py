"""pplx_export.jsontext must reproduce json.dumps(indent=n, ensure_ascii=False) exactly."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pplx_export.jsontext import dumps_indented

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
