"""Thread detail, plain and schematized, merged across cursor pages (protocol.md §2.3, §2.4).

The merged result looks like one page: the first page's dict (so `thread_metadata` and every
other top-level key come from page one), with `entries` and `background_entries` concatenated
over all pages (an entry a server repeats on a later page is kept once) and `has_next_page` /
`next_cursor` from the last page fetched. That is what `raw_entries.json` / `raw_blocks.json`
store.

A thread is never returned short: when the listing says there is more but it cannot be had
(a repeated cursor, or the safety cap), `IncompleteThread` is raised with what was fetched.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from pplx_export.errors import SchemaError
from pplx_export.site import constants as C
from pplx_export.site.client import ApiClient, Params
from pplx_export.util.lenient import as_list, as_str

JSON = dict[str, Any]


def thread_path(uuid: str) -> str:
    return C.THREAD_PATH.format(uuid=quote(uuid, safe=""))


def plain_params(cursor: str | None = None) -> list[tuple[str, str]]:
    params = list(C.STD_QUERY)
    if cursor:
        params.append(("cursor", cursor))
    return params


def schematized_params(cursor: str | None = None) -> list[tuple[str, str]]:
    params: list[tuple[str, str]] = [
        ("with_parent_info", "true"),
        ("with_schematized_response", "true"),
        *C.STD_QUERY,
        ("limit", str(C.SCHEMATIZED_LIMIT)),
        ("offset", "0"),
        ("from_first", "false"),
    ]
    params += [("supported_block_use_cases", case) for case in C.SCHEMATIZED_BLOCK_USE_CASES]
    if cursor:
        params.append(("cursor", cursor))
    return params


class IncompleteThread(SchemaError):
    """The listing said there was more, but the rest could not be fetched. `partial` holds the
    pages that were (merged, `has_next_page` still true)."""

    def __init__(self, message: str, *, thread: str, partial: JSON) -> None:
        super().__init__(message, thread=thread)
        self.partial = partial


def _unique(items: list[Any]) -> list[Any]:
    """Entries in page order, an entry whose `uuid` was already seen dropped (a server that
    repeats an entry across pages must not duplicate a turn)."""
    seen: set[str] = set()
    out: list[Any] = []
    for item in items:
        key = as_str(item.get("uuid")) if isinstance(item, dict) else ""
        if key:
            if key in seen:
                continue
            seen.add(key)
        out.append(item)
    return out


def merge_pages(pages: list[JSON]) -> JSON:
    """Page one's dict with entries/background_entries concatenated over every page."""
    merged = dict(pages[0])
    merged["entries"] = _unique([e for p in pages for e in as_list(p.get("entries"))])
    merged["background_entries"] = _unique(
        [e for p in pages for e in as_list(p.get("background_entries"))]
    )
    merged["has_next_page"] = pages[-1].get("has_next_page", False)
    merged["next_cursor"] = pages[-1].get("next_cursor", "")
    return merged


def fetch_thread(
    client: ApiClient,
    uuid: str,
    *,
    schematized: bool = False,
    max_pages: int | None = None,
    timeout: float | None = None,
) -> JSON:
    """Fetch every page of a thread and merge them.

    Stops when `has_next_page` is falsy or `next_cursor` empty. A repeated cursor (a looping
    server) or `max_pages` (default: the safety cap) raises `IncompleteThread`.
    """
    limit = max_pages or C.THREAD_PAGE_SAFETY_CAP
    flavor = "schematized" if schematized else "plain"
    path = thread_path(uuid)
    pages: list[JSON] = []
    cursor: str | None = None
    seen: set[str] = set()
    while True:
        params: Params = schematized_params(cursor) if schematized else plain_params(cursor)
        # The protocol asks for 4 s before the schematized fetch (vs 3 s between pages).
        scale = C.BLOCKS_PACE_SCALE if schematized and not pages else 1.0
        page = client.get(path, params=params, timeout=timeout, pace_scale=scale)
        if not isinstance(page, dict):
            raise SchemaError(
                f"thread page {len(pages) + 1} is {type(page).__name__}, not an object",
                thread=uuid,
                path="$",
            )
        pages.append(page)
        if not page.get("has_next_page"):
            break
        cursor = as_str(page.get("next_cursor"))
        if not cursor:
            break
        if cursor in seen:
            raise IncompleteThread(
                f"the {flavor} listing repeated a page cursor after {len(pages)} pages "
                "although it said there was more",
                thread=uuid,
                partial=merge_pages(pages),
            )
        seen.add(cursor)
        if len(pages) >= limit:
            raise IncompleteThread(
                f"the {flavor} listing did not end after {limit} pages (safety cap)",
                thread=uuid,
                partial=merge_pages(pages),
            )
    return merge_pages(pages)
