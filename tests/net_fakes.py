"""Test doubles for the network layer: a fake clock, a fixed-jitter RNG, client builders."""

from __future__ import annotations

import random
from typing import Any

import httpx
import respx

from pplx_export.site.client import ApiClient, ClientSettings
from pplx_export.site.pacing import NetRuntime

BASE = "https://www.perplexity.ai"


class FakeClock:
    """Time only moves when someone sleeps; every sleep is recorded."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    @property
    def slept(self) -> float:
        return sum(self.sleeps)


class MidRandom(random.Random):
    """uniform(a, b) always returns the midpoint: jitter-free, exact expectations."""

    def uniform(self, a: float, b: float) -> float:
        return (a + b) / 2


class FixedRandom(random.Random):
    """uniform(a, b) returns a + frac * (b - a)."""

    def __init__(self, frac: float) -> None:
        super().__init__(0)
        self.frac = frac

    def uniform(self, a: float, b: float) -> float:
        return a + self.frac * (b - a)


def make_runtime(
    min_interval: float = 0.0, clock: FakeClock | None = None, rng: random.Random | None = None
) -> NetRuntime:
    return NetRuntime(min_interval=min_interval, clock=clock or FakeClock(), rng=rng or MidRandom())


def make_client(
    router: respx.Router,
    *,
    runtime: NetRuntime | None = None,
    cookies: dict[str, str] | None = None,
    **settings: Any,
) -> ApiClient:
    opts: dict[str, Any] = {"base_url": BASE, "max_attempts": 3, "backoff_cap": 300.0}
    opts.update(settings)
    return ApiClient(
        ClientSettings(**opts),
        runtime or make_runtime(),
        cookies=cookies,
        transport=httpx.MockTransport(router.handler),
    )


def router() -> respx.Router:
    return respx.Router(base_url=BASE, assert_all_called=False)
