"""Space listings and metadata: the `index/space_<slug>.json` files and the state store's
`space_meta` document (`index/space_meta.json` before).

A listing stays a file next to `library_<account>.json`: both are what the listing commands
export (a user may read them); the metadata is fetched state, kept in the store.

`space_<slug>.json` (written by `space-index`): `{"space": {"slug", "uuid", "title"},
"count": N, "threads": [rows]}`; a row holds the library-row keys the batch plan reads
(`entryUUID`, `title`, `mode`, `lastUpdated`, `space`) plus who wrote the thread
(`author`, `author_name`) and its `context_uuid`. `space_meta` (written by
`spaces --fetch-meta`): `{"spaces": {slug: record}}`, a record being the fields of
`get_collection` we use plus `via` (the account that could see the space) or `error`.

Both hold only what the API said (no fetch time), sorted, so an unchanged space rewrites
nothing. Slugs come from the API or the command line: the file name is `safe_stem`ed, so a
slug like `../x` cannot name a file outside `index/`.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pplx_export.archive.paths import INDEX_DIR, ensure_inside, safe_stem
from pplx_export.models import JSON
from pplx_export.store.docs import load_bytes, save_bytes
from pplx_export.util.atomic import write_if_changed
from pplx_export.util.jsontext import loads
from pplx_export.util.lenient import as_dict, as_str, dicts

log = logging.getLogger(__name__)

LISTING_PREFIX = "space_"
# The metadata document's key; also the old file's stem, which is no listing.
META_KEY = "space_meta"
META_NAME = f"{META_KEY}.json"
LISTING_ROW_KEYS = (
    "entryUUID",
    "title",
    "mode",
    "lastUpdated",
    "author",
    "author_name",
    "context_uuid",
    "space",
)
MEMBER_KEYS = ("username", "name", "email", "permission")
META_KEYS = (
    "uuid",
    "slug",
    "title",
    "emoji",
    "description",
    "access",
    "max_contributors",
    "user_permission",
)


def listing_path(root: Path, slug: str) -> Path:
    stem = safe_stem(slug)
    if stem == "meta":  # `space_meta.json` is the metadata file, not a listing
        stem += "_"
    path = Path(root) / INDEX_DIR / f"{LISTING_PREFIX}{stem}.json"
    return ensure_inside(Path(root), path)


def _space_ref(value: Any) -> dict[str, str] | None:
    space = as_dict(value)
    if not space:
        return None
    return {
        "uuid": as_str(space.get("uuid")),
        "title": as_str(space.get("title")),
        "slug": as_str(space.get("slug")),
    }


def listing_row(item: JSON, space: dict[str, str]) -> JSON:
    """A `list_collection_threads` item (protocol §2.6) as a stored listing row."""
    return {
        "entryUUID": as_str(item.get("uuid")).lower(),
        "title": as_str(item.get("title")) or as_str(item.get("query_str")),
        "mode": as_str(item.get("mode")),
        "lastUpdated": as_str(item.get("last_query_datetime")),
        "author": as_str(item.get("author_username")),
        "author_name": as_str(item.get("author_name")),
        "context_uuid": as_str(item.get("context_uuid")),
        "space": dict(space),
    }


def _normalize_row(row: JSON) -> JSON:
    out: JSON = {key: as_str(row.get(key)) for key in LISTING_ROW_KEYS if key != "space"}
    out["space"] = _space_ref(row.get("space"))
    return {key: out[key] for key in LISTING_ROW_KEYS}


@dataclass
class SpaceListing:
    slug: str
    space: dict[str, str] = field(default_factory=dict)
    threads: list[JSON] = field(default_factory=list)
    path: Path | None = None


def dumps_listing(space: dict[str, str], rows: list[JSON]) -> str:
    doc = {
        "space": {"slug": space.get("slug", ""), "uuid": space.get("uuid", ""),
                  "title": space.get("title", "")},
        "count": len(rows),
        "threads": [_normalize_row(r) for r in rows],
    }  # fmt: skip
    return json.dumps(doc, ensure_ascii=False, indent=1) + "\n"


def save_listing(root: Path, space: dict[str, str], rows: list[JSON]) -> tuple[Path, bool]:
    path = listing_path(root, space.get("slug", ""))
    return path, write_if_changed(path, dumps_listing(space, rows), durable=True)


def _parse_listing(path: Path) -> SpaceListing:
    """Raises ValueError for anything that is not a listing document."""
    doc = loads(path.read_bytes())
    if not isinstance(doc, dict) or not isinstance(doc.get("threads"), list):
        raise ValueError("not a space listing")
    space = _space_ref(doc.get("space")) or {"uuid": "", "title": "", "slug": ""}
    rows = [_normalize_row(r) for r in dicts(doc["threads"])]
    return SpaceListing(slug=space["slug"], space=space, threads=rows, path=path)


def load_listing(root: Path, slug: str) -> SpaceListing | None:
    """The stored listing of `slug`; None when there is none. A corrupt file -> ValueError
    naming it (the caller decides: `batch --space` stops, `spaces` warns and goes on)."""
    path = listing_path(root, slug)
    try:
        return _parse_listing(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"space listing {path} is unreadable ({exc}); {_refetch(path)}") from None


def _refetch(path: Path) -> str:
    """The hint for a damaged listing: the command that fetches it again (it is derived
    from the space on Perplexity, so nothing is lost by replacing it)."""
    slug = path.stem.removeprefix(LISTING_PREFIX)
    return f"`pplx-export space-index https://www.perplexity.ai/spaces/{slug}` fetches it again"


def iter_listings(root: Path) -> tuple[list[SpaceListing], list[str]]:
    """Every readable `index/space_*.json` (sorted) and a message per unreadable one."""
    directory = Path(root) / INDEX_DIR
    listings: list[SpaceListing] = []
    problems: list[str] = []
    if not directory.is_dir():
        return listings, problems
    for path in sorted(directory.glob(f"{LISTING_PREFIX}*.json")):
        if path.name == META_NAME or not path.is_file():
            continue
        try:
            listings.append(_parse_listing(path))
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            problems.append(
                f"space listing {path} is unreadable ({exc}); left out; {_refetch(path)}"
            )
    return listings, problems


# -- space_meta --------------------------------------------------------------------------------


def _member(value: Any) -> JSON:
    m = as_dict(value)
    out: JSON = {key: as_str(m.get(key)) for key in MEMBER_KEYS if key != "permission"}
    permission = m.get("permission")
    out["permission"] = permission if isinstance(permission, int) else 0
    return out


def meta_record(collection: JSON, via: str) -> JSON:
    """The part of a `get_collection` answer we keep, and which account could see it."""
    out: JSON = {}
    for key in META_KEYS:
        value = collection.get(key)
        out[key] = value if isinstance(value, int | str) and not isinstance(value, bool) else ""
    if not out["emoji"]:
        out["emoji"] = as_str(as_dict(collection.get("appearance")).get("emoji"))
    out["owner_user"] = _member(collection.get("owner_user"))
    out["contributor_users"] = [_member(u) for u in dicts(collection.get("contributor_users"))]
    out["via"] = via
    return out


def error_record(slug: str, error: str, denied_for: list[str]) -> JSON:
    return {"slug": slug, "error": error, "denied_for": sorted(denied_for)}


def load_meta(root: Path) -> tuple[dict[str, JSON], str]:
    """{slug: record} and a problem message ("" when fine). A corrupt one reads as empty."""
    try:
        data = load_bytes(root, META_KEY)
        if data is None:
            return {}, ""
        doc = loads(data)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        return {}, f"the space metadata is unreadable ({exc}); members left out"
    spaces = as_dict(as_dict(doc).get("spaces"))
    return {k: v for k, v in spaces.items() if isinstance(v, dict)}, ""


def save_meta(root: Path, records: dict[str, JSON]) -> bool:
    doc = {"spaces": {slug: records[slug] for slug in sorted(records)}}
    text = json.dumps(doc, ensure_ascii=False, indent=1) + "\n"
    return save_bytes(root, META_KEY, text)
