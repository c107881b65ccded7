"""Payload timestamps: naive means UTC; every offset form parses; junk is None."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from pplx_export.util.timefmt import from_us, parse_iso, us_to_iso

REF = datetime(2035, 12, 25, 23, 59, 59, 500000, tzinfo=UTC)


@pytest.mark.parametrize(
    "text",
    [
        "2035-12-25T23:59:59.500000",
        "2035-12-25T23:59:59.5Z",
        "2035-12-25T23:59:59.500000+00:00",
        "2035-12-25T23:59:59.500000+0000",
        "2035-12-26T01:59:59.5+02:00",
        "2035-12-26T01:59:59.500000+0200",
        "2035-12-25T23:59:59.500000123Z",
        " 2035-12-25 23:59:59.5z ",
    ],
)
def test_parse_iso_forms_are_equal_and_aware(text: str) -> None:
    parsed = parse_iso(text)
    assert parsed == REF and parsed is not None and parsed.tzinfo is not None


@pytest.mark.parametrize(
    "junk",
    [
        None,
        "",
        "sometime",
        12,
        "2035-13-01",
        "x" * 1000,
        "9999-12-31T23:59:59-23:59",
        ["2035-01-01"],
    ],
)
def test_parse_iso_junk_is_none(junk: Any) -> None:
    assert parse_iso(junk) is None


def test_microseconds() -> None:
    assert from_us(2082240000000000) == datetime(2035, 12, 26, tzinfo=UTC)
    assert from_us(None) is None and from_us(10**30) is None
    assert us_to_iso(2082240000000000) == "2035-12-26T00:00:00Z"
    assert us_to_iso(None) == ""
