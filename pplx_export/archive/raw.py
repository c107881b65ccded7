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


# A token key where json.dumps puts a key (after "{" or ", ": an unescaped quote, so the
# start of a string, and a string followed by ": " is a key), with a string value.
_TOKEN_KEY = b'"read_write_token"'
_TOKEN_ITEM = re.compile(rb'(?<=[{ ])"read_write_token": "((?:[^"\\]|\\.)*)"')
_REDACTED_ITEM = b'"read_write_token": "<redacted>"'
# Bytes json.dumps(ensure_ascii=False) never writes: a newline (indented) or a \u escape of
# anything but a control character (ensure_ascii). Such a file is re-encoded as before.
# (Only an odd run of backslashes before the u is an escape: `\\u` is a backslash and a u.)
_NOT_DUMPS_LAYOUT = re.compile(rb"\n|(?<!\\)(?:\\\\)*\\u(?!00[01][0-9a-fA-F])")


def redact_token_bytes(data: bytes) -> tuple[bytes, int] | None:
    """`redact_tokens` on the file's bytes: `data` with each live token value replaced in
    place, and the count; every other byte stays as it was (for a file of the earlier tool,
    that is `dump_raw(redact_tokens(json.loads(data))[0])`, without decoding or encoding).

    None when the bytes do not allow it: a token key that is not a key with a string value
    in json.dumps' layout (a null or numeric token, a key or value that merely contains the
    name, other separators), or a layout json.dumps does not write (indented, ASCII-escaped).
    The caller then redacts the parsed document and encodes it.
    """
    if _NOT_DUMPS_LAYOUT.search(data):
        return None
    items = _TOKEN_ITEM.findall(data)
    if len(items) != data.count(_TOKEN_KEY):
        return None
    count = 0

    def replace(match: re.Match[bytes]) -> bytes:
        nonlocal count
        value = match.group(1)
        if b"\\" in value:  # escaped: compare what it decodes to, as the tree walk does
            text = json.loads(b'"' + value + b'"')
        else:
            text = value.decode("utf-8", "surrogateescape")
        if text in ("", REDACTED):
            return match.group(0)
        count += 1
        return _REDACTED_ITEM

    out = _TOKEN_ITEM.sub(replace, data)
    return out, count


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
