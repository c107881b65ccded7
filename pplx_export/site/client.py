"""The HTTP client for the Perplexity web API: pacing, retries, error mapping, redaction.

`ApiClient` wraps an `httpx.Client` (injectable: tests hand in a respx/MockTransport, the
emulator tests a loopback base URL). Every API call goes through `call()`, which

* waits for the process-wide pacer (`NetRuntime.pacer`; CDN downloads bypass it),
* sends the cookie header and browser-like headers,
* classifies the response (`site.classify`), retrying 429 / 5xx / network errors / non-JSON
  200s with capped exponential backoff and jitter that grows across consecutive failures;
  `Retry-After` and `RateLimit-Reset` are a floor under that wait, not the whole of it;
  no sleep after the last attempt (one retry loop, `_with_retries`, serves API calls and CDN
  downloads),
* raises a typed `ApiError` naming "METHOD /path" (never the query string).

Logs carry method, host and path only: query strings may hold signed-URL credentials, and
cookie values are never logged anywhere.

Long because `ApiClient` is one retry loop with its policy: pacing, headers, classification,
backoff and redaction apply alike to every API call and CDN download; classification and
pacing themselves are already apart (site/classify.py, site/pacing.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from pplx_export.config import NetworkSettings
from pplx_export.context import DEFAULT_BASE_URL
from pplx_export.errors import (
    ApiError,
    NotFound,
    PermissionDenied,
    RateLimited,
    ServerError,
    TransportError,
)
from pplx_export.site.classify import Verdict, classify
from pplx_export.site.pacing import BACKOFF_BASE_S, NetRuntime, sleep_with_heartbeat
from pplx_export.util.atomic import TEMP_PREFIX, umask_file_mode
from pplx_export.util.closing import Closing

log = logging.getLogger("pplx_export.site")

CONNECT_TIMEOUT_S = 10.0
DOWNLOAD_CHUNK = 64 * 1024

Params = Sequence[tuple[str, str]]

# An ID-like path segment: a long token with at least one digit (UUIDs, toolu_ handles).
_ID_SEGMENT = re.compile(r"^(?=[^/]*\d)[A-Za-z0-9_.%-]{16,}$")
_URL_IN_TEXT = re.compile(r"https?://[^\s'\"<>]+")


def safe_url(url: str | httpx.URL) -> str:
    """`host/path` of a URL: what logs and error messages may show."""
    parts = urlsplit(str(url))
    return f"{parts.netloc.rsplit('@', 1)[-1]}{parts.path}"


def redact_text(text: str) -> str:
    """Strip query strings (and userinfo) from any URL inside free text, e.g. an exception."""
    return _URL_IN_TEXT.sub(lambda m: safe_url(m.group(0)), text)


def endpoint_key(method: str, path: str) -> str:
    """Counter key: IDs in the path collapse to `{id}` so counts group by endpoint."""
    segments = ["{id}" if _ID_SEGMENT.match(s) else s for s in path.split("/")]
    return f"{method} {'/'.join(segments)}"


def build_query(params: Params | None) -> str:
    """Query string with every value fully percent-encoded (`safe=""`), order kept."""
    if not params:
        return ""
    return "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in params)


@dataclass(frozen=True)
class ClientSettings:
    base_url: str = DEFAULT_BASE_URL
    timeout: float = 120.0  # read timeout; connect is always 10 s
    max_attempts: int = 5
    backoff_cap: float = 300.0
    backoff_base: float = BACKOFF_BASE_S
    headers: Mapping[str, str] = field(default_factory=dict)  # User-Agent (+ client hints)

    @classmethod
    def from_network(
        cls,
        net: NetworkSettings,
        *,
        base_url: str = DEFAULT_BASE_URL,
        headers: Mapping[str, str] | None = None,
    ) -> ClientSettings:
        return cls(
            base_url=base_url.rstrip("/"),
            timeout=net.timeout,
            max_attempts=max(1, net.max_retries),
            backoff_cap=net.backoff_cap,
            headers=dict(headers or {}),
        )


class LazyTLSTransport(httpx.BaseTransport):
    """httpx's own transport, with the TLS context built on the first https request: a run
    against a plain-http base URL (the emulator, a local proxy) never loads the CA bundle
    (~70 ms of every online command's start). Plain http goes through a transport without
    certificate checks, which it has nothing to check with; https is verified as ever."""

    def __init__(self) -> None:
        self._plain: httpx.HTTPTransport | None = None
        self._tls: httpx.HTTPTransport | None = None

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme == "http":
            if self._plain is None:
                self._plain = httpx.HTTPTransport(verify=False)
            return self._plain.handle_request(request)
        if self._tls is None:
            self._tls = httpx.HTTPTransport()
        return self._tls.handle_request(request)

    def close(self) -> None:
        for transport in (self._plain, self._tls):
            if transport is not None:
                transport.close()


class ApiClient(Closing):
    """One client per account. `cookies` is a live dict: account switching edits it in place."""

    def __init__(
        self,
        settings: ClientSettings,
        runtime: NetRuntime,
        *,
        cookies: dict[str, str] | None = None,
        http: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.settings = settings
        self.runtime = runtime
        self.cookies: dict[str, str] = cookies if cookies is not None else {}
        self._owns_http = http is None
        self._http = http or httpx.Client(
            transport=transport or LazyTLSTransport(),
            timeout=httpx.Timeout(settings.timeout, connect=CONNECT_TIMEOUT_S),
            follow_redirects=False,
        )

    # -- plumbing -------------------------------------------------------------------------

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def _headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        headers = dict(self.settings.headers)
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if extra:
            headers.update(extra)
        return headers

    def _timeout(self, read: float | None) -> httpx.Timeout:
        return httpx.Timeout(read or self.settings.timeout, connect=CONNECT_TIMEOUT_S)

    def _url(self, path: str, params: Params | None) -> str:
        query = build_query(params)
        return f"{self.settings.base_url}{path}{'?' + query if query else ''}"

    def _roll_cookies(self, response: httpx.Response) -> None:
        # Session cookies roll forward with responses, as they do in the browser.
        for name, value in response.cookies.items():
            self.cookies[name] = value

    def _classify(self, response: httpx.Response, endpoint: str) -> Verdict:
        return classify(
            response.status_code,
            response.headers,
            response.content,
            endpoint=endpoint,
            now=self.runtime.clock.time(),
        )

    def _wait_before_retry(self, verdict: Verdict, failures: int, what: str) -> None:
        # The wait grows with the consecutive failures, whatever their kind. A wait the server
        # asks for (Retry-After, RateLimit-Reset) is a floor under it, not the whole wait: a
        # 429 streak answered "Retry-After: 1" must slow the run down, not spend every
        # attempt within seconds. The cap bounds both.
        cap = self.settings.backoff_cap
        delay = self.runtime.backoff_delay(failures, cap, self.settings.backoff_base)
        if verdict.retry_after is not None:
            delay = max(delay, min(cap, verdict.retry_after))
        log.warning("%s; retrying in %.0f s", what, delay)
        sleep_with_heartbeat(self.runtime.clock, delay, f"before retrying ({what})")

    def _with_retries(
        self, attempt: Callable[[], Verdict], *, shown: str, attempts: int, api: bool
    ) -> Any:
        """Run `attempt` until its verdict is ok (return its data), a failure, or the last
        of `attempts` (raise its error), waiting before each retry.

        An API request (`api`) moves the run's consecutive-failure counter, which drives the
        backoff and resets on success, and logs what it gives up on. A CDN download may run
        beside API requests, so it counts its own attempts, and its caller reports a failure.
        """
        for n in range(1, attempts + 1):
            verdict = attempt()
            if verdict.kind == "ok":
                if api:
                    self.runtime.record_success()
                return verdict.data
            error = verdict.error
            assert error is not None
            if verdict.kind == "fail":
                if api:
                    log.debug("%s failed: %s", shown, error.reason)
                raise error
            failures = self.runtime.record_failure() if api else n
            if n == attempts:
                if api:
                    log.warning("%s: %s; giving up after %d attempts", shown, error.reason, n)
                raise error
            self._wait_before_retry(
                verdict, failures, f"{shown}: {error.reason} (attempt {n}/{attempts})"
            )
        raise AssertionError("unreachable")  # pragma: no cover

    # -- API calls ------------------------------------------------------------------------

    def call(
        self,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        body: Any = None,
        timeout: float | None = None,
        pace_scale: float = 1.0,
        retry: bool = True,
    ) -> Any:
        """Send one API request (with retries) and return its parsed JSON body.

        `retry=False` for calls that must not run twice (creating a space): one attempt.
        """
        endpoint = f"{method} {path}"
        key = endpoint_key(method, path)
        url = self._url(path, params)
        shown = f"{method} {safe_url(url)}"

        def send() -> Verdict:
            self.runtime.pacer.wait(pace_scale)
            self.runtime.stats.count(key)
            request = self._http.build_request(
                method, url, json=body, headers=self._headers(), timeout=self._timeout(timeout)
            )
            started = time.monotonic()
            recorder = self.runtime.recorder
            try:
                response = self._http.send(request)
            except httpx.RequestError as exc:
                detail = redact_text(str(exc))
                reason = f"network error: {type(exc).__name__}{': ' + detail if detail else ''}"
                if recorder is not None:
                    recorder.record(request, error=reason)
                return Verdict("retry", error=TransportError(reason, endpoint=endpoint))
            log.debug("%s -> %d (%.2f s)", shown, response.status_code, time.monotonic() - started)
            if recorder is not None:
                recorder.record(request, response)
            self._roll_cookies(response)
            return self._classify(response, endpoint)

        attempts = max(1, self.settings.max_attempts) if retry else 1
        return self._with_retries(send, shown=shown, attempts=attempts, api=True)

    def get(self, path: str, *, params: Params | None = None, **kw: Any) -> Any:
        return self.call("GET", path, params=params, **kw)

    def post(self, path: str, body: Any, *, params: Params | None = None, **kw: Any) -> Any:
        return self.call("POST", path, params=params, body=body, **kw)

    @contextlib.contextmanager
    def stream(
        self,
        method: str,
        path: str,
        *,
        body: Any,
        timeout: float,
        params: Params | None = None,
    ) -> Iterator[Iterator[bytes]]:
        """Open a streaming API request (SSE). Not retried: the request is not idempotent.

        Yields an iterator of raw byte chunks; network failures while reading surface as
        `TransportError`.
        """
        endpoint = f"{method} {path}"
        url = self._url(path, params)
        self.runtime.pacer.wait()
        self.runtime.stats.count(endpoint_key(method, path))
        request = self._http.build_request(
            method,
            url,
            json=body,
            headers=self._headers({"Accept": "text/event-stream"}),
            timeout=self._timeout(timeout),
        )
        try:
            response = self._http.send(request, stream=True)
        except httpx.RequestError as exc:
            raise TransportError(
                f"network error: {type(exc).__name__}", endpoint=endpoint
            ) from None
        try:
            log.debug("%s %s -> %d (stream)", method, safe_url(url), response.status_code)
            if self.runtime.recorder is not None:
                # The request and the status: the stream itself is not kept.
                self.runtime.recorder.record(request, response, content=b"")
            if not 200 <= response.status_code < 300:
                response.read()
                verdict = self._classify(response, endpoint)
                raise verdict.error or ApiError(f"HTTP {response.status_code}", endpoint=endpoint)
            ctype = response.headers.get("content-type", "")
            if "html" in ctype:
                raise TransportError("200 with an HTML body instead of a stream", endpoint=endpoint)
            self.runtime.record_success()
            yield _guarded(response.iter_bytes(), endpoint)
        finally:
            response.close()

    # -- CDN downloads --------------------------------------------------------------------

    def download(self, url: str, dest_dir: Path, *, timeout: float | None = None) -> Path:
        """Stream a signed CDN URL into a temp file in `dest_dir`; return its path.

        Not paced (CDN, not the API) and sent without cookies. The caller renames the temp
        file into place (same directory, so the rename is atomic). Retries 429/5xx/network
        errors; 403 (expired signature) is PermissionDenied, 404/410 NotFound.
        """
        endpoint = f"GET {safe_url(url)}"
        key = f"GET {urlsplit(url).netloc} (download)"
        headers = dict(self.settings.headers)
        dest_dir.mkdir(parents=True, exist_ok=True)

        def fetch() -> Verdict:
            self.runtime.stats.count(key)
            fd, tmp_name = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".part", dir=dest_dir)
            tmp = Path(tmp_name)
            done = False
            try:
                with os.fdopen(fd, "wb") as fh:
                    # mkstemp makes the file owner-only; renamed into the thread folder, it
                    # must have the mode of the files beside it (0o666 less the umask).
                    os.fchmod(fh.fileno(), umask_file_mode())
                    verdict = self._download_into(url, fh, headers, timeout, endpoint)
                    if verdict.kind == "ok":
                        fh.flush()
                        os.fsync(fh.fileno())
                        verdict.data = tmp
                        done = True
                return verdict
            finally:
                if not done:
                    tmp.unlink(missing_ok=True)

        attempts = max(1, self.settings.max_attempts)
        path: Path = self._with_retries(fetch, shown=endpoint, attempts=attempts, api=False)
        return path

    def _download_into(
        self,
        url: str,
        fh: Any,
        headers: dict[str, str],
        timeout: float | None,
        endpoint: str,
    ) -> Verdict:
        try:
            with self._http.stream(
                "GET", url, headers=headers, timeout=self._timeout(timeout), follow_redirects=True
            ) as response:
                status = response.status_code
                log.debug("%s -> %d (download)", endpoint, status)
                recorder = self.runtime.recorder
                if 200 <= status < 300:
                    kept = bytearray() if recorder is not None else None
                    for chunk in response.iter_bytes(DOWNLOAD_CHUNK):
                        fh.write(chunk)
                        if kept is not None:
                            kept += chunk
                    if recorder is not None:
                        recorder.record(
                            response.request, response, content=bytes(kept or b""), cdn=True
                        )
                    return Verdict("ok")
                if recorder is not None:
                    recorder.record(response.request, response, content=response.read(), cdn=True)
                return _download_verdict(status, endpoint)
        except httpx.RequestError as exc:
            return Verdict(
                "retry",
                error=TransportError(f"network error: {type(exc).__name__}", endpoint=endpoint),
            )


def _download_verdict(status: int, endpoint: str) -> Verdict:
    if status == 403:
        reason = "403: signed URL expired or access denied"
        return Verdict("fail", error=PermissionDenied(reason, endpoint=endpoint, status=status))
    if status in (404, 410):
        reason = f"{status}: file gone from the CDN"
        return Verdict("fail", error=NotFound(reason, endpoint=endpoint, status=status))
    if status == 429:
        return Verdict("retry", error=RateLimited("429", endpoint=endpoint, status=status))
    if status >= 500:
        return Verdict(
            "retry", error=ServerError(f"HTTP {status}", endpoint=endpoint, status=status)
        )
    return Verdict("fail", error=ApiError(f"HTTP {status}", endpoint=endpoint, status=status))


def _guarded(chunks: Iterator[bytes], endpoint: str) -> Iterator[bytes]:
    try:
        yield from chunks
    except httpx.RequestError as exc:
        raise TransportError(
            f"stream interrupted: {type(exc).__name__}", endpoint=endpoint
        ) from None
