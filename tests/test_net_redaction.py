"""Secrets never reach logs or error messages, over a run that fails in every way."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pplx_export.errors import ApiError, PplxError
from pplx_export.logs import LOGGER_NAME, setup_logging
from pplx_export.site import constants as C
from pplx_export.site.api import PerplexityAPI
from pplx_export.site.ask import build_ask_body
from pplx_export.site.cookies import ACCOUNT_PREFIX, SESSION_COOKIE
from tests.net_fakes import make_client, router

SECRETS = ("SESSIONSECRET", "ACCOUNTSECRET", "CFSECRET", "SIGSECRET", "QUERYSECRET", "RWSECRET")
CDN = "https://d2z0o16i8xm8ak.cloudfront.net/assets/report.md"


@pytest.fixture
def logging_on() -> Iterator[None]:
    setup_logging(verbose=2)
    yield
    logger = logging.getLogger(LOGGER_NAME)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()


def test_no_secret_in_logs_or_errors(
    logging_on: None, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.DEBUG)
    r = router()
    r.get("/rest/thread/t1").mock(
        side_effect=[
            httpx.Response(503, headers={"Retry-After": "1"}),
            httpx.ConnectError("failed for https://www.perplexity.ai/rest/thread/t1?x=QUERYSECRET"),
            httpx.Response(429),
            httpx.Response(200, text="<html>Just a moment</html>"),
            httpx.Response(401, json={"detail": "expired"}),
        ]
    )
    r.get("/rest/thread/t2").mock(return_value=httpx.Response(403, text="<html>cf-chl</html>"))
    r.get(C.GET_COLLECTION_PATH).mock(
        return_value=httpx.Response(
            200, json={"status": "failed", "_response_type": "VIEW_COLLECTION_NOT_ALLOWED"}
        )
    )
    r.get(CDN).mock(
        side_effect=[
            httpx.Response(503),
            httpx.ReadError(f"reset {CDN}?Signature=SIGSECRET"),
            httpx.Response(403),
        ]
    )
    r.post(C.ASK_PATH).mock(return_value=httpx.Response(500, text="boom"))
    cookies = {
        SESSION_COOKIE: "SESSIONSECRET",
        f"{ACCOUNT_PREFIX}u1": "ACCOUNTSECRET",
        "cf_clearance": "CFSECRET",
    }
    api = PerplexityAPI(make_client(r, cookies=cookies, max_attempts=5, backoff_cap=0))
    errors: list[PplxError] = []
    for action in (
        lambda: api.client.get("/rest/thread/t1", params=[("sig", "QUERYSECRET")]),
        lambda: api.client.get("/rest/thread/t2"),
        lambda: api.get_collection("QUERYSECRET"),
        lambda: api.download(f"{CDN}?Expires=1&Signature=SIGSECRET", tmp_path / "dl"),
        lambda: list(api.ask(build_ask_body("q", follow_up=None))),
    ):
        with pytest.raises(ApiError) as info:
            action()
        errors.append(info.value)

    assert len(caplog.records) >= 8
    texts = [rec.getMessage() for rec in caplog.records]
    texts += [str(e) for e in errors] + [repr(e) for e in errors]
    for text in texts:
        for secret in SECRETS:
            assert secret not in text, (secret, text)
    joined = "\n".join(texts)
    assert "www.perplexity.ai/rest/thread/t1" in joined  # host + path are shown
    assert "d2z0o16i8xm8ak.cloudfront.net/assets/report.md" in joined
    assert not any(rec.name.startswith("httpx") for rec in caplog.records)
