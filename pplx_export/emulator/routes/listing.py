"""The library listings: GraphQL persisted queries and the REST fallback (protocol §2.2-§2.3)."""

from __future__ import annotations

import base64

from pplx_export.emulator.http import JSON, Request, Response, json_response
from pplx_export.emulator.library import SpaceRecord, ThreadRecord
from pplx_export.util.lenient import as_dict, as_str, lenient_int

# The emulator's own copies of the pinned hashes: it checks what the client sends.
GRAPHQL_HASHES = {
    "LibraryThreadsRelayQuery": "a5229c390a6a00f81764187a21885cff655670029355c663fe393cc6e98f9ebe",
    "LibraryRecentThreadsPaginationQuery": (
        "4f6dfcb8e9d3c065aca20ca1e82ca7fe464aaffc1faefade295bb7e333199629"
    ),
}
PERSISTED_QUERY_NOT_FOUND = {
    "errors": [
        {
            "message": "PersistedQueryNotFound",
            "extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"},
        }
    ]
}


def space_ref(req: Request, record: ThreadRecord) -> SpaceRecord | None:
    return req.app.library.spaces.get(record.space_uuid) if record.space_uuid else None


def _node(req: Request, record: ThreadRecord) -> JSON:
    space = space_ref(req, record)
    return {
        "name": record.title,
        "entryId": record.uuid,
        "slug": record.slug,
        "mode": record.listing_mode,
        "displayModel": {"modelID": record.display_model},
        "updatedAt": record.last_updated,
        "status": record.status,
        "space": (
            {"spaceUuid": space.uuid, "title": space.title, "slug": space.slug} if space else None
        ),
    }


def _relay_cursor(index: int) -> str:
    return base64.b64encode(f"arrayconnection:{index}".encode()).decode()


def _relay_index(cursor: str) -> int | None:
    try:
        text = base64.b64decode(cursor.encode(), validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return None
    prefix, _, number = text.partition(":")
    return int(number) if prefix == "arrayconnection" and number.isdigit() else None


def graphql(req: Request) -> Response:
    body = req.json()
    operation = as_str(body.get("operationName"))
    sent_hash = as_str(
        as_dict(as_dict(body.get("extensions")).get("persistedQuery")).get("sha256Hash")
    )
    if req.app.faults.spec.graphql_rotated or GRAPHQL_HASHES.get(operation) != sent_hash:
        return json_response(200, PERSISTED_QUERY_NOT_FOUND)
    variables = as_dict(body.get("variables"))
    count = lenient_int(variables.get("count")) or 25
    offset = 0
    if operation == "LibraryRecentThreadsPaginationQuery":
        index = _relay_index(as_str(variables.get("cursor")))
        if index is None:
            return json_response(200, {"errors": [{"message": "Invalid cursor"}], "data": None})
        offset = index + 1
    ascending = as_str(variables.get("sortOrder")).upper() == "OLDEST"
    rows = req.app.library.listing(ascending=ascending, search=as_str(variables.get("searchTerm")))
    page = rows[offset : offset + count]
    edges = [
        {"node": _node(req, r), "cursor": _relay_cursor(offset + i)} for i, r in enumerate(page)
    ]
    threads = {
        "edges": edges,
        "pageInfo": {
            "hasNextPage": offset + len(page) < len(rows),
            "endCursor": edges[-1]["cursor"] if edges else "",
        },
    }
    return json_response(200, {"data": {"viewer": {"recentGroup": {"threads": threads}}}})


def list_ask_threads(req: Request) -> Response:
    body = req.json()
    limit = lenient_int(body.get("limit")) or 25
    offset = max(0, lenient_int(body.get("offset")))
    rows = req.app.library.listing(
        ascending=bool(body.get("ascending")), search=as_str(body.get("search_term"))
    )
    page = rows[offset : offset + limit]
    more = offset + len(page) < len(rows)
    out = []
    for record in page:
        space = space_ref(req, record)
        out.append(
            {
                "uuid": record.uuid,
                "title": record.title,
                "query_str": record.first_query,
                "slug": record.slug,
                "mode": record.listing_mode,
                "display_model": record.display_model,
                "last_query_datetime": record.last_updated,
                "status": record.status,
                "collection": (
                    {"uuid": space.uuid, "title": space.title, "slug": space.slug}
                    if space
                    else None
                ),
                "has_next_page": more,
            }
        )
    return json_response(200, out)
