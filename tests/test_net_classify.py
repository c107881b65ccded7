"""Every row of protocol.md §7.1, through the pure classifier and through the client."""

from __future__ import annotations

import json

import httpx
import pytest

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
from pplx_export.site.classify import PersistedQueryNotFound, classify, error_code
from tests.net_fakes import make_client, router

EP = "GET /rest/thread/x"
CF_PAGE = (
    "<!DOCTYPE html><html><head><title>Just a moment...</title></head>"
    "<body><script src='/cdn-cgi/challenge-platform/h/b/chl_page'></script>"
    "</body></html>"
)


def _c(status: int, body: object = b"", headers: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return classify(status, httpx.Headers(headers or {}), raw, endpoint=EP, now=0.0)


def test_2xx_json_is_ok() -> None:
    v = _c(200, {"entries": []})
    assert v.kind == "ok" and v.data == {"entries": []}


def test_2xx_non_json_is_retryable_transport_error() -> None:
    v = _c(200, b"<html>login</html>")
    assert v.kind == "retry" and isinstance(v.error, TransportError)


def test_401_is_auth_error_without_retry() -> None:
    v = _c(401, {"detail": "Unauthorized"})
    assert v.kind == "fail" and type(v.error) is AuthError
    assert v.error.endpoint == EP and v.error.status == 401


def test_403_without_code_is_auth_error() -> None:
    v = _c(403, {"detail": "Not authenticated"})
    assert type(v.error) is AuthError


@pytest.mark.parametrize("header", [True, False])
def test_403_cloudflare_challenge_is_auth_error(header: bool) -> None:
    headers = {"cf-mitigated": "challenge"} if header else {}
    body = CF_PAGE.encode() if not header else b"<html></html>"
    v = _c(403, body, headers)
    assert v.kind == "fail" and type(v.error) is AuthError
    assert v.error.code == "CLOUDFLARE_CHALLENGE"


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"error_code": "VIEW_THREAD_NOT_ALLOWED"}, "VIEW_THREAD_NOT_ALLOWED"),
        ({"detail": "thread_usage_forbidden"}, "thread_usage_forbidden"),
        ({"detail": {"error_code": "ASSET_ACCESS_DENIED", "message": "no"}}, "ASSET_ACCESS_DENIED"),
        ({"error": {"code": "NOT_ORG_MEMBER"}}, "NOT_ORG_MEMBER"),
        (
            {"status": "error", "error_code": "VIEW_COLLECTION_NOT_ALLOWED"},
            "VIEW_COLLECTION_NOT_ALLOWED",
        ),
    ],
)
def test_403_permission_codes(body: dict[str, object], code: str) -> None:
    v = _c(403, body)
    assert v.kind == "fail" and type(v.error) is PermissionDenied
    assert v.error.code == code
    assert not isinstance(v.error, AuthError)  # does not count toward the auth fail-fast


def test_429_retries_with_retry_after() -> None:
    v = _c(429, b"", {"Retry-After": "5"})
    assert v.kind == "retry" and isinstance(v.error, RateLimited) and v.retry_after == 5


def test_400_entry_deleted_checked_before_expired() -> None:
    v = _c(400, {"detail": "ENTRY_DELETED: This entry has been deleted (was ENTRY_EXPIRED?)"})
    assert type(v.error) is EntryDeleted and v.kind == "fail"
    v = _c(400, {"detail": "ENTRY_EXPIRED"})
    assert type(v.error) is EntryExpired and v.kind == "fail"


def test_400_failed_to_parse_is_plain_api_error() -> None:
    v = _c(400, {"detail": "failed to parse file:repo/abc"})
    assert v.kind == "fail" and type(v.error) is ApiError and v.error.status == 400


@pytest.mark.parametrize("code", ["ASSET_NOT_FOUND", "THREAD_NOT_FOUND", ""])
def test_404_is_not_found_not_retried(code: str) -> None:
    v = _c(404, {"error_code": code} if code else b"Not Found")
    assert v.kind == "fail" and type(v.error) is NotFound
    assert v.error.code == code


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_5xx_retry(status: int) -> None:
    v = _c(status, b"<html>bad gateway</html>")
    assert v.kind == "retry" and isinstance(v.error, ServerError)


def test_200_status_failed_not_allowed_is_permission_denied() -> None:
    v = _c(200, {"status": "failed", "_response_type": "VIEW_COLLECTION_NOT_ALLOWED"})
    assert v.kind == "fail" and type(v.error) is PermissionDenied
    assert v.error.code == "VIEW_COLLECTION_NOT_ALLOWED"


def test_200_status_failed_other_is_api_error() -> None:
    v = _c(200, {"status": "failed"})
    assert v.kind == "fail" and type(v.error) is ApiError


def test_200_status_success_is_ok() -> None:
    assert _c(200, {"status": "success"}).kind == "ok"


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (200, {"errors": [{"message": "PersistedQueryNotFound"}]}),
        (400, {"errors": [{"extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"}}]}),
    ],
)
def test_graphql_persisted_query_not_found(status: int, body: object) -> None:
    v = _c(status, body)
    assert v.kind == "fail" and isinstance(v.error, PersistedQueryNotFound)


def test_other_status_is_api_error() -> None:
    v = _c(409, {"detail": "conflict"})
    assert v.kind == "fail" and type(v.error) is ApiError


def test_error_code_extraction() -> None:
    assert error_code({"code": "SOME_CODE"}) == "SOME_CODE"
    assert error_code({"detail": "a sentence with spaces"}) == ""
    assert error_code(None, "prefix ENTRY_GONE suffix") == "ENTRY_GONE"
    assert error_code(None, "plain_words here") == ""


@pytest.mark.parametrize(
    ("status", "body", "exc"),
    [
        (401, {}, AuthError),
        (403, {"error_code": "VIEW_THREAD_NOT_ALLOWED"}, PermissionDenied),
        (400, {"detail": "ENTRY_DELETED"}, EntryDeleted),
        (400, {"detail": "ENTRY_EXPIRED"}, EntryExpired),
        (404, {}, NotFound),
        (200, {"status": "failed", "_response_type": "X_NOT_ALLOWED"}, PermissionDenied),
    ],
)
def test_client_raises_terminal_errors_after_one_request(
    status: int, body: dict[str, object], exc: type[Exception]
) -> None:
    r = router()
    r.get("/rest/thread/x").mock(return_value=httpx.Response(status, json=body))
    client = make_client(r)
    with pytest.raises(exc) as info:
        client.get("/rest/thread/x", params=[("version", "2.18")])
    assert r.routes[0].call_count == 1
    assert info.value.endpoint == "GET /rest/thread/x"  # type: ignore[attr-defined]
    assert "version" not in str(info.value)


def test_thread_content_mentioning_the_code_is_still_data() -> None:
    body = {
        "entries": [{"text": "the server said PERSISTED_QUERY_NOT_FOUND, PersistedQueryNotFound"}]
    }
    v = _c(200, body)
    assert v.kind == "ok" and v.data == body


def test_204_no_content_is_ok() -> None:
    v = _c(204, b"")
    assert v.kind == "ok" and v.data is None
    assert _c(200, b"").kind == "retry"  # an empty 200 is not data
