"""Thread detail: plain and schematized pages with opaque cursors (protocol §2.4).

Pages are windows of `page_size` entries, each in conversation order. By default page one
holds the oldest entries; the `newest_first` switch serves the newest window first, as
live checks report (§9.2). A schematized page carries only the blocks whose use case the
request lists (`supported_block_use_cases`, see emulator/blocks.py). A thread answers at its
UUID and at its title slug (§9.4).
"""

from __future__ import annotations

import copy
import hashlib
import json

from pplx_export.emulator import assets as assetlib
from pplx_export.emulator import blocks as blocklib
from pplx_export.emulator.ask import complete_turn
from pplx_export.emulator.http import JSON, Request, Response, error
from pplx_export.emulator.library import DELETED, EXPIRED, ThreadRecord, blocks_from_plain
from pplx_export.util.lenient import dicts

THREAD_PREFIX = "/rest/thread/"
_THREAD_SUBPATHS = ("list_", "mark_viewed", "delete_")


def cursor_token(thread_uuid: str, flavor: str, page: int) -> str:
    """Opaque next_cursor with characters that must be percent-encoded (`/ = + &`)."""
    digest = hashlib.sha256(f"{thread_uuid}|{flavor}|{page}".encode()).hexdigest()[:10]
    return f"c/{page}={digest}+{flavor}&"


def thread_id_of(method: str, path: str) -> str:
    """The thread UUID of a thread-detail request (for `by_thread`), else ""."""
    if method != "GET" or not path.startswith(THREAD_PREFIX):
        return ""
    rest = path[len(THREAD_PREFIX) :]
    if not rest or "/" in rest or rest.startswith(_THREAD_SUBPATHS):
        return ""
    return rest


def _state_error(record: ThreadRecord) -> Response | None:
    if record.state == DELETED:
        return error(400, "ENTRY_DELETED", "This entry has been deleted")
    if record.state == EXPIRED:
        return error(400, "ENTRY_EXPIRED", "This entry has expired")
    return None


def window(n_entries: int, size: int, page: int, *, newest_first: bool) -> slice:
    """The entries of page `page` (0-based): oldest window first, or newest first."""
    if not newest_first:
        return slice(page * size, (page + 1) * size)
    end = n_entries - page * size
    return slice(max(0, end - size), end)


def thread_detail(req: Request) -> Response:
    library = req.app.library
    record = library.get(thread_id_of(req.method, req.path))  # a UUID or a title slug
    if record is None or req.app.take_hidden(record.uuid):
        return error(404, "THREAD_NOT_FOUND", "Not found")
    if record.uuid in library.forbidden_threads:
        return error(403, "VIEW_THREAD_NOT_ALLOWED", "You cannot view this thread")
    refused = _state_error(record)
    if refused is not None:
        return refused
    settled = req.app.take_settled(record.uuid)
    if settled:
        with library.lock:
            complete_turn(record, settled)
    schematized = req.arg("with_schematized_response").lower() == "true"
    flavor = "s" if schematized else "p"
    size = req.app.config.page_size
    with library.lock:
        if schematized:
            source = record.blocks if record.blocks is not None else blocks_from_plain(record.plain)
        else:
            source = record.plain
        entries = dicts(source.get("entries"))
        n_pages = max(1, -(-len(entries) // size))
        page = 0
        if "cursor" in req.query:
            sent = req.arg("cursor")
            matches = [n for n in range(1, n_pages) if cursor_token(record.uuid, flavor, n) == sent]
            if not matches:
                return error(400, "INVALID_CURSOR", "Unknown cursor")
            page = matches[0]
        last = page == n_pages - 1
        served = window(len(entries), size, page, newest_first=req.app.faults.spec.newest_first)
        payload: JSON = {
            "thread_metadata": source.get("thread_metadata"),
            "entries": entries[served],
            "background_entries": dicts(source.get("background_entries")) if last else [],
            "has_next_page": not last,
            "next_cursor": "" if last else cursor_token(record.uuid, flavor, page + 1),
        }
        if schematized:
            payload = copy.deepcopy(payload)
            blocklib.withhold(payload, set(req.query.get("supported_block_use_cases", [])))
            assetlib.rewrite_blocks_page(payload, req.app.base_url)
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    return Response(200, body)
