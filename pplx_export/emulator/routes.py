"""Endpoint handlers. Each takes a `Request` and answers through its handler's send_* methods."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import uuid as uuidlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from pplx_export.emulator import assets as assetlib
from pplx_export.emulator.ask import AskError, sse_frame, start_ask
from pplx_export.emulator.library import (
    DELETED,
    EXPIRED,
    OK,
    SpaceRecord,
    ThreadRecord,
    blocks_from_plain,
    space_slug,
)
from pplx_export.util.lenient import as_dict, as_list, as_str, dicts, lenient_int

if TYPE_CHECKING:
    from pplx_export.emulator.server import EmulatorHandler, EmulatorServer

JSON = dict[str, Any]

API_VERSION = "2.18"
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
SPACE_PAGE = 20
THREAD_PREFIX = "/rest/thread/"
_THREAD_SUBPATHS = ("list_", "mark_viewed", "delete_")


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    body: bytes
    handler: EmulatorHandler
    server: EmulatorServer
    identity: tuple[str, str] = ("", "")  # (email, name) of the session cookie's account

    def arg(self, name: str, default: str = "") -> str:
        values = self.query.get(name)
        return values[0] if values else default

    def json(self) -> JSON:
        try:
            value = json.loads(self.body or b"{}")
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}


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


def route(req: Request) -> None:
    handler = _ROUTES.get((req.method, req.path))
    if handler is not None:
        handler(req)
        return
    if req.method == "GET" and thread_id_of(req.method, req.path):
        thread_detail(req)
        return
    if req.method == "GET" and req.path.startswith("/rest/assets/") and req.path.endswith("/data"):
        asset_data(req)
        return
    req.handler.send_json(404, {"error_code": "NOT_FOUND", "path": req.path})


# -- session, models, usage, read receipts ------------------------------------------------


def session(req: Request) -> None:
    email, name = req.identity
    username = email.split("@", 1)[0]
    if email == req.server.config.email:
        username = req.server.config.username
    req.handler.send_json(
        200,
        {
            "user": {
                "name": name,
                "email": email,
                "image": None,
                "id": str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"emulator-user:{email}")),
                "username": username,
            },
            "expires": "2099-01-01T00:00:00.000Z",
        },
    )


MODELS_CONFIG: JSON = {
    "models": {
        "pplx_pro": {"label": "Best", "mode": "search", "provider": "perplexity"},
        "experimental": {"label": "Sonar 2", "mode": "search", "provider": "perplexity"},
        "pplx_alpha": {"label": "Deep Research", "mode": "research", "provider": "perplexity"},
        "pplx_agentic_research": {
            "label": "Model Council",
            "mode": "agentic_research",
            "provider": "perplexity",
        },
        "pplx_study": {"label": "Study", "mode": "study", "provider": "perplexity"},
        "pplx_asi": {"label": "Computer", "mode": "asi", "provider": "perplexity"},
        "gpt56_sol_thinking": {"label": "GPT-5.6 Thinking", "mode": "search", "provider": "openai"},
        "claude50opusthinking": {
            "label": "Claude Opus 5.0 Thinking",
            "mode": "search",
            "provider": "anthropic",
        },
        "gemini31pro_high": {"label": "Gemini 3.1 Pro", "mode": "search", "provider": "google"},
    },
    "default_models": {
        "search": "pplx_pro",
        "research": "pplx_alpha",
        "agentic_research": "pplx_agentic_research",
        "study": "pplx_study",
        "asi": "pplx_asi",
    },
    "agentic_research_compare_models": [
        "gpt56_sol_thinking",
        "claude50opusthinking",
        "gemini31pro_high",
    ],
    "search_config": [],
    "computer_config": [],
}


def models_config(req: Request) -> None:
    req.handler.send_json(200, MODELS_CONFIG)


def thread_usage(req: Request) -> None:
    context_uuid = req.arg("thread_id")
    if not context_uuid or not req.server.library.by_context(context_uuid):
        req.handler.send_json(
            403,
            {
                "error_code": "thread_usage_forbidden",
                "message": "Thread does not belong to the current user",
            },
        )
        return
    cents = int(hashlib.sha256(context_uuid.encode()).hexdigest()[:6], 16) % 50000 / 100
    req.handler.send_json(
        200,
        {"usage_cents": cents, "meter_usage": [{"meter_type": "token_usage", "cost_cents": cents}]},
    )


def mark_viewed(req: Request) -> None:
    ids = [as_str(v) for v in as_list(req.json().get("context_uuids"))]
    if not ids:
        req.handler.send_json(400, {"error_code": "INVALID_REQUEST", "message": "no context_uuids"})
        return
    req.handler.send_json(200, {"status": "success"})


# -- library listings -----------------------------------------------------------------------


def _space_ref(req: Request, record: ThreadRecord) -> SpaceRecord | None:
    return req.server.library.spaces.get(record.space_uuid) if record.space_uuid else None


def _node(req: Request, record: ThreadRecord) -> JSON:
    space = _space_ref(req, record)
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


def graphql(req: Request) -> None:
    body = req.json()
    operation = as_str(body.get("operationName"))
    sent_hash = as_str(
        as_dict(as_dict(body.get("extensions")).get("persistedQuery")).get("sha256Hash")
    )
    if req.server.faults.spec.graphql_rotated or GRAPHQL_HASHES.get(operation) != sent_hash:
        req.handler.send_json(200, PERSISTED_QUERY_NOT_FOUND)
        return
    variables = as_dict(body.get("variables"))
    count = lenient_int(variables.get("count")) or 25
    offset = 0
    if operation == "LibraryRecentThreadsPaginationQuery":
        index = _relay_index(as_str(variables.get("cursor")))
        if index is None:
            req.handler.send_json(200, {"errors": [{"message": "Invalid cursor"}], "data": None})
            return
        offset = index + 1
    ascending = as_str(variables.get("sortOrder")).upper() == "OLDEST"
    rows = req.server.library.listing(
        ascending=ascending, search=as_str(variables.get("searchTerm"))
    )
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
    req.handler.send_json(200, {"data": {"viewer": {"recentGroup": {"threads": threads}}}})


def list_ask_threads(req: Request) -> None:
    body = req.json()
    limit = lenient_int(body.get("limit")) or 25
    offset = max(0, lenient_int(body.get("offset")))
    rows = req.server.library.listing(
        ascending=bool(body.get("ascending")), search=as_str(body.get("search_term"))
    )
    page = rows[offset : offset + limit]
    more = offset + len(page) < len(rows)
    out = []
    for record in page:
        space = _space_ref(req, record)
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
    req.handler.send_json(200, out)


# -- thread detail ---------------------------------------------------------------------------


def _state_error(req: Request, record: ThreadRecord) -> bool:
    if record.state == DELETED:
        req.handler.send_json(
            400, {"error_code": "ENTRY_DELETED", "message": "This entry has been deleted"}
        )
        return True
    if record.state == EXPIRED:
        req.handler.send_json(
            400, {"error_code": "ENTRY_EXPIRED", "message": "This entry has expired"}
        )
        return True
    return False


def thread_detail(req: Request) -> None:
    thread_id = thread_id_of(req.method, req.path)
    library = req.server.library
    record = library.get(thread_id)
    if record is None:
        req.handler.send_json(404, {"error_code": "THREAD_NOT_FOUND", "message": "Not found"})
        return
    if _state_error(req, record):
        return
    schematized = req.arg("with_schematized_response").lower() == "true"
    flavor = "s" if schematized else "p"
    size = req.server.config.page_size
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
                req.handler.send_json(
                    400, {"error_code": "INVALID_CURSOR", "message": "Unknown cursor"}
                )
                return
            page = matches[0]
        last = page == n_pages - 1
        payload: JSON = {
            "thread_metadata": source.get("thread_metadata"),
            "entries": entries[page * size : (page + 1) * size],
            "background_entries": dicts(source.get("background_entries")) if last else [],
            "has_next_page": not last,
            "next_cursor": "" if last else cursor_token(record.uuid, flavor, page + 1),
        }
        if schematized:
            payload = copy.deepcopy(payload)
            assetlib.rewrite_blocks_page(payload, req.server.base_url)
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    if getattr(req.handler, "_truncate", False):
        body = body[: max(1, len(body) // 2)]
    req.handler.send_bytes(200, body, "application/json; charset=utf-8")


# -- spaces ----------------------------------------------------------------------------------


def _collection(req: Request, space: SpaceRecord) -> JSON:
    cfg = req.server.config
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
            "url": f"{req.server.base_url}/spaces/{space.slug}",
            "access": out.get("access") or 1,
            "max_contributors": out.get("max_contributors") or 5,
            "owner_user": out.get("owner_user") or owner,
            "contributor_users": as_list(out.get("contributor_users")),
            "user_permission": 4,
            "thread_count": len(req.server.library.space_threads(space.uuid)),
        }
    )
    return out


def get_collection(req: Request) -> None:
    slug = req.arg("collection_slug")
    library = req.server.library
    if slug in library.forbidden_spaces:
        req.handler.send_json(
            200, {"status": "failed", "_response_type": "VIEW_COLLECTION_NOT_ALLOWED"}
        )
        return
    space = library.space_by_slug(slug)
    if space is None:
        req.handler.send_json(404, {"error_code": "COLLECTION_NOT_FOUND", "message": slug})
        return
    req.handler.send_json(200, _collection(req, space))


def list_collection_threads(req: Request) -> None:
    library = req.server.library
    space = library.space_by_slug(req.arg("collection_slug"))
    if space is None:
        req.handler.send_json(404, {"error_code": "COLLECTION_NOT_FOUND"})
        return
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
                "author_name": req.server.config.name,
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
    req.handler.send_json(200, out)


def list_user_collections(req: Request) -> None:
    library = req.server.library
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
    req.handler.send_json(200, out)


def create_collection(req: Request) -> None:
    body = req.json()
    title = as_str(body.get("title")).strip()
    if not title:
        req.handler.send_json(400, {"error_code": "INVALID_REQUEST", "message": "title required"})
        return
    space_uuid = req.server.new_id()
    space = SpaceRecord(
        uuid=space_uuid,
        title=title,
        slug=space_slug(title, space_uuid),
        description=as_str(body.get("description")),
        emoji=as_str(body.get("emoji")) or "1f4c1",
    )
    req.server.library.add_space(space)
    req.handler.send_json(200, _collection(req, space))


def batch_move_threads(req: Request) -> None:
    body = req.json()
    target = as_str(body.get("new_collection_uuid"))
    ids = [as_str(v) for v in as_list(body.get("context_uuids")) if as_str(v)]
    library = req.server.library
    if target not in library.spaces:
        req.handler.send_json(404, {"error_code": "COLLECTION_NOT_FOUND"})
        return
    moved = library.move(ids, target)
    req.handler.send_json(200, {"status": "success", "moved": moved})


# -- assets ----------------------------------------------------------------------------------


def find_asset(server: EmulatorServer, asset_uuid: str) -> assetlib.AssetRef | None:
    for record in server.library.iter_threads():
        if record.blocks is None:
            continue
        for entry_uuid, asset in assetlib.iter_assets(record.blocks):
            if as_str(asset.get("uuid")) == asset_uuid:
                return assetlib.AssetRef(asset_uuid, record.uuid, entry_uuid, asset)
    return None


def _asset_not_found(req: Request) -> None:
    req.handler.send_json(404, {"error_code": "ASSET_NOT_FOUND", "message": "Asset not found"})


def asset_data(req: Request) -> None:
    asset_uuid = req.path[len("/rest/assets/") : -len("/data")]
    server = req.server
    if asset_uuid.startswith("toolu_") or asset_uuid in server.library.expired_assets:
        _asset_not_found(req)
        return
    ref = find_asset(server, asset_uuid)
    if ref is None:
        _asset_not_found(req)
        return
    url, filename = assetlib.first_url(ref.asset)
    if not url:
        _asset_not_found(req)
        return
    fresh = assetlib.file_url(server.base_url, asset_uuid, assetlib.url_name(url, filename))
    fresh += "?Expires=4102444800&Signature=emulator-fresh"
    asset_type = as_str(ref.asset.get("asset_type")) or (
        "RESEARCH_REPORT" if ref.asset.get("research_report") else "UNKNOWN"
    )
    file_key = next(
        (k for k in assetlib.FILE_KEYS if isinstance(ref.asset.get(k), dict)), "doc_file"
    )
    record = server.library.get(ref.thread_uuid)
    req.handler.send_json(
        200,
        {
            "asset_data": {
                "download_info": [{"url": fresh, "filename": filename, "is_exportable": True}],
                file_key: {"url": fresh, "filename": filename},
            },
            "entry_uuid": ref.entry_uuid,
            "context_uuid": record.context_uuid if record else "",
            "source_thread_path": f"/search/{ref.thread_uuid}",
            "thread_access": 1,
            "is_owner": True,
            "has_owning_space": bool(record and record.space_uuid),
            "asset_type": asset_type,
            "signed_url": None,
            "read_write_token": None,
            "allow_remix": False,
        },
    )


def serve_file(handler: EmulatorHandler, server: EmulatorServer, _path: str) -> None:
    """The CDN stand-in. No cookie needed (signed URLs carry their own authorisation)."""
    raw = urlsplit(handler.path).path[len(assetlib.FILES_PREFIX) :]
    parts = raw.split("/")
    if len(parts) != 2:
        handler.send_json(404, {"error_code": "NOT_FOUND"})
        return
    asset_uuid, name = unquote(parts[0]), unquote(parts[1])
    if asset_uuid in server.library.expired_assets:
        # What an expired CloudFront signed URL answers.
        body = b"<?xml version='1.0'?><Error><Code>AccessDenied</Code></Error>"
        handler.send_bytes(403, body, "application/xml")
        return
    ref = find_asset(server, asset_uuid)
    if ref is None:
        handler.send_bytes(404, b"<Error><Code>NoSuchKey</Code></Error>", "application/xml")
        return
    data, content_type = assetlib.generate_bytes(
        name, ref.asset, server.library.asset_bodies.get(asset_uuid, "")
    )
    handler.send_bytes(200, data, content_type)


# -- SSE ask ---------------------------------------------------------------------------------


def perplexity_ask(req: Request) -> None:
    server = req.server
    try:
        result = start_ask(server.library, req.json(), server.new_id, server.config.username)
    except AskError as exc:
        req.handler.send_json(exc.status, {"error_code": exc.code, "message": str(exc)})
        return
    handler = req.handler
    events = result.events
    if getattr(handler, "_truncate", False):
        events = events[: max(1, len(events) // 2)]  # the stream dies before the final event
    handler.close_connection = True
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream; charset=utf-8")
    handler.send_header("Cache-Control", "no-cache")
    handler.send_header("Connection", "close")
    handler.end_headers()
    for index, event in enumerate(events):
        handler.wfile.write(sse_frame(event, split=index == 1))
        handler.wfile.flush()


# -- mutations (control endpoint and RunningEmulator.mutate) ---------------------------------


def mutate(server: EmulatorServer, payload: JSON) -> tuple[int, JSON]:
    library = server.library
    try:
        if "touch" in payload:
            record = library.touch(as_str(payload["touch"]), server.new_id())
            action = "touch"
        elif "delete" in payload:
            listed = bool(payload.get("listed", False))
            record = library.set_state(as_str(payload["delete"]), DELETED, listed=listed)
            action = "delete"
        elif "expire" in payload:
            record = library.set_state(as_str(payload["expire"]), EXPIRED, listed=True)
            action = "expire"
        elif "restore" in payload:
            record = library.set_state(as_str(payload["restore"]), OK, listed=True)
            action = "restore"
        else:
            return 400, {"error_code": "INVALID_REQUEST", "message": "touch|delete|expire|restore"}
    except KeyError:
        return 404, {"error_code": "THREAD_NOT_FOUND"}
    return 200, {
        "status": "success",
        "action": action,
        "thread": record.uuid,
        "lastUpdated": record.last_updated,
        "n_entries": len(record.entries),
    }


_ROUTES: dict[tuple[str, str], Callable[[Request], None]] = {
    ("GET", "/api/auth/session"): session,
    ("POST", "/rest/perplexity_ask/graphql"): graphql,
    ("POST", "/rest/thread/list_ask_threads"): list_ask_threads,
    ("POST", "/rest/thread/mark_viewed"): mark_viewed,
    ("GET", "/rest/collections/get_collection"): get_collection,
    ("GET", "/rest/collections/list_collection_threads"): list_collection_threads,
    ("GET", "/rest/collections/list_user_collections"): list_user_collections,
    ("POST", "/rest/collections/create_collection"): create_collection,
    ("POST", "/rest/collections/batch_move_threads"): batch_move_threads,
    ("GET", "/rest/models/config/v2"): models_config,
    ("GET", "/rest/billing/credits/thread-usage"): thread_usage,
    ("POST", "/rest/sse/perplexity_ask"): perplexity_ask,
}
