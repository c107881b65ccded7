"""Raw response files (protocol §6.9) and write-token redaction (product.md §2.5).

Raw files are the fidelity anchor: compact JSON (`json.dumps` default separators, UTF-8
unescaped, no trailing newline, the same bytes as the earlier tool), written durably.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from pplx_export.util.signed_url import SIGNATURE_PARAMS

RAW_ENTRIES = "raw_entries.json"
RAW_BLOCKS = "raw_blocks.json"
TOKEN_KEY = "read_write_token"
REDACTED = "<redacted>"


# A token key whose value is a non-empty string other than the redaction marker.
_LIVE_TOKEN = re.compile(rb'"read_write_token"\s*:\s*"(?!<redacted>")[^"]')


def has_live_token(data: bytes) -> bool:
    """Cheap byte scan: could this raw file still hold a write token?"""
    return _LIVE_TOKEN.search(data) is not None


# A token key with a string value, in json.dumps' layout. (The pattern starts with its
# literal, so `re` finds candidates with a fast substring search; what precedes a match is
# checked by hand: a lookbehind first would make `re` try every byte of the file.)
_TOKEN_KEY = b'"read_write_token"'
_TOKEN_ITEM = re.compile(rb'"read_write_token": "((?:[^"\\]|\\.)*)"')
_REDACTED_ITEM = b'"read_write_token": "<redacted>"'
# What json.dumps puts before a key: "{" or ", ". So the quote is unescaped, the start of a
# string, and a string followed by ": " is a key.
_BEFORE_KEY = frozenset(b"{ ")


def redact_token_bytes(data: bytes) -> tuple[bytes, int] | None:
    """`redact_tokens` on the file's bytes: `data` with each live token value replaced in
    place, and the count; every other byte stays as it was (for a file of the earlier tool,
    that is `dump_raw(redact_tokens(json.loads(data))[0])`, without decoding or encoding).

    None when the bytes do not allow it: a token key that is not a key with a string value
    in json.dumps' layout (a null or numeric token, a key or value that merely contains the
    name, other separators), or a layout json.dumps does not write (indented, ASCII-escaped).
    The caller then redacts the parsed document and encodes it.
    """
    if not _dumps_layout(data):
        return None
    matches = list(_TOKEN_ITEM.finditer(data))
    if len(matches) != data.count(_TOKEN_KEY):
        return None
    out: list[bytes] = []
    count = at = 0
    for match in matches:
        start = match.start()
        if start == 0 or data[start - 1] not in _BEFORE_KEY:
            return None
        value = match.group(1)
        if b"\\" in value:  # escaped: compare what it decodes to, as the tree walk does
            text = json.loads(b'"' + value + b'"')
        else:
            text = value.decode("utf-8", "surrogateescape")
        if text in ("", REDACTED):
            continue
        count += 1
        out += (data[at:start], _REDACTED_ITEM)
        at = match.end()
    out.append(data[at:])
    return b"".join(out), count


def _dumps_layout(data: bytes) -> bool:
    """False for bytes json.dumps(ensure_ascii=False) never writes: a newline (indented) or
    a \\u escape of anything but a control character (ensure_ascii). Substring searches
    only: a regular expression here would try every byte of the file."""
    if b"\n" in data:
        return False
    if not data.isascii():
        # ensure_ascii output is pure ASCII; json.dumps never mixes UTF-8 and \u escapes.
        # (Payload strings hold escaped JSON, full of `\\u`: not worth walking.)
        return True
    i = data.find(b"\\u")
    while i >= 0:
        run = 1  # backslashes ending at i: only an odd run makes this `u` an escape
        while i - run >= 0 and data[i - run] == 0x5C:
            run += 1
        if run % 2 and not (data[i + 2 : i + 4] == b"00" and data[i + 4 : i + 5] in b"01"):
            return False
        i = data.find(b"\\u", i + 2)
    return True


def redact_tokens(obj: Any) -> tuple[Any, int]:
    """A copy of `obj` with every non-empty `read_write_token` value replaced, and the count.

    Unchanged subtrees are shared, not copied: a raw file without tokens costs one walk.
    """
    members: Iterable[tuple[Any, Any]]
    if isinstance(obj, dict):
        members = obj.items()
    elif isinstance(obj, list):
        members = enumerate(obj)  # an int key is never TOKEN_KEY
    else:
        return obj, 0
    count = 0
    out: Any = None
    for key, value in members:
        if key == TOKEN_KEY and value not in (None, "", REDACTED):
            new, n = REDACTED, 1
        else:
            new, n = redact_tokens(value)
        if n:
            count += n
            if out is None:
                out = dict(obj) if isinstance(obj, dict) else list(obj)
            out[key] = new
    return (out if out is not None else obj), count


def dump_raw(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


# A stored raw file keeps a signed URL (it says which file) and drops its signature
# (util/signed_url), as it drops a write token.
SIGNATURE_REDACTED = b"REDACTED"
_SIGNATURE_KEYS = frozenset(p.encode() for p in SIGNATURE_PARAMS)
# A URL with a query, as it stands in JSON text (no quote, backslash or space in it; nor the
# `)` or `]` that closes a Markdown link around it).
_URL_QUERY = re.compile(rb"(https?://[^\s\"'<>\\?]+\?)([^\s\"'<>\\#)\]]+)")


def redact_signatures(data: bytes) -> tuple[bytes, int]:
    """`data` with the value of every signature parameter of a signed URL replaced (the URL
    and its other parameters kept), and the count."""
    count = 0
    if b"://" not in data:
        return data, 0

    def query(m: re.Match[bytes]) -> bytes:
        nonlocal count
        pairs = m.group(2).split(b"&")
        for i, pair in enumerate(pairs):
            key, eq, value = pair.partition(b"=")
            if eq and value != SIGNATURE_REDACTED and key.lower() in _SIGNATURE_KEYS:
                pairs[i] = key + b"=" + SIGNATURE_REDACTED
                count += 1
        return m.group(1) + b"&".join(pairs)

    out = _URL_QUERY.sub(query, data)
    return out, count
