"""Fault injection: spec parsing, every fault kind, determinism for a seed, exemptions."""

from __future__ import annotations

import json

import httpx
import pytest

from pplx_export.emulator import FaultSpecError, parse_faults, run_emulator
from tests.emulator_support import STD, client, graphql_page, rest_all, sample_uuid, thread_url


def test_parse_full_spec() -> None:
    spec = parse_faults(
        "latency=20ms,429=0.1,500=0.05,503=0.01,drop=0.02,truncate=0.02,challenge=0.02,"
        "graphql_rotated,newest_first,retry_after=0,session"
    )
    assert spec.latency_s == pytest.approx(0.02)
    assert spec.p_429 == 0.1
    assert spec.p_5xx == {500: 0.05, 503: 0.01}
    assert (spec.p_drop, spec.p_truncate, spec.p_challenge) == (0.02, 0.02, 0.02)
    assert spec.graphql_rotated and spec.include_session and spec.newest_first
    assert spec.retry_after == "0"
    assert parse_faults("newest_first=off").newest_first is False
    assert parse_faults("newest_first").active is False  # a switch: nothing is drawn
    assert parse_faults("latency=0.5s").latency_s == 0.5
    assert parse_faults("").active is False


@pytest.mark.parametrize("bad", ["bogus=1", "429=2", "drop=x", "latency=fast"])
def test_parse_rejects_bad_specs(bad: str) -> None:
    with pytest.raises(FaultSpecError):
        parse_faults(bad)


def _tides(http: httpx.Client) -> httpx.Response:
    return http.get(thread_url(sample_uuid("tides")))


def test_429_carries_retry_after() -> None:
    with run_emulator(faults="429=1,retry_after=0") as emu, client(emu) as http:
        response = _tides(http)
    assert response.status_code == 429
    assert response.headers["Retry-After"] == "0"
    assert response.headers["RateLimit-Remaining"] == "0"


def test_5xx() -> None:
    with run_emulator(faults="503=1") as emu, client(emu) as http:
        assert _tides(http).status_code == 503


def test_drop_closes_without_response() -> None:
    with run_emulator(faults="drop=1") as emu, client(emu) as http:
        with pytest.raises(httpx.TransportError):
            _tides(http)
        # Control endpoints are never faulted.
        assert http.get("/__emulator/stats").json()["total"] == 1


def test_truncated_json_body() -> None:
    with run_emulator(faults="truncate=1") as emu, client(emu) as http:
        response = _tides(http)
        listing = http.post(f"/rest/thread/list_ask_threads?{STD}", json={"limit": 25})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    for body in (response.content, listing.content):
        assert body
        with pytest.raises(ValueError):
            json.loads(body)


def test_challenge_page_is_html_200() -> None:
    with run_emulator(faults="challenge=1") as emu, client(emu) as http:
        response = _tides(http)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert response.text.startswith("<!DOCTYPE html>")


def test_graphql_rotated_forces_rest_fallback() -> None:
    with run_emulator(faults="graphql_rotated") as emu, client(emu) as http:
        body = graphql_page(http).json()
        rows = rest_all(http)
    assert body["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
    assert "data" not in body
    assert len(rows) == 21  # 22 sample threads; bob's is in its space's listing only


def test_latency_fault_still_answers() -> None:
    with run_emulator(faults="latency=2ms") as emu, client(emu) as http:
        assert _tides(http).status_code == 200


def test_session_probe_is_exempt_unless_asked() -> None:
    with run_emulator(faults="429=1") as emu, client(emu) as http:
        assert http.get("/api/auth/session").status_code == 200
        assert _tides(http).status_code == 429
    with run_emulator(faults="429=1,session") as emu, client(emu) as http:
        assert http.get("/api/auth/session").status_code == 429


def test_file_downloads_are_not_faulted() -> None:
    with run_emulator(faults="500=1") as emu, client(emu) as http:
        asset = emu.library.asset_bodies  # any known asset id with a body
        asset_uuid = next(iter(asset))
        response = http.get(f"/__emulator/files/{asset_uuid}/heat-pump-report.md")
    assert response.status_code == 200


def _outcomes(seed: int, n: int = 30) -> list[str]:
    spec = "429=0.2,500=0.2,drop=0.1,truncate=0.1,challenge=0.1,retry_after=0"
    outcomes = []
    with run_emulator(faults=spec, seed=seed) as emu, client(emu) as http:
        for _ in range(n):
            try:
                response = _tides(http)
            except httpx.TransportError:
                outcomes.append("drop")
                continue
            if response.status_code != 200:
                outcomes.append(str(response.status_code))
            elif response.headers["content-type"].startswith("text/html"):
                outcomes.append("challenge")
            else:
                try:
                    response.json()
                    outcomes.append("ok")
                except ValueError:
                    outcomes.append("truncate")
    return outcomes


def test_faults_are_deterministic_for_a_seed() -> None:
    first = _outcomes(7)
    assert first == _outcomes(7)
    assert first != _outcomes(8)
    assert {"ok", "429", "500", "drop", "truncate", "challenge"} <= set(first + _outcomes(8))
