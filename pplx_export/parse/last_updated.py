"""The platform's `lastUpdated` / `updatedAt` value: comparison and lenient parsing.

`lastUpdated` is the machine-comparison key of incremental sync (protocol.md App. A). The API
sends microsecond ISO strings, but the number of fractional digits is not stable between
listings (`.18033Z` vs `.180330Z`), so equality compares a normalised form. Only the
fractional seconds are normalised; everything else must match verbatim. A value without a
fraction never equals one with an all-zero fraction: that is the deliberate safe side (a
spurious re-export costs one fetch, a missed update loses content).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from pplx_export.parse.timeutil import format_utc_seconds, parse_iso

# The fraction directly after the seconds field ("…:33.180330Z"); the first match only.
_FRACTION = re.compile(r"(:\d{2})\.(\d+)")
# "2035-12-26 00:03 UTC": the second-precision fallback some archived thread.json files hold.
_UTC_SUFFIX = re.compile(r"\s*UTC$", re.IGNORECASE)
_DATE_PREFIX = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")


def normalize_last_updated(value: Any) -> str:
    """Strip trailing zeros of the fractional seconds, keeping one digit if all are zeros.

    `.180330Z` -> `.18033Z`; `.000000Z` -> `.0Z`; no fraction stays without one.
    Non-strings become "" (an unknown value equals nothing but another unknown value).
    """
    if not isinstance(value, str):
        return ""

    def _strip(match: re.Match[str]) -> str:
        digits = match.group(2).rstrip("0") or "0"
        return f"{match.group(1)}.{digits}"

    return _FRACTION.sub(_strip, value, count=1)


def same_last_updated(a: Any, b: Any) -> bool:
    """True when both values are known and equal after fractional normalisation."""
    left, right = normalize_last_updated(a), normalize_last_updated(b)
    return bool(left) and left == right


def parse_last_updated(value: Any) -> datetime | None:
    """A timezone-aware UTC datetime for sorting and `--since`, or None when unreadable.

    ISO 8601 goes through `timeutil.parse_iso` (naive = UTC); on top of it this accepts the
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
    """The stamp format of state and config bookkeeping: `%Y-%m-%dT%H:%M:%SZ`, in UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return format_utc_seconds(moment)
