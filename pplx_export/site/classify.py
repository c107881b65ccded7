"""Map one HTTP response to success, retry or a typed error (protocol.md §7.1).

Pure: status, headers and body bytes in; a `Verdict` out. The client decides how to sleep.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pplx_export.errors import (
    ApiError,
    AuthError,
    EntryDeleted,
    EntryExpired,
    NotFound,
    PermissionDenied,
    RateLimited,
    ServerError,
    TransportError,
)
from pplx_export.site.pacing import parse_ratelimit_reset, parse_retry_after

# Only the head of an error body is inspected: the markers sit at its start and a challenge
# page can be large.
BODY_HEAD = 4096

# Cloudflare challenge pages (403/503 HTML). Seen as the `cf-mitigated: challenge` header and
# these markers in the page.
_CF_MARKERS = ("cf-chl", "challenge-platform", "just a moment", "cf_chl_opt", "cf-browser-verif")

# 403 codes that mean "this object is not yours to see", not "your session is dead": they must
# not count toward the 3-consecutive-AuthError fail-fast of a batch.
_PERMISSION_CODE = re.compile(
    r"(NOT_ALLOWED|FORBIDDEN|ACCESS_DENIED|NOT_ORG_MEMBER|NOT_OWNER|PERMISSION)", re.IGNORECASE
)
_CODE_IN_TEXT = re.compile(r"\b[A-Za-z]+(?:_[A-Za-z]+)+\b")

_PQNF = ("PERSISTED_QUERY_NOT_FOUND", "PersistedQueryNotFound")


class PersistedQueryNotFound(ApiError):
    """GraphQL APQ hash unknown to the server (rotated): the caller switches to the fallback."""


@dataclass
class Verdict:
    kind: Literal["ok", "retry", "fail"]
    data: Any = None
    error: ApiError | None = None
    retry_after: float | None = None  # server-requested wait, seconds


def _json(body: bytes) -> tuple[bool, Any]:
    try:
        return True, json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False, None


def _head(body: bytes) -> str:
    return body[:BODY_HEAD].decode("utf-8", errors="replace")


def error_code(data: Any, text: str = "") -> str:
    """The API's machine code from an error body, wherever this endpoint put it."""
    if isinstance(data, dict):
        candidates: list[Any] = [
            data.get("error_code"),
            data.get("code"),
            data.get("_response_type"),
            data.get("error"),
        ]
        detail = data.get("detail")
        if isinstance(detail, dict):
            candidates += [detail.get("error_code"), detail.get("code"), detail.get("type")]
        else:
            candidates.append(detail)
        err = data.get("error")
        if isinstance(err, dict):
            candidates += [err.get("error_code"), err.get("code"), err.get("type")]
        for value in candidates:
            if isinstance(value, str) and _CODE_IN_TEXT.fullmatch(value.strip()):
                return value.strip()
    for match in _CODE_IN_TEXT.finditer(text):
        word = match.group(0)
        if word.isupper() or _PERMISSION_CODE.search(word):
            return word
    return ""


def graphql_errors(data: Any) -> list[Any]:
    """The `errors` list of a GraphQL answer ([] for anything else)."""
    errors = data.get("errors") if isinstance(data, dict) else None
    return errors if isinstance(errors, list) else []


def is_persisted_query_not_found(data: Any) -> bool:
    # Only a GraphQL error list counts: a thread whose *content* mentions the code must not.
    text = json.dumps(graphql_errors(data))
    return any(marker in text for marker in _PQNF)


def is_cloudflare_challenge(headers: Mapping[str, str], text: str) -> bool:
    if headers.get("cf-mitigated", "").lower() == "challenge":
        return True
    lowered = text.lower()
    return "<html" in lowered and any(m in lowered for m in _CF_MARKERS)


def classify(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    endpoint: str,
    now: float,
) -> Verdict:
    """Route one response. `endpoint` ("METHOD /path") is copied into every error."""
    is_json, data = _json(body)
    text = _head(body)
    code = error_code(data, text) if status >= 300 or not is_json else ""

    def err(cls: type[ApiError], reason: str, c: str = code) -> ApiError:
        return cls(reason, endpoint=endpoint, status=status, code=c)

    if is_persisted_query_not_found(data):
        return Verdict("fail", error=err(PersistedQueryNotFound, "persisted query not found"))

    if status == 204:
        return Verdict("ok", data=None)
    if 200 <= status < 300:
        if not is_json:
            # Cloudflare interstitial or a login page served with 200: never data.
            return Verdict("retry", error=err(TransportError, f"{status} with a non-JSON body"))
        if isinstance(data, dict) and data.get("status") == "failed":
            rtype = data.get("_response_type")
            rcode = rtype if isinstance(rtype, str) else ""
            if rcode.upper().endswith("NOT_ALLOWED"):
                return Verdict("fail", error=err(PermissionDenied, f"not allowed ({rcode})", rcode))
            return Verdict(
                "fail", error=err(ApiError, f"request failed ({rcode or 'status failed'})", rcode)
            )
        return Verdict("ok", data=data)

    if status == 401:
        return Verdict("fail", error=err(AuthError, "401: session cookie missing or expired"))
    if status == 403:
        if is_cloudflare_challenge(headers, text):
            return Verdict(
                "fail",
                error=err(
                    AuthError,
                    "403 Cloudflare challenge: refresh cookies from the browser and slow down",
                    "CLOUDFLARE_CHALLENGE",
                ),
            )
        if code and _PERMISSION_CODE.search(code):
            return Verdict("fail", error=err(PermissionDenied, f"403 {code}"))
        return Verdict(
            "fail", error=err(AuthError, f"403{' ' + code if code else ''}: session rejected")
        )
    if status == 400:
        # ENTRY_DELETED first: EntryDeleted is the more specific (sub)class.
        if "ENTRY_DELETED" in text:
            return Verdict("fail", error=err(EntryDeleted, "thread deleted", "ENTRY_DELETED"))
        if "ENTRY_EXPIRED" in text:
            return Verdict("fail", error=err(EntryExpired, "thread expired", "ENTRY_EXPIRED"))
        return Verdict("fail", error=err(ApiError, f"400 {code or 'bad request'}"))
    if status == 404:
        # Never retried inside the request (a fresh thread may 404 briefly: the caller decides).
        return Verdict("fail", error=err(NotFound, f"404 {code or 'not found'}"))
    if status == 429:
        wait = parse_retry_after(headers.get("retry-after"), now)
        if wait is None:
            wait = parse_ratelimit_reset(headers.get("ratelimit-reset"), now)
        return Verdict("retry", error=err(RateLimited, "429 rate limited"), retry_after=wait)
    if status >= 500:
        wait = parse_retry_after(headers.get("retry-after"), now)
        return Verdict("retry", error=err(ServerError, f"{status} server error"), retry_after=wait)
    return Verdict("fail", error=err(ApiError, f"unexpected HTTP {status}"))
