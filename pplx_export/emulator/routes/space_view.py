"""Space read endpoints: metadata, thread listing, the viewer's spaces (protocol §2.6).

Visibility is per account: a slug in the manifest's `forbidden_spaces` answers
`200 {"status": "failed", "_response_type": "VIEW_COLLECTION_NOT_ALLOWED"}` to every
account except those whose email `space_viewers[slug]` lists (the space shared with another
of the user's accounts). The thread listing pages 20 at a time like the platform;
`space_quirks[slug]` bends it for client tests: `ignore_offset` (every offset answers the
first page, `has_next_page` true) and `empty_last_page` (the last page still says
`has_next_page`; the page after it is empty). Authors other than the emulator's account
are named from the space's owner/contributor list (the archived `collection_info`).

The thread listing honours the UI's filter flags (§9.5): other members' threads are listed
only with `include_user_and_shared_threads=true` and `filter_by_user=false`, which is what
the 2026 UI sends; a client that leaves the flags out gets the asking account's own
threads (the server's defaults are unknown: the emulator assumes the harmful one).
`list_user_collections` pages `limit` (30) at a time from `offset`, every item carrying
`has_next_page`.
"""

from __future__ import annotations

from pplx_export.emulator.http import JSON, Request, Response, error, json_response
from pplx_export.emulator.library import SpaceRecord
from pplx_export.emulator.routes.spaces import collection_json
from pplx_export.util.lenient import as_dict, as_list, as_str, dicts, lenient_int

SPACE_PAGE = 20
USER_COLLECTIONS_PAGE = 30
NOT_ALLOWED = {"status": "failed", "_response_type": "VIEW_COLLECTION_NOT_ALLOWED"}


def can_view(req: Request, slug: str) -> bool:
    library = req.app.library
    if slug not in library.forbidden_spaces:
        return True
    email = req.identity[0].lower()
    return bool(email) and email in library.space_viewers.get(slug, set())


def viewer_permission(req: Request, doc: JSON) -> int:
    """4 for the owner, a contributor's own level, 4 for the library's account (it owns the
    spaces it archived), 1 (view) for any other account allowed to look."""
    email = (req.identity[0] or req.app.config.email).lower()
    if as_str(as_dict(doc.get("owner_user")).get("email")).lower() == email:
        return 4
    for user in dicts(doc.get("contributor_users")):
        if as_str(user.get("email")).lower() == email:
            return lenient_int(user.get("permission")) or 1
    return 4 if email == req.app.config.email.lower() else 1


def _people(req: Request, space: SpaceRecord) -> dict[str, JSON]:
    """username -> user dict, from the space's owner and contributors."""
    info = space.info or {}
    people: dict[str, JSON] = {}
    for user in [as_dict(info.get("owner_user")), *dicts(info.get("contributor_users"))]:
        name = as_str(user.get("username"))
        if name:
            people[name] = user
    cfg = req.app.config
    people.setdefault(cfg.username, {"username": cfg.username, "name": cfg.name})
    return people


def get_collection(req: Request) -> Response:
    slug = req.arg("collection_slug")
    if not can_view(req, slug):
        return json_response(200, NOT_ALLOWED)
    space = req.app.library.space_by_slug(slug)
    if space is None:
        return error(404, "COLLECTION_NOT_FOUND", slug)
    doc = collection_json(req, space)
    doc["user_permission"] = viewer_permission(req, doc)
    return json_response(200, doc)


def _flag(req: Request, name: str) -> str:
    return req.arg(name).strip().lower()


def _shared_threads_asked(req: Request) -> bool:
    """The UI's flags for "everyone's threads" (`filter_by_user=false`,
    `include_user_and_shared_threads=true`); anything else lists the asker's own."""
    return (
        _flag(req, "filter_by_user") == "false"
        and _flag(req, "include_user_and_shared_threads") == "true"
    )


def list_collection_threads(req: Request) -> Response:
    library = req.app.library
    slug = req.arg("collection_slug")
    if not can_view(req, slug):
        return json_response(200, NOT_ALLOWED)
    space = library.space_by_slug(slug)
    if space is None:
        return error(404, "COLLECTION_NOT_FOUND")
    rows = library.space_threads(space.uuid)
    if not _shared_threads_asked(req):
        own = req.app.config.username
        rows = [r for r in rows if not r.author or r.author == own]
    quirk = library.space_quirks.get(slug, "")
    offset = 0 if quirk == "ignore_offset" else max(0, lenient_int(req.arg("offset")))
    size = lenient_int(req.arg("limit")) or SPACE_PAGE
    page = rows[offset : offset + size]
    more = offset + len(page) < len(rows) or quirk == "ignore_offset"
    if quirk == "empty_last_page" and page:
        more = True
    people = _people(req, space)
    out = []
    for record in page:
        first = record.entries[0] if record.entries else {}
        out.append(
            {
                "uuid": record.uuid,
                "context_uuid": record.context_uuid,
                "frontend_uuid": as_str(first.get("frontend_uuid")),
                "author_username": record.author,
                "author_name": as_str(as_dict(people.get(record.author)).get("name"))
                or record.author,
                "title": record.title,
                "query_str": record.first_query,
                "mode": record.listing_mode,
                "last_query_datetime": record.last_updated,
                "thread_access": first.get("thread_access") or 1,
                "answer_preview": "",
                "has_next_page": more,
                "total_threads": len(rows),
            }
        )
    return json_response(200, out)


def list_user_collections(req: Request) -> Response:
    library = req.app.library
    with library.lock:
        spaces = sorted(library.spaces.values(), key=lambda s: (s.title, s.uuid))
    visible = [s for s in spaces if can_view(req, s.slug)]
    limit = lenient_int(req.arg("limit")) or USER_COLLECTIONS_PAGE
    offset = max(0, lenient_int(req.arg("offset")))
    page = visible[offset : offset + limit]
    more = offset + len(page) < len(visible)
    out = [
        {
            "uuid": s.uuid,
            "title": s.title,
            "slug": s.slug,
            "emoji": s.emoji,
            "access": 1,
            "contributor_users": as_list((s.info or {}).get("contributor_users")),
            "is_invited": False,
            "is_pinned": False,
            "can_share_threads": True,
            "file_count": 0,
            "has_next_page": more,
        }
        for s in page
    ]
    return json_response(200, out)
