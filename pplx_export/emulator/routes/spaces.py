"""Spaces (collections): create, move, and the collection document (protocol §2.6).

The read endpoints (metadata, thread list, the viewer's spaces) are in space_view.py.
"""

from __future__ import annotations

import copy

from pplx_export.emulator.http import JSON, Request, Response, error, json_response
from pplx_export.emulator.library import SpaceRecord, space_slug
from pplx_export.util.lenient import as_list, as_str


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


def upsert_thread_collection(req: Request) -> Response:
    """The 2026 UI's move of one thread (by **context** UUID) into a space (§9.5)."""
    body = req.json()
    target = as_str(body.get("new_collection_uuid"))
    context_uuid = as_str(body.get("context_uuid"))
    library = req.app.library
    if target not in library.spaces:
        return error(404, "COLLECTION_NOT_FOUND")
    if not context_uuid or not library.move([context_uuid], target):
        return error(404, "THREAD_NOT_FOUND")
    out: JSON = {"status": "success"}
    if body.get("return_collection"):
        out["collection"] = collection_json(req, library.spaces[target])
    return json_response(200, out)
