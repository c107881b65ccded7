"""UTC timestamps: parsing the forms payloads and archives hold, and the one stamp format we write.

Pure: no clock. Payload times (protocol.md §5.6):

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
# "2035-12-26 00:03 UTC": the second-precision fallback some archived thread.json files hold.
_UTC_SUFFIX = re.compile(r"\s*UTC$", re.IGNORECASE)
_DATE_PREFIX = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")
# The one stamp format thread.json, state files and the config are written with.
STAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
# The canonical clock of the platform's `lastUpdated` (what the tool stores and compares).
CANONICAL_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
# A time of day must be present: a bare date is no `lastUpdated`.
_HAS_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


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


def us_to_iso(value: int | None) -> str:
    moment = from_us(value)
    return format_utc(moment) if moment else ""


def parse_time(value: Any) -> datetime | None:
    """A timezone-aware UTC datetime for sorting and `--since`, or None when unreadable.

    ISO 8601 goes through `parse_iso` (naive = UTC); on top of it this accepts the
    `YYYY-MM-DD HH:MM UTC` fallback some archived thread.json files hold, and a bare date.
    """
    if not isinstance(value, str) or not value.strip():
        return None
    text = _UTC_SUFFIX.sub("", value.strip())
    parsed = parse_iso(text)
    if parsed is not None:
        return parsed
    match = _DATE_PREFIX.match(text)
    if not match:
        return None
    try:
        return datetime(int(match[1]), int(match[2]), int(match[3]), tzinfo=UTC)
    except ValueError:
        return None


def format_utc(moment: datetime) -> str:
    """`%Y-%m-%dT%H:%M:%SZ` in UTC (naive means UTC): thread.json, state files, the config."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime(STAMP_FORMAT)


def canonical_time(value: Any) -> str:
    """The one form every stored or compared `lastUpdated` takes: UTC, µs, `Z`.

    The listings disagree (protocol.md §9.3): GraphQL says `2026-05-29T12:25:17.955282Z`,
    the REST listing the naive `2026-05-29T12:25:17.955282` (UTC), older archives
    `.18033Z` or `2035-12-26 00:03 UTC`. All of them become
    `2026-05-29T12:25:17.955282Z`. Text that is no time at all comes back stripped but
    otherwise verbatim (compared as text, never equal to a time); non-strings become "".
    """
    if not isinstance(value, str):
        return ""
    text = value.strip()
    if not _HAS_TIME.match(text):
        return text
    moment = parse_time(text)
    return moment.strftime(CANONICAL_FORMAT) if moment is not None else text
