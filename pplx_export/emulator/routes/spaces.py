"""Spaces (collections): metadata, thread lists, the user's spaces, create, move (protocol §2.6)."""

from __future__ import annotations

import copy

from pplx_export.emulator.http import JSON, Request, Response, error, json_response
from pplx_export.emulator.library import SpaceRecord, space_slug
from pplx_export.util.lenient import as_list, as_str, lenient_int

SPACE_PAGE = 20


def collection_json(req: Request, space: SpaceRecord) -> JSON:
    cfg = req.app.config
    out = copy.deepcopy(space.info) if space.info else {}
    owner = {
        "username": cfg.username,
        "email": cfg.email,
        "name": cfg.name,
        "permission": 4,
        "image": None,
    }
    out.update(
        {
            "uuid": space.uuid,
            "slug": space.slug,
            "title": space.title,
            "description": space.description or as_str(out.get("description")),
            "emoji": space.emoji,
            "url": f"{req.app.base_url}/spaces/{space.slug}",
            "access": out.get("access") or 1,
            "max_contributors": out.get("max_contributors") or 5,
            "owner_user": out.get("owner_user") or owner,
            "contributor_users": as_list(out.get("contributor_users")),
            "user_permission": 4,
            "thread_count": len(req.app.library.space_threads(space.uuid)),
        }
    )
    return out


def get_collection(req: Request) -> Response:
    slug = req.arg("collection_slug")
    library = req.app.library
    if slug in library.forbidden_spaces:
        return json_response(
            200, {"status": "failed", "_response_type": "VIEW_COLLECTION_NOT_ALLOWED"}
        )
    space = library.space_by_slug(slug)
    if space is None:
        return error(404, "COLLECTION_NOT_FOUND", slug)
    return json_response(200, collection_json(req, space))


def list_collection_threads(req: Request) -> Response:
    library = req.app.library
    space = library.space_by_slug(req.arg("collection_slug"))
    if space is None:
        return error(404, "COLLECTION_NOT_FOUND")
    rows = library.space_threads(space.uuid)
    offset = max(0, lenient_int(req.arg("offset")))
    page = rows[offset : offset + SPACE_PAGE]
    more = offset + len(page) < len(rows)
    out = []
    for record in page:
        first = record.entries[0] if record.entries else {}
        out.append(
            {
                "uuid": record.uuid,
                "context_uuid": record.context_uuid,
                "frontend_uuid": as_str(first.get("frontend_uuid")),
                "author_username": record.author,
                "author_name": req.app.config.name,
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
        spaces = sorted(library.spaces.values(), key=lambda s: s.title)
    out = [
        {
            "uuid": s.uuid,
            "title": s.title,
            "slug": s.slug,
            "emoji": s.emoji,
            "access": 1,
            "contributor_users": [],
            "is_invited": False,
            "is_pinned": False,
            "can_share_threads": True,
            "file_count": 0,
            "has_next_page": False,
        }
        for s in spaces
    ]
    return json_response(200, out)


def create_collection(req: Request) -> Response:
    body = req.json()
    title = as_str(body.get("title")).strip()
    if not title:
        return error(400, "INVALID_REQUEST", "title required")
    space_uuid = req.app.new_id()
    space = SpaceRecord(
        uuid=space_uuid,
        title=title,
        slug=space_slug(title, space_uuid),
        description=as_str(body.get("description")),
        emoji=as_str(body.get("emoji")) or "1f4c1",
    )
    req.app.library.add_space(space)
    return json_response(200, collection_json(req, space))


def batch_move_threads(req: Request) -> Response:
    body = req.json()
    target = as_str(body.get("new_collection_uuid"))
    ids = [as_str(v) for v in as_list(body.get("context_uuids")) if as_str(v)]
    library = req.app.library
    if target not in library.spaces:
        return error(404, "COLLECTION_NOT_FOUND")
    moved = library.move(ids, target)
    return json_response(200, {"status": "success", "moved": moved})
