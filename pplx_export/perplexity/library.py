"""Library listing: GraphQL persisted queries, with a REST fallback (protocol.md §2.2).

Both listings are generators of index rows, newest first, so the incremental index can stop
early. Paging has no page cap: it ends on the protocol's stop rules, and a cursor (or REST
page) seen before ends it too, so a server that repeats itself cannot loop us forever.

The REST fallback's shape is defined by this project (the emulator implements the same):
`POST /rest/thread/list_ask_threads?version=2.18&source=default` with
`{"limit": 25, "offset": N, "ascending": false, "search_term": ""}` -> a JSON array (or
`{"threads": [...]}`) of items; offset += len(items) while the last item's `has_next_page`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from pplx_export.errors import ApiError
from pplx_export.net.classify import PersistedQueryNotFound, graphql_errors
from pplx_export.net.client import ApiClient
from pplx_export.perplexity import constants as C
from pplx_export.util.lenient import as_dict, as_list, as_str, dicts

log = logging.getLogger("pplx_export.perplexity")

Row = dict[str, Any]


def _space(uuid: Any, title: Any, slug: Any) -> dict[str, str] | None:
    if not (uuid or title or slug):
        return None
    return {"uuid": as_str(uuid), "title": as_str(title), "slug": as_str(slug)}


def node_to_row(node: dict[str, Any]) -> Row:
    """GraphQL thread node -> index row (keys in the archive's order)."""
    space = node.get("space")
    model = node.get("displayModel")
    return {
        "title": node.get("name"),
        "entryUUID": node.get("entryId"),
        "href": node.get("slug"),
        "mode": node.get("mode"),
        "displayModel": model.get("modelID") if isinstance(model, dict) else None,
        "lastUpdated": node.get("updatedAt"),
        "status": node.get("status"),
        "space": (
            _space(space.get("spaceUuid"), space.get("title"), space.get("slug"))
            if isinstance(space, dict)
            else None
        ),
    }


def rest_item_to_row(item: dict[str, Any]) -> Row:
    """REST fallback item -> the same index row as `node_to_row`."""
    coll = item.get("collection")
    return {
        "title": item.get("title") or item.get("query_str"),
        "entryUUID": item.get("uuid"),
        "href": item.get("slug"),
        "mode": item.get("mode"),
        "displayModel": item.get("display_model"),
        "lastUpdated": item.get("last_query_datetime"),
        "status": item.get("status"),
        "space": (
            _space(coll.get("uuid"), coll.get("title"), coll.get("slug"))
            if isinstance(coll, dict)
            else None
        ),
    }


def graphql_body(cursor: str | None, count: int) -> dict[str, Any]:
    variables: dict[str, Any] = dict(C.GQL_BASE_VARIABLES)
    if cursor is None:
        op, digest = C.GQL_FIRST_PAGE_OP, C.GQL_FIRST_PAGE_HASH
    else:
        op, digest = C.GQL_NEXT_PAGE_OP, C.GQL_NEXT_PAGE_HASH
        variables["cursor"] = cursor
    variables["count"] = count
    return {
        "operationName": op,
        "variables": variables,
        "extensions": {"persistedQuery": {"version": 1, "sha256Hash": digest}},
    }


def iter_library_graphql(client: ApiClient, page_size: int = C.LIBRARY_PAGE_SIZE) -> Iterator[Row]:
    """Index rows from the GraphQL listing. Raises PersistedQueryNotFound if hashes rotated."""
    cursor: str | None = None
    seen: set[str] = set()
    while True:
        data = client.post(C.GRAPHQL_PATH, graphql_body(cursor, page_size))
        threads = as_dict(
            as_dict(as_dict(as_dict(data).get("data")).get("viewer")).get("recentGroup")
        ).get("threads")
        if not isinstance(threads, dict):
            errors = graphql_errors(data)
            if errors:
                # An error answer is not the end of the library: never let it look empty.
                first = as_dict(errors[0])
                reason = as_str(first.get("message")) or "GraphQL error"
                raise ApiError(f"GraphQL: {reason[:200]}", endpoint=f"POST {C.GRAPHQL_PATH}")
            return
        edges = dicts(threads.get("edges"))
        if not edges:
            return
        for edge in edges:
            node = edge.get("node")
            if isinstance(node, dict):
                yield node_to_row(node)
        info = as_dict(threads.get("pageInfo"))
        if not info.get("hasNextPage"):
            return
        cursor = as_str(info.get("endCursor"))
        if not cursor:
            return  # paging with an empty cursor repeats the first page
        if cursor in seen:
            log.warning("library listing repeated a cursor; stopping (loop guard)")
            return
        seen.add(cursor)


def iter_library_rest(client: ApiClient, page_size: int = C.LIBRARY_PAGE_SIZE) -> Iterator[Row]:
    """Index rows from the REST fallback listing (offset paging)."""
    offset = 0
    seen_pages: set[tuple[str, ...]] = set()
    while True:
        body = {"limit": page_size, "offset": offset, "ascending": False, "search_term": ""}
        data = client.post(C.LIST_ASK_THREADS_PATH, body, params=C.STD_QUERY)
        items = dicts(data.get("threads") if isinstance(data, dict) else as_list(data))
        if not items:
            return
        page_key = tuple(as_str(i.get("uuid")) for i in items)
        if page_key in seen_pages:
            log.warning("library fallback listing repeated a page; stopping (loop guard)")
            return
        seen_pages.add(page_key)
        for item in items:
            yield rest_item_to_row(item)
        if not items[-1].get("has_next_page"):
            return
        offset += len(items)


def iter_library(client: ApiClient, page_size: int = C.LIBRARY_PAGE_SIZE) -> Iterator[Row]:
    """GraphQL listing; on PERSISTED_QUERY_NOT_FOUND continue with the REST fallback.

    If the hashes rotate mid-listing, the fallback restarts from the top: rows already yielded
    are skipped, so the caller sees each thread once.
    """
    yielded: set[str] = set()
    try:
        for row in iter_library_graphql(client, page_size):
            yielded.add(as_str(row.get("entryUUID")))
            yield row
        return
    except PersistedQueryNotFound:
        log.warning(
            "library GraphQL persisted query not found (hashes rotated?); "
            "using the REST fallback listing"
        )
    for row in iter_library_rest(client, page_size):
        key = as_str(row.get("entryUUID"))
        if key and key in yielded:
            continue
        yield row
