"""The library listings: REST as the live site lists (§9.3) and GraphQL (§2.2).

By default the emulator lists like the web UI did in May 2026: `list_ask_threads` answers
rows of the live shape (naive `last_query_datetime`, UI `mode` `copilot` / `concise` /
`asi` with `display_model`, the §9.3 keys) and GraphQL answers PERSISTED_QUERY_NOT_FOUND.
`Emulator.listing` ("rest" | "both" | "graphql", the `--listing` flag and the `listing`
mutation) says which listings answer. The UI mode is derived here from the thread's raw
entries (`search_mode`, `display_model`), never stored in the library.
"""

from __future__ import annotations

import base64
import json

from pplx_export.emulator.assets import iter_assets, rewrite_asset_urls
from pplx_export.emulator.http import JSON, Request, Response, error, json_response
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
    if (
        not req.app.serves("graphql")
        or req.app.faults.spec.graphql_rotated
        or GRAPHQL_HASHES.get(operation) != sent_hash
    ):
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


# Entry search_mode -> (archive mode); the most specific one of a thread wins.
_SEARCH_MODES = {
    "ASI": "computer",
    "AGENTIC_RESEARCH": "council",
    "STUDY": "study",
    "RESEARCH": "deep-research",
}
_SPECIFIC = ("computer", "council", "study", "deep-research")
# The display_model the UI shows for a mode that only the model tells apart (§9.3).
_MODE_MODEL = {
    "deep-research": "pplx_alpha",
    "council": "pplx_agentic_research",
    "study": "pplx_study",
    "computer": "PPLX_ASI",
}


def ui_mode(record: ThreadRecord) -> tuple[str, str]:
    """(`mode`, `display_model`) of a live REST row, from the thread's raw entries.

    `asi` for computer threads (model `PPLX_ASI`); `copilot` for the rest, with the model
    that tells deep research, council and study apart; `concise` for a quick search (an
    entry that says `mode: concise`, or the `turbo` model)."""
    modes = {_SEARCH_MODES.get(as_str(e.get("search_mode")).upper(), "") for e in record.entries}
    mode = next((m for m in _SPECIFIC if m in modes), "") or record.mode
    if mode == "computer":
        return "asi", "PPLX_ASI"
    if mode in _MODE_MODEL:
        return "copilot", _MODE_MODEL[mode]
    model = record.display_model
    if model in _MODE_MODEL.values():
        model = "pplx_pro"  # a search thread must not read as another mode
    first = record.entries[0] if record.entries else {}
    concise = as_str(first.get("mode")).lower() == "concise" or model == "turbo"
    return ("concise" if concise else "copilot"), model or "pplx_pro"


def naive_time(record: ThreadRecord) -> str:
    """`last_query_datetime` as the live site writes it: naive UTC with µs, no `Z`."""
    return record.updated_at.strftime("%Y-%m-%dT%H:%M:%S.%f")


def _row_assets(req: Request, record: ThreadRecord) -> list[JSON]:
    """A computer row's files, with freshly "signed" URLs (as the UI's `include_assets`)."""
    if record.blocks is None:
        return []
    out = []
    for _entry, asset in iter_assets(record.blocks):
        copy = json.loads(json.dumps(asset))
        rewrite_asset_urls(copy, req.app.base_url)
        out.append(copy)
    return out


def live_row(req: Request, record: ThreadRecord, *, more: bool, total: int) -> JSON:
    """One `list_ask_threads` row with the keys seen in May 2026 (§9.3)."""
    space = space_ref(req, record)
    mode, model = ui_mode(record)
    first = record.entries[0] if record.entries else {}
    assets = _row_assets(req, record) if mode == "asi" else []
    row: JSON = {
        "uuid": record.uuid,
        "slug": record.slug,
        "title": record.title,
        "query_str": record.first_query,
        "first_answer": json.dumps({"answer": ""}),
        "answer_preview": "",
        "mode": mode,
        "display_model": model,
        "search_focus": as_str(first.get("search_focus")) or "internet",
        "last_query_datetime": naive_time(record),
        "status": record.status,
        "thread_status": record.status.lower(),
        "locked_reason": first.get("locked_reason"),
        "context_uuid": record.context_uuid,
        "frontend_context_uuid": as_str(first.get("frontend_context_uuid")),
        "frontend_uuid": as_str(first.get("frontend_uuid")),
        "read_write_token": "",
        "query_count": len(record.entries),
        "thread_access": first.get("thread_access") or 1,
        "source": as_str(first.get("source")) or "default",
        "unread": False,
        "expiry_time": None,
        "assets": assets,
        "num_assets": len(assets),
        "attachments": [],
        "featured_images": [],
        "crons": [],
        "wake_at": None,
        "has_next_page": more,
        "total_threads": total,
    }
    if space:  # only for a thread in a space
        row["collection"] = {
            "uuid": space.uuid,
            "title": space.title,
            "emoji": space.emoji,
            "slug": space.slug,
        }
    return row


def list_ask_threads(req: Request) -> Response:
    if not req.app.serves("rest"):
        return error(404, "NOT_FOUND", path=req.path)
    body = req.json()
    limit = lenient_int(body.get("limit")) or 20
    offset = max(0, lenient_int(body.get("offset")))
    rows = req.app.library.listing(
        ascending=bool(body.get("ascending")), search=as_str(body.get("search_term"))
    )
    if body.get("exclude_asi"):
        rows = [r for r in rows if ui_mode(r)[0] != "asi"]
    page = rows[offset : offset + limit]
    more = offset + len(page) < len(rows)
    return json_response(200, [live_row(req, r, more=more, total=len(rows)) for r in page])
