"""JSON objects both ways: one object's attributes as a JSON object (the `to_json` of the
result dataclasses), and JSON text read leniently as a value of the expected kind.

Most `to_json` methods list their fields one by one, with a renamed key or a computed
value here and there; `attrs_json` takes the keys in order and the exceptions by name.
The stdlib only: a no-op `re-render --changed-only` imports this, not msgspec.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, TypeVar

T = TypeVar("T")


def attrs_json(obj: object, keys: str, **values: Any) -> dict[str, Any]:
    """`keys` (space-separated, in order) as a dict: `values[key]` if given, else `obj.key`."""
    return {key: values[key] if key in values else getattr(obj, key) for key in keys.split()}


def pairs_json(pairs: Iterable[tuple[Any, Any]], first: str, second: str) -> list[dict[str, Any]]:
    """(a, b) pairs as a list of `{first: a, second: b}` objects, in order."""
    return [{first: a, second: b} for a, b in pairs]


def loads_if(data: str | bytes, kind: type[T]) -> T | None:
    """`json.loads(data)` when the text is JSON and its value a `kind`, else None."""
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, kind) else None
