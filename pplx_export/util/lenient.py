"""Tolerant access to payloads whose shape is observed, not promised (protocol.md §5).

Every accessor treats a missing key, `null` or a value of the wrong type as empty, so one
odd field degrades only itself. Render code walking raw workflow dicts uses these too.

They are called millions of times per re-render, almost always with a value of the expected
type: each first tests `type(v) is T` (one pointer compare) before the general isinstance
path, which stays for subclasses and the odd cases (property-tested to agree).
"""

from __future__ import annotations

import math
from typing import Any

from pplx_export.util.jsontext import loads


def as_dict(value: Any) -> dict[str, Any]:
    if type(value) is dict:
        return value
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    if type(value) is list:
        return value
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str:
    """Strings pass; numbers become their text; anything else is empty."""
    if type(value) is str or isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, int | float):
        return str(value)
    return ""


def dicts(value: Any) -> list[dict[str, Any]]:
    """The dict items of a list (anything else in it is skipped)."""
    # The parser's and renderer's most frequent call: no nested as_list call.
    if type(value) is not list and not isinstance(value, list):
        return []
    return [v for v in value if type(v) is dict or isinstance(v, dict)]


def lenient_int(value: Any) -> int:
    """Sort-key conversion: None, "", non-numeric -> 0; "12" and 12.0 -> 12."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else 0  # NaN, ±Infinity (JSON allows) -> 0
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            try:
                return int(float(text))
            except (ValueError, OverflowError):
                return 0
    return 0


def optional_int(value: Any) -> int | None:
    """Like lenient_int, but a value that is not a number at all stays None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else None
    if isinstance(value, str) and value.strip():
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def decode_json(value: Any) -> Any:
    """JSON-in-string fields: dict/list pass through, a string is json.loads'ed, else None."""
    # An exact str goes straight to the decode; the rest is sorted out first (a str
    # subclass, on the general path, is decoded the same way).
    if type(value) is not str:
        if isinstance(value, dict | list):
            return value
        if not isinstance(value, str):
            return None
    try:
        return loads(value)
    except (ValueError, RecursionError):
        return None


def first(d: dict[str, Any], *keys: str) -> Any:
    """Renamed-key tolerance: the first present, non-null key wins (`step_type|type`, …)."""
    for key in keys:
        value = d.get(key)
        if value is not None:
            return value
    return None


def first_str(d: dict[str, Any], *keys: str) -> str:
    """`as_str(first(d, *keys))`, without the two calls."""
    for key in keys:
        value = d.get(key)
        if value is not None:
            return value if type(value) is str else as_str(value)
    return ""
