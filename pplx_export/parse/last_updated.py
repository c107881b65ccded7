"""The platform's `lastUpdated` / `updatedAt` value: the canonical clock and its comparison.

`lastUpdated` is the machine-comparison key of incremental sync (protocol.md App. A). The two
listings write the same instant differently (GraphQL `…17.955282Z`, REST the naive
`…17.955282`, §9.3), and the number of fractional digits is not stable either (`.18033Z` vs
`.180330Z`). Every value is therefore brought to one form before it is stored or compared:
UTC, six fractional digits, `Z` (`util.timefmt.canonical_time`). Two forms of one instant are
equal; a value without a fraction is the instant `.000000` (one clock, one form: the old
"`.000000Z` differs from no fraction" rule of App. A could not survive a listing that writes
one and a listing that writes the other). Text that is no time compares verbatim.
"""

from __future__ import annotations

from typing import Any

from pplx_export.util.timefmt import canonical_time

__all__ = ["canonical_last_updated", "normalize_last_updated", "same_last_updated"]


def canonical_last_updated(value: Any) -> str:
    """`2026-05-29T12:25:17.955282Z` for any form of that instant; "" for non-strings."""
    return canonical_time(value)


# The name the plan and the state check have always used.
normalize_last_updated = canonical_last_updated


def same_last_updated(a: Any, b: Any) -> bool:
    """True when both values are known and name the same instant (or the same text)."""
    left, right = canonical_time(a), canonical_time(b)
    return bool(left) and left == right
