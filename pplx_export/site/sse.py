"""Server-sent events reader for the ask stream (protocol.md §2.12).

Events are separated by a blank line (`\\n\\n`, `\\r\\n\\r\\n` or a mix). Per event: every
`data:` line, prefix and surrounding whitespace stripped, concatenated without separator, is
one JSON document. Comment lines (`:`), `event:`/`id:` lines, events without data and data
that does not parse are skipped. A buffer left at EOF is parsed the same way. Reading stops
after the first event whose `final_sse_message` is truthy.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Iterator
from typing import Any

log = logging.getLogger("pplx_export.site")

_BOUNDARY = re.compile(rb"\r?\n\r?\n")


def parse_event(raw: bytes) -> dict[str, Any] | None:
    """One event block -> its JSON object, or None when it carries no usable data."""
    text = raw.decode("utf-8", errors="replace")
    parts = [
        line[len("data:") :].strip()
        for line in re.split(r"\r?\n|\r", text)
        if line.startswith("data:")
    ]
    if not parts:
        return None
    try:
        value = json.loads("".join(parts))
    except json.JSONDecodeError:
        log.debug("skipping an SSE event whose data is not JSON (%d bytes)", len(raw))
        return None
    return value if isinstance(value, dict) else None


def iter_events(chunks: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """Every JSON event of a byte stream, however the stream was split into chunks."""
    buffer = b""
    for chunk in chunks:
        if not chunk:
            continue
        buffer += chunk
        start = 0
        for match in _BOUNDARY.finditer(buffer):
            event = parse_event(buffer[start : match.start()])
            start = match.end()
            if event is not None:
                yield event
        buffer = buffer[start:]
    if buffer.strip():
        event = parse_event(buffer)
        if event is not None:
            yield event


def read_until_final(chunks: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """Like `iter_events`, but stop right after the event flagged `final_sse_message`."""
    for event in iter_events(chunks):
        yield event
        if event.get("final_sse_message"):
            return
