"""The upkeep facts (emulator/upkeep.py) applied to requests, and their mutations.

`intercept` runs before the ordinary routes and answers only when a fact applies (a failing
thread, another account's thread, an asset URL that must carry an expiry); otherwise the
ordinary route answers. `serve_file` wraps the CDN stand-in with the expiry check.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

from pplx_export.emulator.app import Emulator
from pplx_export.emulator.http import JSON, Request, Response, error
from pplx_export.emulator.routes import assets, threads
from pplx_export.util.lenient import as_str, lenient_int

XML = "application/xml"
EXPIRED_BODY = b"<?xml version='1.0'?><Error><Code>AccessDenied</Code></Error>"
_FILE_URL = re.compile(rb'(/__emulator/files/[^"?\\]+)(\?[^"\\]*)?"')
_THREAD_ERRORS = {
    401: ("UNAUTHORIZED", "Not signed in"),
    403: ("VIEW_THREAD_NOT_ALLOWED", "You may not view this thread"),
    404: ("THREAD_NOT_FOUND", "Not found"),
}


def _with_expiry(response: Response, stamp: int) -> Response:
    """Every served file URL in a JSON body, signed to expire at `stamp`."""
    if response.status == 200:
        sig = f"?Expires={stamp}&Signature=emulator-ttl".encode()
        response.body = _FILE_URL.sub(lambda m: m.group(1) + sig + b'"', response.body)
    return response


def intercept(req: Request) -> Response | None:
    app = req.app
    upkeep = app.upkeep
    thread_id = app.library.canonical_id(threads.thread_id_of(req.method, req.path))
    if thread_id:
        with upkeep.lock:
            status = upkeep.thread_status.get(thread_id, 0)
        if status:
            code, message = _THREAD_ERRORS.get(status, ("SERVER_ERROR", "Server error"))
            return error(status, code, message)
        stamp = upkeep.expires()
        if stamp is None or req.arg("with_schematized_response").lower() != "true":
            return None
        return _with_expiry(threads.thread_detail(req), stamp)
    email = req.identity[0]
    if req.method == "GET" and req.path == "/rest/billing/credits/thread-usage":
        owned = app.library.by_context(req.arg("thread_id"))
        if owned and upkeep.owner(owned[0].uuid, app.config.email) != email:
            return error(
                403, "thread_usage_forbidden", "Thread does not belong to the current user"
            )
        return None
    if req.method == "GET" and req.path.startswith("/rest/assets/") and req.path.endswith("/data"):
        ref = assets.find_asset(app, req.path[len("/rest/assets/") : -len("/data")])
        if ref is not None and upkeep.owner(ref.thread_uuid, app.config.email) != email:
            return error(403, "ASSET_ACCESS_DENIED", "You do not have access to this asset")
        stamp = upkeep.expires()
        return None if stamp is None else _with_expiry(assets.asset_data(req), stamp)
    return None


def serve_file(app: Emulator, path: str, raw_url: str) -> Response:
    """The CDN stand-in, answering 403 AccessDenied once a URL's `Expires` has passed."""
    query = parse_qs(urlsplit(raw_url).query)
    stamp = (query.get("Expires") or [""])[0]
    if stamp and app.upkeep.expired(stamp):
        return Response(403, EXPIRED_BODY, XML)
    return assets.serve_file(app, path)


def mutate(app: Emulator, payload: JSON) -> tuple[int, JSON] | None:
    """`fail_thread` + `status` (0 clears), `own` + `email`, `url_ttl` (negative: off),
    `purge_asset`, `advance_clock` (seconds); None when the payload is none of these."""
    upkeep = app.upkeep
    with upkeep.lock:
        if "fail_thread" in payload:
            uuid, status = as_str(payload["fail_thread"]), lenient_int(payload.get("status"))
            if app.library.get(uuid) is None:
                return 404, {"error_code": "THREAD_NOT_FOUND"}
            if status:
                upkeep.thread_status[uuid] = status
            else:
                upkeep.thread_status.pop(uuid, None)
            return 200, {"status": "success", "action": "fail_thread", "thread": uuid}
        if "own" in payload:
            uuid, email = as_str(payload["own"]), as_str(payload.get("email"))
            if app.library.get(uuid) is None or not email:
                return 404, {"error_code": "THREAD_NOT_FOUND"}
            upkeep.owners[uuid] = email
            return 200, {"status": "success", "action": "own", "thread": uuid, "email": email}
        if "url_ttl" in payload:
            ttl = payload["url_ttl"]
            upkeep.url_ttl = float(ttl) if isinstance(ttl, int | float) and ttl >= 0 else None
            return 200, {"status": "success", "action": "url_ttl", "url_ttl": upkeep.url_ttl}
        if "purge_asset" in payload:  # the platform purged the file: ASSET_NOT_FOUND
            app.library.expired_assets.add(as_str(payload["purge_asset"]))
            return 200, {"status": "success", "action": "purge_asset"}
        if "advance_clock" in payload:
            upkeep.clock_offset += float(lenient_int(payload["advance_clock"]))
            return 200, {"status": "success", "action": "advance_clock"}
    return None
