"""ApiClient: retries, backoff, Retry-After, pacing, counting, headers. No real sleeping."""

from __future__ import annotations

import logging
import stat
from datetime import UTC, datetime
from email.utils import format_datetime
from pathlib import Path

import httpx
import pytest
import respx

from pplx_export.config import NetworkSettings
from pplx_export.errors import (
    AuthError,
    NotFound,
    RateLimited,
    ServerError,
    TransportError,
)
from pplx_export.site.client import ClientSettings, build_query, endpoint_key, safe_url
from pplx_export.site.pacing import NetRuntime, parse_ratelimit_reset, parse_retry_after
from pplx_export.util.atomic import atomic_write_text
from tests.net_fakes import FakeClock, FixedRandom, MidRandom, make_client, make_runtime, router

PATH = "/rest/thread/abc"


def test_success_returns_json_and_resets_failures() -> None:
    r = router()
    r.get(PATH).mock(side_effect=[httpx.Response(503), httpx.Response(200, json={"ok": 1})])
    rt = make_runtime()
    client = make_client(r, runtime=rt)
    assert client.get(PATH) == {"ok": 1}
    assert rt.consecutive_failures == 0


def test_backoff_sequence_is_exponential_capped_and_no_sleep_after_last() -> None:
    r = router()
    r.get(PATH).mock(return_value=httpx.Response(502))
    clock = FakeClock()
    rt = make_runtime(clock=clock)
    client = make_client(r, runtime=rt, max_attempts=5, backoff_cap=300.0, backoff_base=20.0)
    with pytest.raises(ServerError) as info:
        client.get(PATH)
    # 5 attempts -> 4 waits: 20, 60, 180, then 540 capped at 300 (midpoint jitter = 1.0).
    # Each wait is sliced into <=10 s heartbeats; group them back per wait.
    assert clock.slept == pytest.approx(20 + 60 + 180 + 300)
    assert r.routes[0].call_count == 5
    assert info.value.endpoint == f"GET {PATH}"
    assert info.value.status == 502


def test_backoff_jitter_bounds() -> None:
    rt_low = NetRuntime(min_interval=0, clock=FakeClock(), rng=FixedRandom(0.0))
    rt_high = NetRuntime(min_interval=0, clock=FakeClock(), rng=FixedRandom(1.0))
    assert rt_low.backoff_delay(1, 300) == pytest.approx(16.0)
    assert rt_high.backoff_delay(1, 300) == pytest.approx(24.0)
    assert rt_high.backoff_delay(2, 300) == pytest.approx(72.0)
    # exponent stops growing at 8 and the cap always wins
    assert rt_low.backoff_delay(50, 1e9) == pytest.approx(20 * 3**8 * 0.8)
    assert rt_high.backoff_delay(4, 100) == 100


def test_zero_cap_means_no_sleep() -> None:
    r = router()
    r.get(PATH).mock(side_effect=[httpx.Response(500), httpx.Response(200, json=[])])
    clock = FakeClock()
    client = make_client(r, runtime=make_runtime(clock=clock), backoff_cap=0.0)
    assert client.get(PATH) == []
    assert clock.slept == 0


def test_single_attempt_never_sleeps() -> None:
    r = router()
    r.get(PATH).mock(return_value=httpx.Response(429, headers={"Retry-After": "30"}))
    clock = FakeClock()
    client = make_client(r, runtime=make_runtime(clock=clock), max_attempts=1)
    with pytest.raises(RateLimited):
        client.get(PATH)
    assert clock.sleeps == []


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"Retry-After": "2.5"}, 2.5),
        ({"RateLimit-Reset": "12"}, 12.0),
        ({"Retry-After": "9999"}, 300.0),  # capped by backoff_cap
    ],
)
def test_retry_after_forms(headers: dict[str, str], expected: float) -> None:
    r = router()
    r.get(PATH).mock(
        side_effect=[httpx.Response(429, headers=headers), httpx.Response(200, json={})]
    )
    clock = FakeClock()
    # A 1 s backoff base: the server's wait is above it, so it is the wait.
    client = make_client(r, runtime=make_runtime(clock=clock), backoff_base=1.0)
    client.get(PATH)
    assert clock.slept == pytest.approx(expected)


def _waits_between(
    statuses: list[tuple[int, dict[str, str]]], clock: FakeClock
) -> tuple[respx.Router, list[float]]:
    """A router answering PATH with `statuses` in turn, and the list it fills with the
    seconds the client asked the clock to sleep before each request after the first."""
    waits: list[float] = []
    answers = iter(statuses)

    def answer(request: httpx.Request) -> httpx.Response:
        waits.append(clock.slept - sum(waits))
        status, headers = next(answers)
        return httpx.Response(status, headers=headers, json={})

    r = router()
    r.get(PATH).mock(side_effect=answer)
    return r, waits


def test_429_streak_grows_the_wait_with_retry_after_as_a_floor() -> None:
    # Issue: five "429, Retry-After: 1" in a row used to end the call after 4 x 1 s. The
    # wait now grows as it does for 5xx (20, 60, 180, then the 300 s cap): a throttled run
    # slows down for ~9 minutes before this call gives up.
    clock = FakeClock()
    r, waits = _waits_between([(429, {"Retry-After": "1"})] * 5, clock)
    client = make_client(r, runtime=make_runtime(clock=clock), max_attempts=5)
    with pytest.raises(RateLimited):
        client.get(PATH)
    assert r.routes[0].call_count == 5
    assert waits == pytest.approx([0, 20, 60, 180, 300])


def test_429_streak_then_success_then_the_wait_starts_over() -> None:
    clock = FakeClock()
    throttled = (429, {"Retry-After": "1"})
    r, waits = _waits_between([throttled] * 3 + [(200, {}), throttled, (200, {})], clock)
    rt = make_runtime(clock=clock)
    client = make_client(r, runtime=rt, max_attempts=5)
    assert client.get(PATH) == {}
    assert rt.consecutive_failures == 0
    assert client.get(PATH) == {}
    assert r.routes[0].call_count == 6
    # The streak grows the wait; the success resets the counter, so the next 429 waits the
    # base again.
    assert waits == pytest.approx([0, 20, 60, 180, 0, 20])


def test_retry_after_above_the_backoff_is_the_wait() -> None:
    clock = FakeClock()
    r, waits = _waits_between(
        [(429, {"Retry-After": "100"})] * 3 + [(429, {"RateLimit-Reset": "30"}), (200, {})], clock
    )
    client = make_client(r, runtime=make_runtime(clock=clock), max_attempts=5)
    assert client.get(PATH) == {}
    # max(server's wait, backoff): 100 > 20, 100 > 60, then the backoff 180 > 100, 300 (capped
    # 540) > 30.
    assert waits == pytest.approx([0, 100, 100, 180, 300])


def test_5xx_retry_after_is_a_floor_too() -> None:
    clock = FakeClock()
    r, waits = _waits_between([(503, {"Retry-After": "1"}), (200, {})], clock)
    client = make_client(r, runtime=make_runtime(clock=clock))
    assert client.get(PATH) == {}
    assert waits == pytest.approx([0, 20])


def test_zero_cap_bounds_the_server_wait_too() -> None:
    clock = FakeClock()
    r, _ = _waits_between([(429, {"Retry-After": "5"})] * 2 + [(200, {})], clock)
    client = make_client(r, runtime=make_runtime(clock=clock), backoff_cap=0.0)
    assert client.get(PATH) == {}
    assert r.routes[0].call_count == 3
    assert clock.sleeps == []


def test_retry_after_http_date() -> None:
    clock = FakeClock()
    when = datetime.fromtimestamp(clock.now + 45, tz=UTC)
    r = router()
    r.get(PATH).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": format_datetime(when, usegmt=True)}),
            httpx.Response(200, json={}),
        ]
    )
    client = make_client(r, runtime=make_runtime(clock=clock))
    client.get(PATH)
    assert clock.slept == pytest.approx(45, abs=1)


def test_parse_retry_after_and_reset_edge_cases() -> None:
    assert parse_retry_after(None, 0) is None
    assert parse_retry_after("soon", 0) is None
    assert parse_retry_after("-5", 0) == 0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 2e9) == 0  # in the past
    assert parse_ratelimit_reset("1800000030", 1_800_000_000) == pytest.approx(30)
    assert parse_ratelimit_reset("x", 0) is None


def test_rate_limited_after_all_attempts() -> None:
    r = router()
    r.get(PATH).mock(return_value=httpx.Response(429))
    clock = FakeClock()
    client = make_client(r, runtime=make_runtime(clock=clock), max_attempts=3, backoff_base=1.0)
    with pytest.raises(RateLimited):
        client.get(PATH)
    assert r.routes[0].call_count == 3
    assert clock.slept == pytest.approx(1 + 3)


def test_network_errors_retry_then_transport_error() -> None:
    r = router()
    r.get(PATH).mock(side_effect=httpx.ConnectError("connection refused"))
    client = make_client(r, max_attempts=2, backoff_cap=0)
    with pytest.raises(TransportError) as info:
        client.get(PATH)
    assert "ConnectError" in info.value.reason
    assert r.routes[0].call_count == 2


def test_html_200_is_retried_as_transport_error() -> None:
    r = router()
    html = httpx.Response(200, text="<html><body>Just a moment...</body></html>")
    r.get(PATH).mock(side_effect=[html, httpx.Response(200, json={"entries": []})])
    client = make_client(r, backoff_cap=0)
    assert client.get(PATH) == {"entries": []}
    assert r.routes[0].call_count == 2


@pytest.mark.parametrize(("status", "exc"), [(401, AuthError), (404, NotFound)])
def test_not_retried(status: int, exc: type[Exception]) -> None:
    r = router()
    r.get(PATH).mock(return_value=httpx.Response(status, json={}))
    clock = FakeClock()
    client = make_client(r, runtime=make_runtime(clock=clock))
    with pytest.raises(exc):
        client.get(PATH)
    assert r.routes[0].call_count == 1
    assert clock.sleeps == []


def test_heartbeat_during_long_wait(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="pplx_export")
    r = router()
    r.get(PATH).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "35"}),
            httpx.Response(200, json={}),
        ]
    )
    clock = FakeClock()
    client = make_client(r, runtime=make_runtime(clock=clock))
    client.get(PATH)
    assert clock.sleeps == [10, 10, 10, 5]
    beats = [rec.getMessage() for rec in caplog.records if "still waiting" in rec.getMessage()]
    assert len(beats) == 3
    assert "25 s" in beats[0]


def test_pacer_spaces_requests_with_jitter() -> None:
    r = router()
    r.get(PATH).mock(return_value=httpx.Response(200, json={}))
    clock = FakeClock()
    rt = NetRuntime(min_interval=3.0, clock=clock, rng=FixedRandom(1.0))
    client = make_client(r, runtime=rt)
    client.get(PATH)
    assert clock.sleeps == []  # the first request does not wait
    client.get(PATH)
    client.get(PATH, pace_scale=4 / 3)
    assert clock.sleeps == pytest.approx([3.75, 5.0])  # 3 * 1.25, then 4 * 1.25


def test_pacer_counts_elapsed_time_and_low_jitter() -> None:
    clock = FakeClock()
    rt = NetRuntime(min_interval=4.0, clock=clock, rng=FixedRandom(0.0))
    rt.pacer.wait()
    clock.now += 1.0  # work between requests counts toward the gap
    assert rt.pacer.wait() == pytest.approx(2.0)  # 4 * 0.75 - 1


def test_pacer_zero_interval_never_sleeps() -> None:
    clock = FakeClock()
    rt = NetRuntime(min_interval=0.0, clock=clock, rng=MidRandom())
    for _ in range(5):
        rt.pacer.wait()
    assert clock.sleeps == []


def test_one_pacer_shared_by_two_clients() -> None:
    r = router()
    r.get(PATH).mock(return_value=httpx.Response(200, json={}))
    clock = FakeClock()
    rt = NetRuntime(min_interval=3.0, clock=clock, rng=MidRandom())
    a = make_client(r, runtime=rt)
    b = make_client(r, runtime=rt)
    a.get(PATH)
    b.get(PATH)
    assert clock.sleeps == [3.0]
    assert rt.stats.total == 2


def test_downloads_bypass_the_pacer(tmp_path: object) -> None:
    from pathlib import Path

    dest = Path(str(tmp_path))
    r = router()
    r.get(PATH).mock(return_value=httpx.Response(200, json={}))
    r.get("https://cdn.example.net/f.bin").mock(return_value=httpx.Response(200, content=b"x"))
    clock = FakeClock()
    rt = NetRuntime(min_interval=3.0, clock=clock, rng=MidRandom())
    client = make_client(r, runtime=rt)
    client.get(PATH)
    client.download("https://cdn.example.net/f.bin?Signature=s", dest)
    client.download("https://cdn.example.net/f.bin?Signature=s", dest)
    assert clock.sleeps == []


def test_download_retries_count_their_own_attempts(tmp_path: Path) -> None:
    cdn = "https://cdn.example.net/f.bin"
    r = router()
    r.get(cdn).mock(
        side_effect=[httpx.Response(429), httpx.Response(502), httpx.Response(200, content=b"x")]
    )
    clock = FakeClock()
    rt = make_runtime(clock=clock)
    rt.record_failure()  # an API request failed just before
    client = make_client(r, runtime=rt)
    tmp = client.download(cdn + "?Signature=s", tmp_path / "dl")
    assert tmp.read_bytes() == b"x"
    assert list((tmp_path / "dl").iterdir()) == [tmp]  # the failed attempts left no temp file
    assert r.routes[0].call_count == 3
    # Waits by the download's own attempts (20, 60), not by the run's counter (60, 180);
    # the API's counter is neither moved nor reset by a CDN download.
    assert clock.slept == pytest.approx(20 + 60)
    assert rt.consecutive_failures == 1


def test_a_download_has_the_mode_of_the_files_beside_it(tmp_path: Path) -> None:
    """mkstemp creates 0o600; a download becomes an archive file by a rename, so it gets the
    mode every other file of the thread has (0o666 less the umask)."""
    cdn = "https://cdn.example.net/chart.png"
    r = router()
    r.get(cdn).mock(return_value=httpx.Response(200, content=b"png"))
    client = make_client(r, runtime=make_runtime())
    tmp = client.download(cdn + "?Signature=s", tmp_path)
    neighbour = tmp_path / "conversation.md"
    atomic_write_text(neighbour, "# page\n")
    assert stat.S_IMODE(tmp.stat().st_mode) == stat.S_IMODE(neighbour.stat().st_mode)


def test_request_counts_per_endpoint() -> None:
    r = router()
    r.get(url__regex=r"/rest/thread/.*").mock(
        side_effect=[
            httpx.Response(500),
            httpx.Response(200, json={}),
            httpx.Response(200, json={}),
        ]
    )
    rt = make_runtime()
    client = make_client(r, runtime=rt, backoff_cap=0)
    client.get("/rest/thread/0a1b2c3d-0000-4000-8000-00000000abcd")
    client.get("/rest/thread/0a1b2c3d-0000-4000-8000-00000000ffff")
    assert rt.stats.total == 3  # the retried attempt counts: it was a request
    assert rt.stats.snapshot() == {"GET /rest/thread/{id}": 3}


def test_headers_cookie_and_query_encoding() -> None:
    r = router()
    route = r.get(PATH).mock(return_value=httpx.Response(200, json={}))
    client = make_client(
        r,
        cookies={"a": "1", "__Secure-next-auth.session-token": "tok"},
        headers={"User-Agent": "UA/1"},
    )
    client.get(PATH, params=[("version", "2.18"), ("cursor", "a/b+c= d")])
    request = route.calls.last.request
    assert request.headers["Cookie"] == "a=1; __Secure-next-auth.session-token=tok"
    assert request.headers["User-Agent"] == "UA/1"
    assert request.url.query == b"version=2.18&cursor=a%2Fb%2Bc%3D%20d"


def test_set_cookie_rolls_forward() -> None:
    r = router()
    r.get(PATH).mock(
        return_value=httpx.Response(
            200, json={}, headers={"Set-Cookie": "__Secure-next-auth.session-token=new; Path=/"}
        )
    )
    cookies = {"__Secure-next-auth.session-token": "old"}
    client = make_client(r, cookies=cookies)
    client.get(PATH)
    assert cookies["__Secure-next-auth.session-token"] == "new"


def test_settings_from_network_config() -> None:
    net = NetworkSettings(min_interval=0, max_retries=0, backoff_cap=7, timeout=33)
    s = ClientSettings.from_network(net, base_url="http://127.0.0.1:9/", headers={"X": "1"})
    assert s.base_url == "http://127.0.0.1:9"
    assert s.max_attempts == 1  # at least one attempt
    assert s.backoff_cap == 7 and s.timeout == 33


def test_base_url_override_routes_to_other_host() -> None:
    r = router()
    route = r.get("http://127.0.0.1:8765/api/auth/session").mock(
        return_value=httpx.Response(200, json={"user": {}})
    )
    client = make_client(r, base_url="http://127.0.0.1:8765")
    assert client.get("/api/auth/session") == {"user": {}}
    assert route.called


def test_helpers() -> None:
    assert (
        safe_url("https://u:p@cdn.example.net/a/b.pdf?Signature=x&Key=y")
        == "cdn.example.net/a/b.pdf"
    )
    assert build_query([("a b", "c/d")]) == "a%20b=c%2Fd"
    assert build_query(None) == ""
    assert endpoint_key("GET", "/rest/assets/9f0e1d2c3b4a59687f6e5d4c/data") == (
        "GET /rest/assets/{id}/data"
    )
    assert (
        endpoint_key("POST", "/rest/perplexity_ask/graphql") == "POST /rest/perplexity_ask/graphql"
    )


def test_endpoint_key_collapses_handles_but_not_names() -> None:
    assert endpoint_key("GET", "/rest/assets/toolu_emuNotes01/data") == "GET /rest/assets/{id}/data"
    assert endpoint_key("GET", "/rest/collections/list_collection_threads") == (
        "GET /rest/collections/list_collection_threads"
    )


def test_tls_is_set_up_on_the_first_https_request_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain-http base URL (the emulator) never builds a TLS context; https is verified."""
    from pplx_export.site.client import LazyTLSTransport

    made: list[dict[str, object]] = []

    class Fake(httpx.BaseTransport):
        def __init__(self, **kw: object) -> None:
            made.append(kw)

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, request=request)

    monkeypatch.setattr(httpx, "HTTPTransport", Fake)
    lazy = LazyTLSTransport()
    for _ in range(2):
        lazy.handle_request(httpx.Request("GET", "http://127.0.0.1:1/api"))
    assert made == [{"verify": False}]
    lazy.handle_request(httpx.Request("GET", "https://www.perplexity.ai/api"))
    lazy.handle_request(httpx.Request("GET", "https://cdn.example/x"))
    assert made == [{"verify": False}, {}]  # the default: certificates checked
    lazy.close()
