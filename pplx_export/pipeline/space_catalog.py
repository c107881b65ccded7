"""Which thread is in which space, from the archive alone (zero network).

Sources, strongest first, for a thread's space:

1. the library indexes (`index/library_<account>.json`, every account): the platform's
   word as of the last `index`; when several accounts list a thread, the row with the
   newest `lastUpdated` wins (ties: the first account in name order);
2. the space listings of `space-index` (`index/space_<slug>.json`): threads of shared
   spaces that no library lists (other members' threads);
3. the thread's own `thread.json` `space`, for threads no index lists at all.

Every `thread.json` is read once (it names the thread's newest exported directory and
its author and mode); the `space_meta` document adds titles, emoji and members. Unreadable
files are reported in `problems` and left out; nothing here raises for bad archive data.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pplx_export.archive.paths import iter_thread_rels, safe_stem, uuid8
from pplx_export.archive.thread_json import THREAD_JSON
from pplx_export.models import JSON
from pplx_export.render.spaces import Member, SpacePage, SpaceThread
from pplx_export.store.docs import load_bytes, save_bytes
from pplx_export.store.library_index import index_path, indexed_accounts
from pplx_export.store.space_files import iter_listings, load_meta
from pplx_export.util.atomic import read_with_stat
from pplx_export.util.jsontext import dumps_compact, loads
from pplx_export.util.lenient import as_dict, as_str, dicts, lenient_int
from pplx_export.util.timefmt import parse_time

log = logging.getLogger(__name__)

NO_SPACE_FILE = "no-space.md"
INDEX_FILE = "index.md"
RESERVED_STEMS = frozenset({"index", "no-space", "spaces"})
SpaceRef = dict[str, str]


@dataclass
class DiskThread:
    uuid: str
    rel: str
    title: str = ""
    author: str = ""
    mode: str = ""
    last_updated: str = ""
    space: SpaceRef | None = None


@dataclass
class IndexFact:
    """What the indexes say about one thread."""

    space: SpaceRef | None
    title: str = ""
    mode: str = ""
    last_updated: str = ""
    author: str = ""
    source: str = ""  # "library:<account>" | "space:<slug>"


@dataclass
class Catalog:
    pages: list[SpacePage] = field(default_factory=list)  # spaces sorted, no-space page last
    problems: list[str] = field(default_factory=list)
    disk: dict[str, list[DiskThread]] = field(default_factory=dict)  # uuid -> its directories
    index: dict[str, IndexFact] = field(default_factory=dict)
    threads_read: int = 0


def space_ref(value: Any) -> SpaceRef | None:
    if value is None:
        return None
    space = as_dict(value)
    uuid = as_str(space.get("uuid")) or as_str(space.get("spaceUuid"))
    ref = {"uuid": uuid, "title": as_str(space.get("title")), "slug": as_str(space.get("slug"))}
    return ref if any(ref.values()) else None


def _time_key(value: str) -> float:
    moment = parse_time(value)
    return moment.timestamp() if moment is not None else float("-inf")


# A state store document (`index/spaces_cache.json` before).
CACHE_NAME = "spaces_cache"
CACHE_FORMAT = 1


def read_cache(root: Path, name: str, fmt: int, key: str) -> dict[str, Any]:
    """The `key` object of a derived cache document `{"format": fmt, key: {...}}`; absent,
    unreadable or of another format: empty (derived state, rebuilt by the next run)."""
    try:
        doc = loads(load_bytes(root, name) or b"{}")
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    if not isinstance(doc, dict) or doc.get("format") != fmt:
        return {}
    value = doc.get(key)
    return value if isinstance(value, dict) else {}


def _load_cache(root: Path) -> dict[str, list[Any]]:
    """{rel: [size, mtime_ns, uuid, title, author, mode, lastUpdated, space]}."""
    return read_cache(root, CACHE_NAME, CACHE_FORMAT, "threads")


def _save_cache(root: Path, records: dict[str, list[Any]]) -> None:
    doc = {"format": CACHE_FORMAT, "threads": records}
    try:
        save_bytes(root, CACHE_NAME, dumps_compact(doc))
    except OSError as exc:  # derived state: the next run reads every thread.json again
        log.warning("could not save %s: %s", CACHE_NAME, exc)


def _fields(record: Any) -> list[Any] | None:
    """A cache record without its stats (None for a malformed one)."""
    return record[2:] if isinstance(record, list) else None


def _from_record(rel: str, record: Any, size: int, mtime: int) -> DiskThread | None:
    """The cached thread of `rel` when its thread.json still has this size and mtime."""
    if not isinstance(record, list) or len(record) != 8 or record[:2] != [size, mtime]:
        return None
    uuid, title, author, mode, last_updated, space = record[2:]
    if not all(isinstance(v, str) for v in (uuid, title, author, mode, last_updated)):
        return None
    return DiskThread(uuid, rel, title, author, mode, last_updated, space_ref(space))


def scan_disk(
    root: Path,
    problems: list[str],
    *,
    use_cache: bool = True,
    disk_changed: list[bool] | None = None,
    rels: list[str] | None = None,
) -> dict[str, list[DiskThread]]:
    """Every thread directory's thread.json, by lower-cased web UUID.

    A thread.json whose size and mtime are those of the last run is not read again: its
    fields come from the `spaces_cache` document (the trust rule of `re-render
    --changed-only`); a thread.json `sync-space` patches has a new mtime, so it is read again.
    """
    found: dict[str, list[DiskThread]] = {}
    base = f"{root}{os.sep}"
    cached = _load_cache(root) if use_cache else {}
    records: dict[str, list[Any]] = {}
    # `rels`: the run listed the archive already (a batch's sweep): not listed again.
    for rel in iter_thread_rels(root, known=cached) if rels is None else rels:
        path = base + rel + os.sep + THREAD_JSON
        thread = None
        if rel in cached:
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                problems.append(f"{rel}/{THREAD_JSON} is unreadable ({exc}); left out")
                continue
            thread = _from_record(rel, cached[rel], st.st_size, st.st_mtime_ns)
            if thread is not None:
                records[rel] = cached[rel]
        if thread is None:
            try:
                data, (size, mtime) = read_with_stat(path)
                doc = loads(data)
            except FileNotFoundError:
                continue  # raw files only (an interrupted export): not an exported thread yet
            except (OSError, ValueError, UnicodeDecodeError) as exc:
                problems.append(f"{rel}/{THREAD_JSON} is unreadable ({exc}); left out")
                continue
            uuid = as_str(doc.get("web_uuid")).lower() if isinstance(doc, dict) else ""
            if not uuid:
                problems.append(f"{rel}/{THREAD_JSON} has no web_uuid; left out")
                continue
            thread = DiskThread(
                uuid=uuid,
                rel=rel,
                title=as_str(doc.get("title")),
                author=as_str(doc.get("author")),
                mode=as_str(doc.get("mode")) or rel.split("/")[1],
                last_updated=as_str(doc.get("lastUpdated")),
                space=space_ref(doc.get("space")),
            )
            t = thread
            records[rel] = [size, mtime, t.uuid, t.title, t.author, t.mode, t.last_updated, t.space]
        found.setdefault(thread.uuid, []).append(thread)
    if use_cache and root.is_dir() and records != cached:
        _save_cache(root, records)
    if disk_changed is not None:
        # A thread.json rewritten with the fields it held (a re-export) changes only the
        # cache's stats: the pages built from those fields are as written.
        disk_changed.append(records.keys() != cached.keys() or any(
            record is not cached[rel] and _fields(cached[rel]) != record[2:]
            for rel, record in records.items()
        ))  # fmt: skip
    return found


def newest(dirs: list[DiskThread]) -> DiskThread:
    """The newest exported directory of a thread (lastUpdated, then the later path)."""
    if len(dirs) == 1:
        return dirs[0]
    return max(dirs, key=lambda d: (_time_key(d.last_updated), d.rel))


def scan_indexes(root: Path, problems: list[str]) -> dict[str, IndexFact]:
    """Each thread's space according to the indexes (see the module doc for precedence)."""
    facts: dict[str, IndexFact] = {}
    listings, listing_problems = iter_listings(root)
    problems.extend(listing_problems)
    for listing in listings:
        for row in listing.threads:
            uuid = as_str(row.get("entryUUID")).lower()
            if uuid and uuid not in facts:
                facts[uuid] = IndexFact(
                    space=space_ref(row.get("space")) or space_ref(listing.space),
                    title=as_str(row.get("title")),
                    mode=as_str(row.get("mode")).lower(),
                    last_updated=as_str(row.get("lastUpdated")),
                    author=as_str(row.get("author")),
                    source=f"space:{listing.slug}",
                )
    library: dict[str, IndexFact] = {}
    for account in indexed_accounts(root):
        path = index_path(root, account)
        try:
            doc = loads(path.read_bytes())
            rows = doc["threads"] if isinstance(doc, dict) else None
            if not isinstance(rows, list):
                raise ValueError("not an index document")
        except FileNotFoundError:
            continue
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            # Read-only here: `index` moves a corrupt file aside when it next writes one.
            problems.append(f"{path} is corrupt ({exc}); its threads are left out")
            continue
        for row in rows:
            if not isinstance(row, dict):
                continue
            uuid = as_str(row.get("entryUUID")).lower()
            if not uuid:
                continue
            fact = IndexFact(
                space=space_ref(row.get("space")),
                title=as_str(row.get("title")),
                mode=as_str(row.get("mode")).lower(),
                last_updated=as_str(row.get("lastUpdated")),
                author=account,
                source=f"library:{account}",
            )
            held = library.get(uuid)
            if held is None or _time_key(fact.last_updated) > _time_key(held.last_updated):
                library[uuid] = fact
    facts.update(library)
    return facts


def _group_key(ref: SpaceRef) -> str:
    if ref["uuid"]:
        return "uuid:" + ref["uuid"]
    if ref["slug"]:
        return "slug:" + ref["slug"]
    return "title:" + ref["title"]


def _fill_uuids(refs: list[SpaceRef]) -> None:
    """A listing row knows its space by slug only: borrow the uuid another source gives."""
    by_slug = {r["slug"]: r["uuid"] for r in refs if r["slug"] and r["uuid"]}
    for r in refs:
        if not r["uuid"] and r["slug"] in by_slug:
            r["uuid"] = by_slug[r["slug"]]


def page_file(ref: SpaceRef, taken: set[str]) -> str:
    """`<slug>.md`, made safe (no separators, no leading dots) and unique under spaces/."""
    stem = safe_stem(ref["slug"] or ref["title"] or ref["uuid"] or "space")
    if stem.lower() in RESERVED_STEMS or stem.lower() in taken:
        stem = f"{stem}_{uuid8(ref['uuid'] or ref['slug'] or ref['title'])}"
    n = 2
    base = stem
    while stem.lower() in taken:
        stem = f"{base}_{n}"
        n += 1
    taken.add(stem.lower())
    return stem + ".md"


def _members(meta: JSON) -> tuple[Member | None, list[Member]]:
    def member(value: Any) -> Member:
        m = as_dict(value)
        return Member(
            as_str(m.get("username")), as_str(m.get("name")), lenient_int(m.get("permission"))
        )

    owner_doc = as_dict(meta.get("owner_user"))
    owner = member(owner_doc) if owner_doc else None
    if owner is not None and not owner.permission:
        owner.permission = 4
    members = [member(u) for u in dicts(meta.get("contributor_users"))]
    if owner is not None:
        members = [m for m in members if not (m.username and m.username == owner.username)]
    return owner, members


def build_catalog(
    root: Path,
    scanned: dict[str, list[DiskThread]] | None = None,
    problems: list[str] | None = None,
) -> Catalog:
    """Group every known thread by space; see the module doc. `scanned` (with the
    `problems` found reading it): a `scan_disk` the caller already made."""
    root = Path(root)
    catalog = Catalog(problems=problems if problems is not None else [])
    problems = catalog.problems
    catalog.disk = scanned if scanned is not None else scan_disk(root, problems)
    catalog.threads_read = sum(len(v) for v in catalog.disk.values())
    catalog.index = scan_indexes(root, problems)
    meta, meta_problem = load_meta(root)
    if meta_problem:
        problems.append(meta_problem)

    placed: list[tuple[SpaceRef | None, SpaceThread]] = []
    for uuid in sorted(set(catalog.disk) | set(catalog.index)):
        fact = catalog.index.get(uuid)
        dirs = catalog.disk.get(uuid)
        disk = newest(dirs) if dirs else None
        space = fact.space if fact else disk.space if disk else None
        space = dict(space) if space else None
        thread = SpaceThread(
            uuid=uuid,
            title=(disk.title if disk else "") or (fact.title if fact else ""),
            author=(disk.author if disk else "") or (fact.author if fact else ""),
            mode=(disk.mode if disk else "") or (fact.mode if fact else ""),
            last_updated=(fact.last_updated if fact else "") or (disk.last_updated if disk else ""),
            dir=disk.rel if disk else "",
        )
        placed.append((space, thread))
    _fill_uuids([s for s, _ in placed if s is not None])

    groups: dict[str, tuple[SpaceRef, list[SpaceThread]]] = {}
    loose: list[SpaceThread] = []
    for space, thread in placed:
        if space is None:
            loose.append(thread)
            continue
        key = _group_key(space)
        held = groups.get(key)
        if held is None:
            groups[key] = (space, [thread])
        else:
            held[1].append(thread)
            if not held[0]["title"] and space["title"]:
                held[0]["title"] = space["title"]
            if not held[0]["slug"] and space["slug"]:
                held[0]["slug"] = space["slug"]

    taken: set[str] = set()
    pages: list[SpacePage] = []
    ordered = sorted(groups.values(), key=lambda g: (g[0]["slug"], g[0]["uuid"], g[0]["title"]))
    for ref, threads in ordered:
        record = as_dict(meta.get(ref["slug"])) if ref["slug"] else {}
        page = SpacePage(file=page_file(ref, taken), slug=ref["slug"], uuid=ref["uuid"])
        page.title = as_str(record.get("title")) or ref["title"]
        page.emoji = as_str(record.get("emoji"))
        page.description = as_str(record.get("description"))
        page.uuid = page.uuid or as_str(record.get("uuid"))
        if as_str(record.get("error")):
            page.meta_error = as_str(record.get("error"))
        elif record:
            page.owner, page.members = _members(record)
            page.meta_via = as_str(record.get("via"))
        page.threads = threads
        pages.append(page)
    pages.sort(key=lambda p: (p.title.casefold(), p.slug, p.uuid))
    if loose:
        pages.append(SpacePage(file=NO_SPACE_FILE, threads=loose, no_space=True))
    catalog.pages = pages
    return catalog
