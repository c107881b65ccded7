"""The emulator's in-memory library, loaded read-only from a directory laid out as an archive.

Every `*/*/*/raw_entries.json` (with its sibling `raw_blocks.json` and `thread.json`) is one
thread, so our archives, the earlier tool's and the bundled sample can all be replayed. The
directory is never written: mutations (touch, delete, expire, new threads, new spaces) live
in memory only.

An optional `_emulator.json` at the library root marks emulator-only facts (see
docs/emulator.md): `deleted` / `expired` thread UUIDs, `expired_assets`, `asset_bodies`
(text served for an asset's file), `forbidden_spaces` (slugs answered with
VIEW_COLLECTION_NOT_ALLOWED), `space_viewers` (slug -> emails of the accounts that may view
a forbidden space anyway), `space_quirks` (slug -> a listing quirk, see routes/space_view.py)
and `space_only` (threads of other space members: in their space's listing, in no library
listing).

Long because `Library` is one in-memory store: loading the directory, the listings, thread
pages, spaces and the mutations read and change the same records under one lock, and the
raw-to-page conversions below it (`plain_steps`, `schematized_entry`) serve only it.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import threading
import uuid as uuidlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pplx_export.emulator import timeutil
from pplx_export.util.lenient import as_dict, as_list, as_str, dicts, lenient_int

JSON = dict[str, Any]

MANIFEST_NAME = "_emulator.json"
SAMPLE_DIR = Path(__file__).resolve().parent / "sample"

OK, DELETED, EXPIRED = "ok", "deleted", "expired"


@dataclass
class SpaceRecord:
    uuid: str
    title: str
    slug: str
    info: JSON = field(default_factory=dict)  # a `collection_info` seen on an entry, if any
    description: str = ""
    emoji: str = "1f4c1"


@dataclass
class ThreadRecord:
    uuid: str  # web UUID (GraphQL entryId)
    title: str
    mode: str  # archive mode: search | deep-research | computer | council | study
    last_updated: str  # µs ISO Z
    plain: JSON  # {"thread_metadata", "entries", "background_entries"}
    blocks: JSON | None  # same shape, schematized; None when the archive has no raw_blocks
    author: str = ""
    space_uuid: str = ""
    state: str = OK
    listed: bool = True
    space_only: bool = False  # another member's thread: listed in its space only
    source_dir: str = ""

    @property
    def updated_at(self) -> datetime:
        return timeutil.parse_time(self.last_updated) or timeutil.EPOCH

    @property
    def entries(self) -> list[JSON]:
        return dicts(self.plain.get("entries"))

    def _first_value(self, *keys: str) -> str:
        """The first non-empty value of `keys` over the entries in order (within an entry,
        the first key with a value, as `entry.get(a) or entry.get(b)` reads)."""
        for entry in self.entries:
            raw = None
            for key in keys:
                raw = entry.get(key)
                if raw:
                    break
            value = as_str(raw)
            if value:
                return value
        return ""

    @property
    def context_uuid(self) -> str:
        return self._first_value("context_uuid")

    @property
    def display_model(self) -> str:
        return self._first_value("display_model")

    @property
    def first_query(self) -> str:
        return self._first_value("query_str", "query")

    @property
    def listing_mode(self) -> str:
        """The GraphQL node `mode`: only SEARCH and COMPUTER are observed."""
        return "COMPUTER" if self.mode == "computer" else "SEARCH"

    @property
    def slug(self) -> str:
        return self._first_value("thread_url_slug") or self.uuid

    @property
    def status(self) -> str:
        meta = as_dict(self.plain.get("thread_metadata"))
        return (as_str(meta.get("thread_status")) or "completed").upper()


def _read_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)


def _mode_of(thread_json: JSON, plain: JSON) -> str:
    mode = as_str(thread_json.get("mode"))
    if mode:
        return mode
    meta = as_dict(plain.get("thread_metadata"))
    return "computer" if as_str(meta.get("mode")) == "4" else "search"


def _last_updated(thread_json: JSON, plain: JSON) -> str:
    """thread.json `lastUpdated` verbatim when it is already µs ISO Z, else the best derivation.

    Older archives hold a display form (`2035-12-26 00:03 UTC`) or nothing; the newest entry
    `updated_us`, then `thread_metadata.updated_at`, then that display form are used instead.
    """
    value = as_str(thread_json.get("lastUpdated"))
    if value and timeutil.is_iso_z(value):
        return value
    newest = max((lenient_int(e.get("updated_us")) for e in dicts(plain.get("entries"))), default=0)
    if newest > 0:
        return timeutil.format_us(timeutil.from_us(newest))
    meta = as_dict(plain.get("thread_metadata"))
    for candidate in (as_str(meta.get("updated_at")), value):
        parsed = timeutil.parse_time(candidate)
        if parsed is not None:
            return timeutil.format_us(parsed)
    return timeutil.format_us(timeutil.EPOCH)


_TITLE_SLUG = re.compile(r"^.+-([A-Za-z0-9_-]{22})$")


def _is_uuid(value: str) -> bool:
    try:
        uuidlib.UUID(value)
    except ValueError:
        return False
    return True


def slug_uuid(slug: str) -> str:
    """The thread UUID a pre-2026 title slug names (`<words>-<22 chars>`: the UUID's 16 bytes
    in unpadded base64url, protocol §9.4), else ""."""
    match = _TITLE_SLUG.match(slug)
    if not match or _is_uuid(slug):  # a UUID's last 22 characters decode too
        return ""
    try:
        raw = base64.urlsafe_b64decode(match.group(1) + "==")
    except ValueError:
        return ""
    return str(uuidlib.UUID(bytes=raw)) if len(raw) == 16 else ""


def _thread_uuid(thread_json: JSON, plain: JSON, directory: Path) -> str:
    value = as_str(thread_json.get("web_uuid"))
    if value:
        return value
    for entry in dicts(plain.get("entries")):
        slug = as_str(entry.get("thread_url_slug"))
        if slug:
            return slug_uuid(slug) or slug
        value = as_str(entry.get("backend_uuid"))
        if value:
            return value
    return directory.name.rsplit("_", 1)[-1]


class Library:
    """Threads and spaces, guarded by one lock (the server is threaded)."""

    def __init__(self, threads: list[ThreadRecord], spaces: list[SpaceRecord], manifest: JSON):
        self.manifest = manifest  # `_emulator.json` as loaded (upkeep.py reads its own keys)
        self.lock = threading.RLock()
        self.threads: dict[str, ThreadRecord] = {}
        for record in threads:
            known = self.threads.get(record.uuid)
            # The same thread exported twice (date directory changed): the newest copy wins.
            if known is None or known.updated_at < record.updated_at:
                self.threads[record.uuid] = record
        self.spaces: dict[str, SpaceRecord] = {s.uuid: s for s in spaces}
        self.expired_assets: set[str] = {as_str(v) for v in as_list(manifest.get("expired_assets"))}
        self.asset_bodies: dict[str, str] = {
            k: as_str(v) for k, v in as_dict(manifest.get("asset_bodies")).items()
        }
        self.forbidden_spaces: set[str] = {
            as_str(v) for v in as_list(manifest.get("forbidden_spaces"))
        }
        # Threads this account may not read (another account's private thread).
        self.forbidden_threads: set[str] = {
            as_str(v) for v in as_list(manifest.get("forbidden_threads"))
        }
        self.space_viewers: dict[str, set[str]] = {
            as_str(slug): {as_str(e).lower() for e in as_list(emails)}
            for slug, emails in as_dict(manifest.get("space_viewers")).items()
        }
        self.space_quirks: dict[str, str] = {
            as_str(k): as_str(v) for k, v in as_dict(manifest.get("space_quirks")).items()
        }
        for thread_id in as_list(manifest.get("space_only")):
            other = self.threads.get(as_str(thread_id))
            if other is not None:
                other.space_only = True
        for key, state in (("deleted", DELETED), ("expired", EXPIRED)):
            for thread_id in as_list(manifest.get(key)):
                marked = self.threads.get(as_str(thread_id))
                if marked is not None:
                    marked.state = state

    # -- loading -------------------------------------------------------------------------

    @classmethod
    def load(cls, directory: Path | None = None) -> Library:
        root = Path(directory) if directory is not None else SAMPLE_DIR
        if not root.is_dir():
            raise FileNotFoundError(f"library directory not found: {root}")
        manifest_path = root / MANIFEST_NAME
        manifest = as_dict(_read_json(manifest_path)) if manifest_path.is_file() else {}
        threads: list[ThreadRecord] = []
        spaces: dict[str, SpaceRecord] = {}
        for raw_path in sorted(root.glob("*/*/*/raw_entries.json")):
            thread_dir = raw_path.parent
            plain = as_dict(_read_json(raw_path))
            blocks_path = thread_dir / "raw_blocks.json"
            blocks = as_dict(_read_json(blocks_path)) if blocks_path.is_file() else None
            tj_path = thread_dir / "thread.json"
            thread_json = as_dict(_read_json(tj_path)) if tj_path.is_file() else {}
            meta = as_dict(plain.get("thread_metadata"))
            entries = dicts(plain.get("entries"))
            title = as_str(thread_json.get("title")) or as_str(meta.get("title"))
            if not title and entries:
                title = as_str(entries[0].get("query_str"))
            space = as_dict(thread_json.get("space"))
            space_uuid = as_str(space.get("uuid"))
            if space_uuid and space_uuid not in spaces:
                info = next(
                    (
                        as_dict(e.get("collection_info"))
                        for e in entries
                        if as_str(as_dict(e.get("collection_info")).get("uuid")) == space_uuid
                    ),
                    {},
                )
                spaces[space_uuid] = SpaceRecord(
                    uuid=space_uuid,
                    title=as_str(space.get("title")),
                    slug=as_str(space.get("slug")) or space_uuid,
                    info=info,
                    description=as_str(info.get("description")),
                    emoji=as_str(info.get("emoji")) or "1f4c1",
                )
            author = as_str(thread_json.get("author"))
            if not author and entries:
                author = as_str(entries[0].get("author_username"))
            threads.append(
                ThreadRecord(
                    uuid=_thread_uuid(thread_json, plain, thread_dir),
                    title=title.strip() or "untitled",
                    mode=_mode_of(thread_json, plain),
                    last_updated=_last_updated(thread_json, plain),
                    plain=plain,
                    blocks=blocks,
                    author=author or thread_dir.parent.parent.name,
                    space_uuid=space_uuid,
                    source_dir=str(thread_dir.relative_to(root)),
                )
            )
        return cls(threads, list(spaces.values()), manifest)

    # -- queries -------------------------------------------------------------------------

    def get(self, thread_id: str) -> ThreadRecord | None:
        """By UUID (any case), or by a thread's title slug (exact)."""
        with self.lock:
            found = self.threads.get(thread_id) or self.threads.get(thread_id.lower())
            if found is None and thread_id:
                found = next((t for t in self.threads.values() if t.slug == thread_id), None)
            return found

    def canonical_id(self, thread_id: str) -> str:
        """The UUID of the thread a request names (by UUID or title slug), else as given."""
        record = self.get(thread_id) if thread_id else None
        return record.uuid if record is not None else thread_id

    def listing(
        self, *, ascending: bool = False, search: str = "", space_view: bool = False
    ) -> list[ThreadRecord]:
        """Listed threads, newest first by lastUpdated (ties: UUID, for a stable order).

        Other members' threads (`space_only`) are in a space's listing (`space_view`) only."""
        with self.lock:
            rows = [
                t for t in self.threads.values() if t.listed and (space_view or not t.space_only)
            ]
        needle = search.strip().lower()
        if needle:
            rows = [t for t in rows if needle in t.title.lower() or needle in t.first_query.lower()]
        # Compare instants, not strings: `…00Z` and `…00.5Z` sort wrongly as text.
        rows.sort(key=lambda t: (t.updated_at, t.uuid), reverse=not ascending)
        return rows

    def by_context(self, context_uuid: str) -> list[ThreadRecord]:
        with self.lock:
            return [t for t in self.threads.values() if t.context_uuid == context_uuid]

    def by_backend_uuid(self, backend_uuid: str) -> ThreadRecord | None:
        with self.lock:
            for record in self.threads.values():
                for entry in record.entries:
                    if as_str(entry.get("backend_uuid")) == backend_uuid:
                        return record
        return None

    def space_by_slug(self, slug: str) -> SpaceRecord | None:
        with self.lock:
            return next((s for s in self.spaces.values() if s.slug == slug), None)

    def space_threads(self, space_uuid: str) -> list[ThreadRecord]:
        return [t for t in self.listing(space_view=True) if t.space_uuid == space_uuid]

    def iter_threads(self) -> Iterator[ThreadRecord]:
        with self.lock:
            records = list(self.threads.values())
        yield from records

    def next_timestamp(self) -> str:
        """A µs ISO Z value later than every thread's lastUpdated (deterministic, no clock)."""
        with self.lock:
            newest = max((t.updated_at for t in self.threads.values()), default=timeutil.EPOCH)
        return timeutil.format_us(newest + timedelta(seconds=1, microseconds=1))

    # -- mutations (memory only) ---------------------------------------------------------

    def touch(self, thread_id: str, new_uuid: str) -> ThreadRecord:
        """Bump lastUpdated past every other thread and append a turn (plain + blocks)."""
        with self.lock:
            record = self._require(thread_id)
            stamp = self.next_timestamp()
            record.last_updated = stamp
            when = timeutil.parse_time(stamp) or timeutil.EPOCH
            us = timeutil.to_us(when)
            entries = record.entries
            template = copy.deepcopy(entries[-1]) if entries else {}
            query = "Any news since last time?"
            answer = (
                f"Update: nothing essential changed about “{record.title}” since the last turn."
            )
            template.update(
                {
                    "uuid": new_uuid,
                    "frontend_uuid": new_uuid,
                    "backend_uuid": new_uuid,
                    "query_str": query,
                    "text": plain_steps(query, answer),
                    "created_us": us,
                    "updated_us": us,
                    "updated_datetime": when.strftime("%Y-%m-%dT%H:%M:%S.%f"),
                    "trigger": None,
                    "query_source": "followup",
                    "side_by_side_metadata": None,
                    "locked_reason": None,
                    "status": "COMPLETED",
                    "is_background": None,
                }
            )
            # The new turn's answer is its `text`: drop the copied turn's blocks and times.
            template.pop("blocks", None)
            for key in ("entry_created_datetime", "entry_updated_datetime"):
                if key in template:
                    template[key] = when.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")
            record.plain.setdefault("entries", []).append(template)
            meta = record.plain.get("thread_metadata")
            if isinstance(meta, dict):
                meta["updated_at"] = when.strftime("%Y-%m-%dT%H:%M:%S.%f")
            if record.blocks is not None:
                block_entry = schematized_entry(template, answer)
                record.blocks.setdefault("entries", []).append(block_entry)
            return record

    def shrink(self, thread_id: str, keep: int, rewrite: str = "") -> ThreadRecord:
        """The server's copy loses turns: keep the first `keep` entries (plain and blocks)
        and bump lastUpdated. `rewrite`: text put in place of the first kept turn's answer
        (an archived turn whose content changed)."""
        with self.lock:
            record = self._require(thread_id)
            stamp = self.next_timestamp()
            record.last_updated = stamp
            kept = record.entries[: max(keep, 0)]
            record.plain["entries"] = kept
            if rewrite and kept:
                first = kept[0]
                first["text"] = plain_steps(as_str(first.get("query_str")), rewrite)
                first.pop("blocks", None)
            if record.blocks is not None:
                ids = {e.get("uuid") for e in kept}
                blocks = [e for e in dicts(record.blocks.get("entries")) if e.get("uuid") in ids]
                if rewrite and kept:
                    blocks = [
                        schematized_entry(kept[0], rewrite)
                        if e.get("uuid") == kept[0].get("uuid")
                        else e
                        for e in blocks
                    ]
                record.blocks["entries"] = blocks
            return record

    def set_state(self, thread_id: str, state: str, *, listed: bool) -> ThreadRecord:
        with self.lock:
            record = self._require(thread_id)
            record.state = state
            record.listed = listed
            return record

    def forbid(self, thread_id: str) -> ThreadRecord:
        with self.lock:
            record = self._require(thread_id)
            self.forbidden_threads.add(record.uuid)
            return record

    def add_thread(self, record: ThreadRecord) -> None:
        with self.lock:
            self.threads[record.uuid] = record

    def add_space(self, space: SpaceRecord) -> None:
        with self.lock:
            self.spaces[space.uuid] = space

    def move(self, context_uuids: list[str], space_uuid: str) -> int:
        moved = 0
        with self.lock:
            for record in self.threads.values():
                if record.context_uuid and record.context_uuid in context_uuids:
                    record.space_uuid = space_uuid
                    moved += 1
        return moved

    def _require(self, thread_id: str) -> ThreadRecord:
        record = self.get(thread_id)
        if record is None:
            raise KeyError(thread_id)
        return record


# -- payload builders shared by mutations and the SSE ask ------------------------------------


def plain_steps(query: str, answer: str, web_results: list[JSON] | None = None) -> str:
    """An entry `text`: the step list as a JSON string whose FINAL `answer` is a JSON string."""
    final_answer = {
        "answer": answer,
        "web_results": web_results or [],
        "chunks": [answer],
        "extra_web_results": [],
        "structured_answer": [],
    }
    steps = [
        {"step_type": "INITIAL_QUERY", "content": {"goal_id": None, "query": query}, "uuid": ""},
        {
            "step_type": "FINAL",
            "content": {"goal_id": None, "answer": json.dumps(final_answer)},
            "uuid": "",
        },
    ]
    return json.dumps(steps)


def schematized_entry(plain_entry: JSON, answer: str) -> JSON:
    """A schematized copy of a plain entry whose only block is the answer's markdown block."""
    entry = {k: v for k, v in plain_entry.items() if k not in ("text", "plan")}
    for key, us_key in (
        ("entry_created_datetime", "created_us"),
        ("entry_updated_datetime", "updated_us"),
    ):
        if isinstance(plain_entry.get(us_key), int):
            when = timeutil.from_us(plain_entry[us_key])
            entry[key] = when.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")
    entry["blocks"] = [
        {
            "intended_usage": "ask_text",
            "markdown_block": {
                "progress": "DONE",
                "chunks": [answer],
                "chunk_starting_offset": 0,
                "answer": answer,
                "inline_token_annotations": [],
            },
        }
    ]
    return entry


def blocks_from_plain(plain: JSON) -> JSON:
    """A schematized response for a thread archived without raw_blocks: same entries, and only
    the blocks a plain entry carried itself (blocks-only entries, §9.1)."""

    def strip(entry: JSON) -> JSON:
        out = {k: v for k, v in entry.items() if k not in ("text", "plan")}
        out["blocks"] = dicts(entry.get("blocks"))
        return out

    return {
        "thread_metadata": plain.get("thread_metadata"),
        "entries": [strip(e) for e in dicts(plain.get("entries"))],
        "background_entries": [strip(e) for e in dicts(plain.get("background_entries"))],
    }


_SLUG_RUN = re.compile(r"[^a-z0-9]+")


def space_slug(title: str, space_uuid: str) -> str:
    base = _SLUG_RUN.sub("-", title.lower()).strip("-")[:40] or "space"
    return f"{base}-{uuidlib.UUID(space_uuid).hex[:6]}"
