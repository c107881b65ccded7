"""`pplx-export space-index SPACE`: a space's thread list into `index/space_<slug>.json`.

The listing (protocol §2.6) is offset-paged, 20 per page, while the first item of a page
says `has_next_page`; an empty page ends it, and a page that repeats an earlier one stops
the walk (a server that ignores the offset would otherwise page forever). It includes the
threads other members wrote, which no library listing shows: `batch --space SLUG` then
exports them through the normal pipeline.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from pplx_export.context import RunOptions
from pplx_export.errors import ArchiveError, NotFound, PermissionDenied, UsageError
from pplx_export.models import JSON
from pplx_export.pipeline.space_catalog import scan_indexes
from pplx_export.site.api import PerplexityAPI
from pplx_export.store.lock import archive_lock
from pplx_export.store.space_files import listing_row, load_listing, load_meta, save_listing
from pplx_export.util.lenient import as_str

log = logging.getLogger(__name__)

# Slugs seen on the platform: words, digits, `-` and `_` (e.g. `kitchen-lab-9c7d21`).
_SLUG = re.compile(r"[\w-]{1,200}")
_SPACE_PATH = re.compile(r"^/(?:spaces|collections)/([^/?#]+)/?$")


def parse_space_ref(ref: str) -> str:
    """The slug of a space URL (`…/spaces/<slug>`, `…/collections/<slug>`) or a bare slug."""
    text = ref.strip()
    if "/" in text:
        path = urlsplit(text).path if "://" in text else text
        match = _SPACE_PATH.match(path if path.startswith("/") else "/" + path)
        text = unquote(match.group(1)) if match else ""
    if not _SLUG.fullmatch(text):
        raise UsageError(f"not a space URL or slug: {ref!r} (expected …/spaces/<slug> or a slug)")
    return text


@dataclass
class SpaceIndexResult:
    slug: str
    path: Path
    threads: int
    authors: dict[str, int]
    written: bool
    requests: int

    def to_json(self) -> JSON:
        return {
            "slug": self.slug,
            "path": str(self.path),
            "threads": self.threads,
            "authors": self.authors,
            "written": self.written,
            "requests": self.requests,
        }

    def line(self) -> str:
        authors = ", ".join(f"{a} {n}" for a, n in sorted(self.authors.items())) or "none"
        state = "written" if self.written else "unchanged"
        return (
            f"space-index: {self.slug}: {self.threads} threads (by author: {authors}); "
            f"{self.path} {state}; {self.requests} requests"
        )


def _known_space(root: Path, slug: str) -> dict[str, str]:
    """uuid and title of `slug` from what the archive already knows (offline)."""
    space = {"slug": slug, "uuid": "", "title": ""}
    meta, _ = load_meta(root)
    record = meta.get(slug) or {}
    space["uuid"] = as_str(record.get("uuid"))
    space["title"] = as_str(record.get("title"))
    if not space["uuid"]:
        for fact in scan_indexes(root, []).values():
            if fact.space and fact.space.get("slug") == slug and fact.space.get("uuid"):
                space["uuid"] = fact.space["uuid"]
                space["title"] = space["title"] or fact.space.get("title", "")
                break
    return space


def run_space_index(
    opts: RunOptions, ref: str, *, api: PerplexityAPI | None = None
) -> SpaceIndexResult:
    slug = parse_space_ref(ref)
    own = api is None
    if api is None:
        from pplx_export.site.session import open_session

        api = open_session(opts)
    try:
        before = api.requests_made
        try:
            items = list(api.iter_collection_threads(slug))
        except PermissionDenied as exc:
            raise PermissionDenied(
                f"space {slug}: {opts.account.name} may not view it ({exc.code or exc.reason}); "
                "try another configured account with --account",
                endpoint=exc.endpoint,
                status=exc.status,
                code=exc.code,
            ) from None
        except NotFound as exc:
            raise NotFound(
                f"space {slug}: not found ({exc.reason}); check the slug or URL",
                endpoint=exc.endpoint,
                status=exc.status,
                code=exc.code,
            ) from None
        requests = api.requests_made - before
    finally:
        if own:
            api.close()
    root = Path(opts.out)
    with archive_lock(root, opts.held_locks):
        space = _known_space(root, slug)
        rows: list[JSON] = []
        seen: set[str] = set()
        for item in items:
            row = listing_row(item, space)
            if row["entryUUID"] and row["entryUUID"] not in seen:
                seen.add(row["entryUUID"])
                rows.append(row)
            elif not row["entryUUID"]:
                log.warning("space %s: a listed thread has no uuid; skipped", slug)
        path, written = save_listing(root, space, rows)
    authors: dict[str, int] = {}
    for row in rows:
        key = row["author"] or "unknown"
        authors[key] = authors.get(key, 0) + 1
    return SpaceIndexResult(slug, path, len(rows), authors, written, requests)


def plan_row(row: JSON) -> JSON:
    """A stored listing row in the shape the batch plan and the parser read (library rows)."""
    uuid = as_str(row.get("entryUUID"))
    return {
        "title": as_str(row.get("title")),
        "entryUUID": uuid,
        "href": uuid,
        "mode": as_str(row.get("mode")),
        "lastUpdated": as_str(row.get("lastUpdated")),
        "status": "",
        "space": row.get("space"),
        # The thread's author, who may be another member: the export files it under them.
        "authorUsername": as_str(row.get("author")),
    }


def space_rows(root: Path, ref: str) -> list[JSON]:
    """The plan rows of a space's stored listing (`batch --space`)."""
    slug = parse_space_ref(ref)
    try:
        listing = load_listing(root, slug)
    except ValueError as exc:
        raise ArchiveError(str(exc)) from None
    if listing is None:
        raise UsageError(
            f"no listing of space {slug!r} in {root}: run `pplx-export space-index {slug}` first"
        )
    if not listing.threads:
        log.warning("the listing of space %s is empty", slug)
    return [plan_row(r) for r in listing.threads]
