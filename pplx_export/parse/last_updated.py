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
from typing import Any

# The fraction directly after the seconds field ("…:33.180330Z"); the first match only.
_FRACTION = re.compile(r"(:\d{2})\.(\d+)")


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
