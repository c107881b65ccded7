"""Spaces (collections): metadata, thread lists, the user's spaces, create, move (§2.6)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

from pplx_export.errors import ApiError, AuthError, SchemaError
from pplx_export.site import constants as C
from pplx_export.site.client import ApiClient
from pplx_export.util.lenient import as_list, as_str, dicts

log = logging.getLogger("pplx_export.site")

JSON = dict[str, Any]


def get_collection(client: ApiClient, slug: str) -> JSON:
    """Space metadata. No view access -> PermissionDenied (a 200 `status: failed` body)."""
    data = client.get(
        C.GET_COLLECTION_PATH,
        params=[("collection_slug", slug), *C.STD_QUERY],
        timeout=C.META_TIMEOUT,
    )
    if not isinstance(data, dict):
        raise SchemaError("space metadata is not an object", path=f"collection {slug}")
    return data


def _items(data: Any, *keys: str) -> list[JSON]:
    if isinstance(data, dict):
        for key in keys:
            if isinstance(data.get(key), list):
                return dicts(data[key])
        return []
    return dicts(as_list(data))


def iter_collection_threads(client: ApiClient, slug: str) -> Iterator[JSON]:
    """Every thread item of a space, offset-paged while `items[0].has_next_page`.

    The web UI's filter flags are sent explicitly (§9.5: `filter_by_user=false`,
    `include_user_and_shared_threads=true`, ...): the server's defaults are unknown, and a
    default that filters by user would leave out the other members' threads.
    """
    offset = 0
    seen_pages: set[tuple[str, ...]] = set()
    while True:
        data = client.get(
            C.LIST_COLLECTION_THREADS_PATH,
            params=[
                ("collection_slug", slug),
                *C.COLLECTION_THREAD_FLAGS,
                ("offset", str(offset)),
                *C.STD_QUERY,
            ],
            timeout=C.META_TIMEOUT,
        )
        items = _items(data, "threads")
        if not items:
            return
        page_key = tuple(as_str(i.get("uuid")) for i in items)
        if page_key in seen_pages:
            log.warning("space %s listing repeated a page; stopping (loop guard)", slug)
            return
        seen_pages.add(page_key)
        yield from items
        if not items[0].get("has_next_page"):
            return
        offset += len(items)


def list_user_collections(client: ApiClient) -> list[JSON]:
    """Every space of the user: `limit=30&offset=N` pages while the last item says
    `has_next_page` (§9.5); an empty page, a short page without the flag, or a page seen
    before ends it."""
    out: list[JSON] = []
    offset = 0
    size = C.USER_COLLECTIONS_PAGE_SIZE
    seen_pages: set[tuple[str, ...]] = set()
    while True:
        data = client.get(
            C.LIST_USER_COLLECTIONS_PATH,
            params=[("limit", str(size)), ("offset", str(offset)), *C.STD_QUERY],
            timeout=C.META_TIMEOUT,
        )
        items = _items(data, "collections", "items")
        if not items:
            return out
        page_key = tuple(as_str(i.get("uuid")) for i in items)
        if page_key in seen_pages:
            log.warning("list_user_collections repeated a page; stopping (loop guard)")
            return out
        seen_pages.add(page_key)
        out.extend(items)
        more = items[-1].get("has_next_page")
        if not (more if isinstance(more, bool) else len(items) >= size):
            return out
        offset += len(items)


def create_collection(
    client: ApiClient, title: str, *, description: str = "", emoji: str = "1f4c1"
) -> JSON:
    body = {
        "title": title,
        "description": description,
        "emoji": emoji,
        "appearance": None,
        "instructions": "",
        "access": 1,
    }
    # Not retried: a retry after a lost answer could create a second space.
    data = client.post(
        C.CREATE_COLLECTION_PATH, body, params=C.STD_QUERY, timeout=C.META_TIMEOUT, retry=False
    )
    if not isinstance(data, dict):
        raise SchemaError("create_collection answer is not an object", path=title)
    return data


def batch_move_threads(
    client: ApiClient, context_uuids: Sequence[str], collection_uuid: str
) -> Any:
    """Move threads (by **context** UUID, never the entry/web UUID) into a space."""
    body = {"context_uuids": list(context_uuids), "new_collection_uuid": collection_uuid}
    return client.post(C.BATCH_MOVE_THREADS_PATH, body, params=C.STD_QUERY, timeout=C.META_TIMEOUT)


def upsert_thread_collection(client: ApiClient, context_uuid: str, collection_uuid: str) -> Any:
    """Move one thread (by context UUID) into a space, as the 2026 web UI does (§9.5)."""
    body = {
        "new_collection_uuid": collection_uuid,
        "context_uuid": context_uuid,
        "return_collection": False,
        "return_thread": False,
    }
    return client.post(
        C.UPSERT_THREAD_COLLECTION_PATH, body, params=C.STD_QUERY, timeout=C.META_TIMEOUT
    )


def move_to_space(client: ApiClient, context_uuid: str, collection_uuid: str) -> str:
    """`upsert_thread_collection`, falling back to `batch_move_threads` when the server does
    not know it (any API error but a dead session: the move is idempotent, so asking the
    older endpoint after a failed newer one cannot move twice). Returns the path used."""
    try:
        upsert_thread_collection(client, context_uuid, collection_uuid)
        return C.UPSERT_THREAD_COLLECTION_PATH
    except AuthError:
        raise
    except ApiError as exc:
        log.info("upsert_thread_collection failed (%s); trying batch_move_threads", exc)
    batch_move_threads(client, [context_uuid], collection_uuid)
    return C.BATCH_MOVE_THREADS_PATH
