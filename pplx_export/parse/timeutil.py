"""Timestamp helpers for payload times (protocol.md §5.6). Pure: no clock.

The API mixes naive ISO strings (`updated_datetime`), aware ones with `+00:00`, `+0000` or
`Z`, and integer microseconds. Naive values are UTC by convention; comparing a naive with an
aware datetime raises in Python, so everything here comes back aware (UTC) or None.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

# `+0000` / `-0530` (no colon) -> `+00:00`; fromisoformat on 3.11 accepts the colon form.
_COMPACT_OFFSET = re.compile(r"([+-]\d{2})(\d{2})$")
# More than six fractional digits is not accepted by fromisoformat: cut to microseconds.
_LONG_FRACTION = re.compile(r"(\.\d{6})\d+")


def parse_iso(value: Any) -> datetime | None:
    """ISO-8601 text -> aware UTC datetime; naive means UTC; anything unparseable -> None."""
    if not isinstance(value, str):
        return None
    return _parse_iso(value)


@lru_cache(maxsize=4096)
def _parse_iso(value: str) -> datetime | None:
    # Cached: attribution compares the same few payload times over and over, and datetimes
    # are immutable.
    text = value.strip()
    if not text or len(text) > 64:
        return None
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    text = _COMPACT_OFFSET.sub(r"\1:\2", text)
    text = _LONG_FRACTION.sub(r"\1", text)
    try:
        parsed = datetime.fromisoformat(text)
        if parsed.tzinfo is None:
            return parsed.replace(tzinfo=UTC)
        return parsed.astimezone(UTC)
    except (ValueError, OverflowError):  # overflow: year 9999 with a negative offset
        return None


def from_us(value: int | None) -> datetime | None:
    """Microseconds since the epoch -> aware UTC datetime (None when absent or absurd)."""
    if value is None:
        return None
    try:
        return datetime.fromtimestamp(value / 1_000_000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def format_utc_seconds(value: datetime) -> str:
    """The second-precision `%Y-%m-%dT%H:%M:%SZ` form used by thread.json."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def us_to_iso(value: int | None) -> str:
    moment = from_us(value)
    return format_utc_seconds(moment) if moment else ""
