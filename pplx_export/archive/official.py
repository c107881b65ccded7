"""A thread directory's copy of its conversation in Perplexity's own data export (§9.8).

`raw_official_export.json` holds the export's conversation as it was in the file (it is an
input like the other raw files, so `history/` keeps it too). Every offline reader merges
the turns it has and the API's response lacks into the plain response before parsing
(`with_official`); the API's own raw file is never changed by it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pplx_export.archive.raw import dump_raw
from pplx_export.errors import ArchiveError
from pplx_export.parse.official_export import (
    ExportConversation,
    ExportShapeError,
    merge_plain,
    parse_conversation,
)
from pplx_export.util.atomic import atomic_write_bytes
from pplx_export.util.jsontext import loads

OFFICIAL_RAW = "raw_official_export.json"


def read_official_raw(directory: Path | str) -> Any | None:
    """The stored export conversation (a dict), or None when the thread has none."""
    path = os.path.join(directory, OFFICIAL_RAW)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ArchiveError(f"{OFFICIAL_RAW} unreadable: {exc}") from exc
    try:
        return loads(data)
    except ValueError as exc:
        raise ArchiveError(f"{OFFICIAL_RAW} unreadable: {exc}") from exc


def read_official(directory: Path | str) -> ExportConversation | None:
    raw = read_official_raw(directory)
    if raw is None:
        return None
    try:
        return parse_conversation(raw)
    except ExportShapeError as exc:
        raise ArchiveError(f"{OFFICIAL_RAW}: {exc}") from exc


def with_official(directory: Path | str, plain: Any) -> Any:
    """`plain` with the turns only the thread's export copy has; `plain` itself (the same
    object) when there is no copy or it adds nothing."""
    conv = read_official(directory)
    if conv is None or not isinstance(plain, dict):
        return plain
    return merge_plain(plain, conv)


def write_official(directory: Path, raw: Any) -> bool:
    """Store the export's conversation durably; False when the file holds it already."""
    data = dump_raw(raw)
    path = directory / OFFICIAL_RAW
    try:
        if path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    atomic_write_bytes(path, data, durable=True)
    return True
