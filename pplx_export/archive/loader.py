"""The one loader of an archived thread: its files read back from disk and parsed the way
every offline reader needs it (re-render, verify, the search index, relations, capture).

`read_thread(root, rel)` reads thread.json, raw_entries.json and raw_blocks.json (with the
turns only the thread's copy of Perplexity's data export holds merged into the plain
response); `parse_read(thread, parse)` parses them. Any failure is one exception,
`errors.ThreadUnreadable`, whose message names the file and the reason, so every command
says the same thing about the same broken thread.

Below pipeline/ and search/ in the layers (search rebuilds read threads in its own workers), so
it imports only parse/ and what is under it; the file names are those of archive/raw.py,
archive/thread_json.py and archive/official.py (tests/test_archived.py checks they agree).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pplx_export.errors import SchemaError, ThreadUnreadable
from pplx_export.util.atomic import read_with_stat
from pplx_export.util.jsontext import loads

if TYPE_CHECKING:
    from pplx_export.models import Conversation

THREAD_JSON = "thread.json"
RAW_ENTRIES = "raw_entries.json"
RAW_BLOCKS = "raw_blocks.json"
OFFICIAL_RAW = "raw_official_export.json"

Stat = tuple[int, int]  # (size, mtime_ns) of a file as it was read
ParseFn = Callable[..., "Conversation"]


@dataclass
class ArchivedThread:
    """An archived thread's files as read (not parsed yet)."""

    rel: str  # the directory, relative to the archive root
    doc: dict[str, Any]  # thread.json
    plain: dict[str, Any]  # raw_entries.json as stored (the API's response)
    blocks: dict[str, Any] | None  # raw_blocks.json (search threads have none)
    merged: dict[str, Any]  # `plain` with the data export's turns (`plain` itself if none)
    stats: dict[str, Stat] = field(default_factory=dict)  # by file name, of what was read
    # The bytes read, by file name: for a caller that digests or scans them; `release()`
    # frees them before the parse (a large thread's raw files are megabytes).
    data: dict[str, bytes] = field(default_factory=dict)

    @property
    def web_uuid(self) -> str:
        return str(self.doc["web_uuid"])

    @property
    def mode_folder(self) -> str:
        return self.rel.split("/")[1] if self.rel.count("/") >= 2 else ""

    def digests(self) -> dict[str, str]:
        """sha256 of each file read (of those whose bytes are still held)."""
        return {name: hashlib.sha256(data).hexdigest() for name, data in self.data.items()}

    def release(self) -> None:
        self.data.clear()


def read_thread(root: Path | str, rel: str) -> ArchivedThread:
    """The files of the thread directory `root/rel`. Raises ThreadUnreadable (`missing`
    when thread.json or raw_entries.json does not exist)."""
    base = f"{root}{os.sep}{rel}{os.sep}"
    data: dict[str, bytes] = {}
    stats: dict[str, Stat] = {}
    doc = _read(base, THREAD_JSON, data, stats, None)
    if doc is None:
        raise ThreadUnreadable(f"{THREAD_JSON} missing", file=THREAD_JSON, missing=True)
    web_uuid = doc.get("web_uuid")
    if not isinstance(web_uuid, str) or not web_uuid:
        raise ThreadUnreadable(f"{THREAD_JSON} has no web_uuid", file=THREAD_JSON, doc=doc)
    plain = _read(base, RAW_ENTRIES, data, stats, doc)
    if plain is None:
        raise ThreadUnreadable(f"{RAW_ENTRIES} missing", file=RAW_ENTRIES, missing=True, doc=doc)
    blocks = _read(base, RAW_BLOCKS, data, stats, doc)  # plain search threads have none
    merged = _with_official(base, plain, doc)
    return ArchivedThread(rel, doc, plain, blocks, merged, stats, data)


def parse_read(thread: ArchivedThread, parse: ParseFn | None = None) -> Conversation:
    """The thread parsed from its files (`parse`: parse_thread, or an engine's stand-in),
    with the raw files as stored (never the merge: a writer may write them back). A thread
    the parser cannot read at all raises ThreadUnreadable; a parser bug propagates."""
    from pplx_export.parse.thread import parse_archived

    if parse is None:
        from pplx_export.parse.thread import parse_thread

        parse = parse_thread
    try:
        conv = parse_archived(parse, thread.merged, thread.blocks, thread.doc, thread.mode_folder)
    except SchemaError as exc:
        raise ThreadUnreadable(str(exc), doc=thread.doc) from exc
    conv.raw_plain = thread.plain
    if conv.raw_blocks is None and thread.blocks is not None:
        conv.raw_blocks = thread.blocks
    return conv


def load_thread(
    root: Path | str, rel: str, parse: ParseFn | None = None
) -> tuple[ArchivedThread, Conversation]:
    """`read_thread` then `parse_read`, the bytes read let go of before the parse."""
    thread = read_thread(root, rel)
    thread.release()
    return thread, parse_read(thread, parse)


def _read(
    base: str,
    name: str,
    data: dict[str, bytes],
    stats: dict[str, Stat],
    doc: dict[str, Any] | None,
) -> dict[str, Any] | None:
    """One JSON object file (None when it does not exist), its bytes and stat noted."""
    try:
        raw, stat = read_with_stat(base + name)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ThreadUnreadable(f"{name} unreadable: {exc}", file=name, doc=doc) from exc
    try:
        value = loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ThreadUnreadable(
            f"{name} does not parse: {exc}{_refetch(name, doc)}", file=name, doc=doc
        ) from exc
    if not isinstance(value, dict):
        raise ThreadUnreadable(f"{name} is not a JSON object", file=name, doc=doc)
    data[name], stats[name] = raw, stat
    return value


def _refetch(name: str, doc: dict[str, Any] | None) -> str:
    """What repairs a damaged raw file: only a fresh fetch can, raw files being the input
    (the next batch refetches such threads by itself)."""
    if name not in (RAW_ENTRIES, RAW_BLOCKS) or doc is None:
        return ""
    return (
        f"; `pplx-export export {doc.get('web_uuid')} --force` fetches it again "
        "(so does the next `pplx-export batch`)"
    )


def _with_official(base: str, plain: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    """`plain` with the turns only the thread's copy of the data export holds; `plain`
    itself when there is no copy or it adds nothing."""
    from pplx_export.parse.official_export import ExportShapeError, merge_plain, parse_conversation

    try:
        raw, _ = read_with_stat(base + OFFICIAL_RAW)
    except FileNotFoundError:
        return plain
    except OSError as exc:
        raise ThreadUnreadable(
            f"{OFFICIAL_RAW} unreadable: {exc}", file=OFFICIAL_RAW, doc=doc
        ) from exc
    try:
        merged: dict[str, Any] = merge_plain(plain, parse_conversation(loads(raw)))
    except (ValueError, ExportShapeError) as exc:
        raise ThreadUnreadable(
            f"{OFFICIAL_RAW} unreadable: {exc}", file=OFFICIAL_RAW, doc=doc
        ) from exc
    return merged
