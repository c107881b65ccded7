"""Raw response files (protocol §6.9) and write-token redaction (product.md §2.5).

Raw files are the fidelity anchor: compact JSON (`json.dumps` default separators, UTF-8
unescaped, no trailing newline, the same bytes as the earlier tool), written durably.
"""

from __future__ import annotations

import json
import re
from typing import Any

RAW_ENTRIES = "raw_entries.json"
RAW_BLOCKS = "raw_blocks.json"
TOKEN_KEY = "read_write_token"
REDACTED = "<redacted>"


# A token key whose value is a non-empty string other than the redaction marker.
_LIVE_TOKEN = re.compile(rb'"read_write_token"\s*:\s*"(?!<redacted>")[^"]')


def has_live_token(data: bytes) -> bool:
    """Cheap byte scan: could this raw file still hold a write token?"""
    return _LIVE_TOKEN.search(data) is not None


def redact_tokens(obj: Any) -> tuple[Any, int]:
    """A copy of `obj` with every non-empty `read_write_token` value replaced, and the count.

    Unchanged subtrees are shared, not copied: a raw file without tokens costs one walk.
    """
    if isinstance(obj, dict):
        count = 0
        out: dict[str, Any] | None = None
        for key, value in obj.items():
            if key == TOKEN_KEY and value not in (None, "", REDACTED):
                new, n = REDACTED, 1
            else:
                new, n = redact_tokens(value)
            if n:
                count += n
                if out is None:
                    out = dict(obj)
                out[key] = new
        return (out if out is not None else obj), count
    if isinstance(obj, list):
        count = 0
        items: list[Any] | None = None
        for i, value in enumerate(obj):
            new, n = redact_tokens(value)
            if n:
                count += n
                if items is None:
                    items = list(obj)
                items[i] = new
        return (items if items is not None else obj), count
    return obj, 0


def dump_raw(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")
