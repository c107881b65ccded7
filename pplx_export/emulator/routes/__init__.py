"""Endpoint handlers, one module per API area; each takes a `Request`, returns a `Response`.

`dispatch` picks the handler: exact (method, path) routes first, then the two path-parameter
routes (thread detail, asset data).
"""

from __future__ import annotations

from pplx_export.emulator.http import Handler, Request, Response, error
from pplx_export.emulator.routes import (
    account,
    ask,
    assets,
    listing,
    space_view,
    spaces,
    threads,
    upkeep,
)
from pplx_export.emulator.routes.threads import thread_id_of

ROUTES: dict[tuple[str, str], Handler] = {
    ("GET", "/api/auth/session"): account.session,
    ("GET", "/rest/models/config/v2"): account.models_config,
    ("GET", "/rest/billing/credits/thread-usage"): account.thread_usage,
    ("POST", "/rest/thread/mark_viewed"): account.mark_viewed,
    ("POST", "/rest/perplexity_ask/graphql"): listing.graphql,
    ("POST", "/rest/thread/list_ask_threads"): listing.list_ask_threads,
    ("GET", "/rest/collections/get_collection"): space_view.get_collection,
    ("GET", "/rest/collections/list_collection_threads"): space_view.list_collection_threads,
    ("GET", "/rest/collections/list_user_collections"): space_view.list_user_collections,
    ("POST", "/rest/collections/create_collection"): spaces.create_collection,
    ("POST", "/rest/collections/batch_move_threads"): spaces.batch_move_threads,
    ("POST", "/rest/collections/upsert_thread_collection"): spaces.upsert_thread_collection,
    ("POST", "/rest/sse/perplexity_ask"): ask.perplexity_ask,
}


def dispatch(req: Request) -> Response:
    hooked = upkeep.intercept(req)  # failing threads, owners, expiring URLs
    if hooked is not None:
        return hooked
    handler = ROUTES.get((req.method, req.path))
    if handler is not None:
        return handler(req)
    if req.method == "GET" and thread_id_of(req.method, req.path):
        return threads.thread_detail(req)
    if req.method == "GET" and req.path.startswith("/rest/assets/") and req.path.endswith("/data"):
        return assets.asset_data(req)
    return error(404, "NOT_FOUND", path=req.path)


__all__ = ["ROUTES", "Request", "Response", "dispatch", "thread_id_of"]
