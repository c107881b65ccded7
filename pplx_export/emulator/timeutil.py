"""Timestamp helpers for the emulator: every `lastUpdated` it serves is a µs ISO `Z` string."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def format_us(dt: datetime) -> str:
    """`2026-11-20T09:15:02.123456Z`: the GraphQL `updatedAt` form."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def from_us(value: int) -> datetime:
    return EPOCH + timedelta(microseconds=value)


def to_us(dt: datetime) -> int:
    return (dt - EPOCH) // timedelta(microseconds=1)


def is_iso_z(value: str) -> bool:
    return bool(_ISO_Z.match(value))


def parse_time(value: str) -> datetime | None:
    """Parse the time forms archives contain; naive values are UTC. None if unparseable.

    Seen in archives: `…T…Z`, `…T…+00:00`, `…T…+0000`, naive `…T…`, and the earlier tool's
    display form `2035-12-26 00:03 UTC`.
    """
    text = value.strip()
    if not text:
        return None
    if text.endswith(" UTC"):
        text = text[:-4].replace(" ", "T")
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    if re.search(r"[+-]\d{4}$", text):
        text = text[:-2] + ":" + text[-2:]
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)
