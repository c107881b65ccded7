"""Tolerant access to payloads whose shape is observed, not promised (protocol.md §5).

Every accessor treats a missing key, `null` or a value of the wrong type as empty, so one
odd field degrades only itself. Render code walking raw workflow dicts uses these too.
"""

from __future__ import annotations

import math
from typing import Any

from pplx_export.util.jsontext import loads


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str:
    """Strings pass; numbers become their text; anything else is empty."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, int | float):
        return str(value)
    return ""


def dicts(value: Any) -> list[dict[str, Any]]:
    """The dict items of a list (anything else in it is skipped)."""
    # The parser's and renderer's most frequent call: no nested as_list call.
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, dict)]


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
    if isinstance(value, dict | list):
        return value
    if isinstance(value, str):
        try:
            return loads(value)
        except (ValueError, RecursionError):
            return None
    return None


def first(d: dict[str, Any], *keys: str) -> Any:
    """Renamed-key tolerance: the first present, non-null key wins (`step_type|type`, …)."""
    for key in keys:
        value = d.get(key)
        if value is not None:
            return value
    return None


def first_str(d: dict[str, Any], *keys: str) -> str:
    return as_str(first(d, *keys))
