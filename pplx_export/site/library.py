"""Library listing: the REST listing the web UI uses, and the GraphQL persisted queries.

Two listings of the same library (protocol.md §2.2, §9.3). In May 2026 the web UI made no
GraphQL request at all: it listed with `POST /rest/thread/list_ask_threads`, so REST is a
first-class listing here, not a fallback. Which one is tried first is a setting
(`[network] listing = "auto" | "rest" | "graphql"`, see `listing_order`); when the first is
unavailable (GraphQL `PERSISTED_QUERY_NOT_FOUND`, REST answering 404 or not a list) the other
continues, from the top, skipping the threads already yielded.

Both are generators of index rows, newest first, so the incremental index can stop early.
Paging has no page cap: it ends on the protocol's stop rules, and a cursor (or REST page)
seen before ends it too, so a server that repeats itself cannot loop us forever.

REST (§9.3): body `{"limit": 20, "ascending": false, "offset": N, "search_term": "",
"exclude_asi": false, "include_assets": true}` -> a JSON array (or `{"threads": [...]}`) of
rows, each carrying `has_next_page` and `total_threads`. Stop on: an empty page; the last
row's `has_next_page` false; a page seen before; and when no row says `has_next_page` at all,
a short page or `offset` reaching `total_threads`. `exclude_asi: false` is what brings
computer rows (`mode: "asi"`) into the listing; `list_computer_tasks` and
`list_pinned_ask_threads` are not needed for completeness (docs/network.md).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pplx_export.errors import ApiError, NotFound, SchemaError
from pplx_export.site import constants as C
from pplx_export.site.classify import PersistedQueryNotFound, graphql_errors
from pplx_export.site.client import ApiClient
from pplx_export.util.lenient import as_dict, as_str, dicts
from pplx_export.util.timefmt import canonical_time

log = logging.getLogger("pplx_export.site")

Row = dict[str, Any]

REST, GRAPHQL, AUTO = "rest", "graphql", "auto"
LISTINGS = (REST, GRAPHQL)
LISTING_SETTINGS = (AUTO, REST, GRAPHQL)
GRAPHQL_FIRST = (GRAPHQL, REST)
# REST row keys kept in the index row as they are (protocol.md §9.3).
REST_EXTRAS = ("context_uuid", "query_count", "thread_status", "locked_reason", "source", "assets")


class ListingUnavailable(Exception):
    """This listing cannot list the library here (the other one may)."""


def listing_order(setting: str, remembered: str = "") -> tuple[str, ...]:
    """Which listing to try first, and second.

    `rest` / `graphql` name the first; the other is the second. `auto` tries the listing
    that worked last time first (`remembered`), else REST: the web UI's own road.
    """
    first = setting if setting in LISTINGS else (remembered if remembered in LISTINGS else REST)
    return (first, *(name for name in LISTINGS if name != first))


def _space(value: Any, uuid_key: str) -> dict[str, str] | None:
    """A listing's space object (its uuid under `uuid_key`) -> the index row's `space`."""
    if not isinstance(value, dict):
        return None
    uuid, title, slug = value.get(uuid_key), value.get("title"), value.get("slug")
    if not (uuid or title or slug):
        return None
    return {"uuid": as_str(uuid), "title": as_str(title), "slug": as_str(slug)}


def node_to_row(node: dict[str, Any]) -> Row:
    """GraphQL thread node -> index row (keys in the archive's order)."""
    model = node.get("displayModel")
    return {
        "title": node.get("name"),
        "entryUUID": node.get("entryId"),
        "href": node.get("slug"),
        "mode": node.get("mode"),
        "displayModel": model.get("modelID") if isinstance(model, dict) else None,
        "lastUpdated": canonical_time(node.get("updatedAt")),
        "status": node.get("status"),
        "space": _space(node.get("space"), "spaceUuid"),
    }


def rest_item_to_row(item: dict[str, Any]) -> Row:
    """REST row -> the same index row as `node_to_row`, plus the §9.3 fields GraphQL lacks.

    `mode` stays the UI mode (`copilot`, `concise`, `asi`); `parse.mode.row_archive_mode`
    reads it with `display_model`. `last_query_datetime` is naive UTC: brought to the
    canonical clock like GraphQL's `updatedAt`.
    """
    row: Row = {
        "title": item.get("title") or item.get("query_str"),
        "entryUUID": item.get("uuid"),
        "href": item.get("slug"),
        "mode": item.get("mode"),
        "displayModel": item.get("display_model"),
        "lastUpdated": canonical_time(item.get("last_query_datetime")),
        "status": item.get("status"),
        "space": _space(item.get("collection"), "uuid"),
    }
    for key in REST_EXTRAS:
        if item.get(key) not in (None, "", []):
            row[key] = item[key]
    return row


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


def rest_body(offset: int, page_size: int = C.REST_LIBRARY_PAGE_SIZE) -> dict[str, Any]:
    """The web UI's list_ask_threads body (§9.3)."""
    return {
        "limit": page_size,
        "ascending": False,
        "offset": offset,
        "search_term": "",
        "exclude_asi": False,
        "include_assets": True,
    }


def _rest_items(data: Any, first_page: bool) -> list[dict[str, Any]]:
    if isinstance(data, list):
        return dicts(data)
    if isinstance(data, dict) and isinstance(data.get("threads"), list):
        return dicts(data["threads"])
    what = f"list_ask_threads answered {type(data).__name__}, not a list of threads"
    if first_page:
        raise ListingUnavailable(what)
    raise SchemaError(what, path=f"POST {C.LIST_ASK_THREADS_PATH}")


def _rest_more(items: list[dict[str, Any]], offset: int, page_size: int) -> bool:
    """Whether another page follows `items` (which start at `offset`)."""
    flags = [i["has_next_page"] for i in items if isinstance(i.get("has_next_page"), bool)]
    if flags:
        return bool(flags[-1])
    # No row says: a full page may have more; `total_threads` (when sent) bounds it.
    total = items[-1].get("total_threads")
    if isinstance(total, int) and not isinstance(total, bool) and offset + len(items) >= total:
        return False
    return len(items) >= page_size


def iter_library_rest(
    client: ApiClient, page_size: int = C.REST_LIBRARY_PAGE_SIZE
) -> Iterator[Row]:
    """Index rows from the REST listing (offset paging, the web UI's body).

    Raises ListingUnavailable when the endpoint is missing (404) or its first answer is not
    a listing."""
    offset = 0
    seen_pages: set[tuple[str, ...]] = set()
    while True:
        try:
            data = client.post(
                C.LIST_ASK_THREADS_PATH, rest_body(offset, page_size), params=C.STD_QUERY
            )
        except NotFound as exc:
            if offset == 0:
                raise ListingUnavailable(str(exc)) from exc
            raise
        items = _rest_items(data, offset == 0)
        if not items:
            return
        page_key = tuple(as_str(i.get("uuid")) for i in items)
        if page_key in seen_pages:
            log.warning("library REST listing repeated a page; stopping (loop guard)")
            return
        seen_pages.add(page_key)
        for item in items:
            yield rest_item_to_row(item)
        if not _rest_more(items, offset, page_size):
            return
        offset += len(items)


@dataclass
class ListingRun:
    """Which listing answered (`used`), for `auto` to remember; `tried` in order."""

    order: tuple[str, ...] = (REST, GRAPHQL)
    used: str = ""
    tried: list[str] = field(default_factory=list)


def _one(client: ApiClient, name: str) -> Iterator[Row]:
    if name == GRAPHQL:
        return iter_library_graphql(client)
    return iter_library_rest(client)


def iter_library(client: ApiClient, run: ListingRun | None = None) -> Iterator[Row]:
    """The library, newest first, through the first listing of `run.order` that works.

    A listing that turns out unavailable (also mid-listing: hashes can rotate between two
    pages) hands over to the next, which restarts from the top: rows already yielded are
    skipped, so the caller sees each thread once. `run.used` names the listing that
    answered last (set as soon as it yields, so a consumer that stops early still learns it).
    """
    run = run or ListingRun()
    yielded: set[str] = set()
    last_error: Exception | None = None
    for name in run.order:
        run.tried.append(name)
        try:
            for row in _one(client, name):
                run.used = name
                key = as_str(row.get("entryUUID"))
                if key and key in yielded:
                    continue
                yielded.add(key)
                yield row
            run.used = name
            return
        except (PersistedQueryNotFound, ListingUnavailable) as exc:
            last_error = exc
            log.warning("library listing %s unavailable (%s); trying the next one", name, exc)
    raise ApiError(
        f"no library listing answered ({', '.join(run.tried)}): {last_error}",
        endpoint=f"POST {C.LIST_ASK_THREADS_PATH}",
    )
