"""PerplexityAPI calls: thread page merges, spaces, assets, downloads, models, usage, ask."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import httpx
import pytest

from pplx_export.errors import NotFound, PermissionDenied, SchemaError, TransportError, UsageError
from pplx_export.site import constants as C
from pplx_export.site.api import PerplexityAPI
from pplx_export.site.ask import AskState, FollowUp, build_ask_body
from pplx_export.site.assets import extract_candidates
from pplx_export.site.pacing import NetRuntime
from pplx_export.site.thread import IncompleteThread
from pplx_export.util.atomic import umask_file_mode
from tests.net_fakes import FakeClock, MidRandom, make_client, router

UUID = "7c1e3a52-0000-4000-8000-0000000000aa"
TPATH = f"/rest/thread/{UUID}"


def _api(r: Any, **kw: Any) -> PerplexityAPI:
    return PerplexityAPI(make_client(r, **kw))


def _q(route: Any, i: int = -1) -> list[tuple[str, str]]:
    return parse_qsl(route.calls[i].request.url.query.decode(), keep_blank_values=True)


# -- threads ----------------------------------------------------------------------------------


def _tpage(n: int, *, has_next: bool, cursor: str, meta: str = "") -> httpx.Response:
    body: dict[str, Any] = {
        "thread_metadata": {"title": meta or f"page {n}"},
        "entries": [{"uuid": f"e{n}"}],
        "background_entries": [{"uuid": f"b{n}"}] if n % 2 else [],
        "has_next_page": has_next,
        "next_cursor": cursor,
    }
    if n == 1:
        body["extra_top_level"] = "kept"
    return httpx.Response(200, json=body)


def test_plain_thread_merges_pages() -> None:
    r = router()
    route = r.get(TPATH).mock(
        side_effect=[
            _tpage(1, has_next=True, cursor="a/b=c+d"),
            _tpage(2, has_next=True, cursor="k2"),
            _tpage(3, has_next=False, cursor=""),
        ]
    )
    merged = _api(r).thread(UUID)
    assert merged["thread_metadata"] == {"title": "page 1"}
    assert [e["uuid"] for e in merged["entries"]] == ["e1", "e2", "e3"]
    assert [e["uuid"] for e in merged["background_entries"]] == ["b1", "b3"]
    assert merged["extra_top_level"] == "kept"
    assert merged["has_next_page"] is False
    assert _q(route, 0) == [("version", "2.18"), ("source", "default")]
    assert route.calls[1].request.url.query.endswith(b"&cursor=a%2Fb%3Dc%2Bd")
    assert _q(route, 1)[-1] == ("cursor", "a/b=c+d")


def test_schematized_params_in_order_and_paced_4s() -> None:
    r = router()
    route = r.get(TPATH).mock(side_effect=[_tpage(1, has_next=False, cursor="")])
    clock = FakeClock()
    rt = NetRuntime(min_interval=3.0, clock=clock, rng=MidRandom())
    rt.pacer.wait()  # a request just went out
    api = PerplexityAPI(make_client(r, runtime=rt))
    api.thread_schematized(UUID)
    q = _q(route, 0)
    assert q[:9] == [
        ("with_parent_info", "true"),
        ("with_schematized_response", "true"),
        ("version", "2.18"),
        ("source", "default"),
        ("limit", "100"),
        ("offset", "0"),
        ("from_first", "false"),
        ("supported_block_use_cases", "answer_modes"),
        ("supported_block_use_cases", "media_items"),
    ]
    cases = [v for k, v in q if k == "supported_block_use_cases"]
    assert cases == list(C.SCHEMATIZED_BLOCK_USE_CASES)
    # The ask call's 32 and the earlier thread call's 8, each once (3 are in both).
    assert len(cases) == len(set(cases)) == 37
    assert set(cases) == set(C.ASK_BLOCK_USE_CASES) | set(C.EARLIER_SCHEMATIZED_BLOCK_USE_CASES)
    assert clock.sleeps == pytest.approx([4.0])


def test_thread_stop_on_empty_cursor_and_loop_guard() -> None:
    r = router()
    route = r.get(TPATH).mock(side_effect=[_tpage(1, has_next=True, cursor="")])
    assert len(_api(r).thread(UUID)["entries"]) == 1
    assert route.call_count == 1

    r = router()
    route = r.get(TPATH).mock(
        side_effect=[
            _tpage(1, has_next=True, cursor="x"),
            _tpage(2, has_next=True, cursor="y"),
            _tpage(3, has_next=True, cursor="x"),
        ]
    )
    with pytest.raises(IncompleteThread, match="repeated a page cursor after 3 pages") as info:
        _api(r).thread(UUID)
    assert route.call_count == 3
    # What was fetched travels with the error (the exporter keeps a short schematized one).
    assert len(info.value.partial["entries"]) == 3
    assert info.value.partial["has_next_page"] is True


def test_thread_pages_are_followed_past_the_old_caps() -> None:
    # 60 pages: three times the earlier tool's plain cap, six times its schematized cap.
    pages = [_tpage(i, has_next=i < 60, cursor=f"c{i}" if i < 60 else "") for i in range(1, 61)]
    for flavor in ("thread", "thread_schematized"):
        r = router()
        route = r.get(TPATH).mock(side_effect=list(pages))
        merged = getattr(_api(r), flavor)(UUID)
        assert route.call_count == 60
        assert len(merged["entries"]) == 60 and merged["has_next_page"] is False


def test_pagination_that_never_ends_fails_at_the_safety_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(C, "THREAD_PAGE_SAFETY_CAP", 25)
    r = router()
    route = r.get(TPATH).mock(
        side_effect=[_tpage(i, has_next=True, cursor=f"c{i}") for i in range(1, 40)]
    )
    with pytest.raises(IncompleteThread, match="did not end after 25 pages"):
        _api(r).thread_schematized(UUID)
    assert route.call_count == 25


def test_an_entry_repeated_on_a_later_page_is_kept_once() -> None:
    r = router()
    second = _tpage(2, has_next=False, cursor="").json()
    second["entries"] = [{"uuid": "e1"}, *second["entries"]]
    r.get(TPATH).mock(
        side_effect=[_tpage(1, has_next=True, cursor="c1"), httpx.Response(200, json=second)]
    )
    merged = _api(r).thread(UUID)
    assert [e["uuid"] for e in merged["entries"]] == ["e1", "e2"]


def test_thread_not_an_object_is_schema_error() -> None:
    r = router()
    r.get(TPATH).mock(return_value=httpx.Response(200, json=[1, 2]))
    with pytest.raises(SchemaError) as info:
        _api(r).thread(UUID)
    assert UUID in str(info.value)


# -- spaces -----------------------------------------------------------------------------------


def test_get_collection_and_denied_space() -> None:
    r = router()
    route = r.get(C.GET_COLLECTION_PATH).mock(
        side_effect=[
            httpx.Response(200, json={"uuid": "s1", "slug": "my space/1", "title": "T"}),
            httpx.Response(
                200, json={"status": "failed", "_response_type": "VIEW_COLLECTION_NOT_ALLOWED"}
            ),
        ]
    )
    api = _api(r)
    assert api.get_collection("my space/1")["uuid"] == "s1"
    assert _q(route, 0)[0] == ("collection_slug", "my space/1")
    assert b"collection_slug=my%20space%2F1" in route.calls[0].request.url.query
    with pytest.raises(PermissionDenied) as info:
        api.get_collection("other")
    assert info.value.code == "VIEW_COLLECTION_NOT_ALLOWED"


def test_collection_threads_offset_paging() -> None:
    def items(ids: list[int], has_next: bool) -> list[dict[str, Any]]:
        return [{"uuid": f"t{i}", "has_next_page": has_next} for i in ids]

    r = router()
    route = r.get(C.LIST_COLLECTION_THREADS_PATH).mock(
        side_effect=[
            httpx.Response(200, json=items([1, 2], True)),
            httpx.Response(200, json={"threads": items([3], True)}),
            httpx.Response(200, json=[]),
        ]
    )
    got = [t["uuid"] for t in _api(r).iter_collection_threads("garden")]
    assert got == ["t1", "t2", "t3"]
    assert [dict(_q(route, i))["offset"] for i in range(3)] == ["0", "2", "3"]


def test_list_user_collections_shapes() -> None:
    for body in ([{"uuid": "a"}], {"collections": [{"uuid": "a"}]}, {"items": [{"uuid": "a"}]}):
        r = router()
        r.get(C.LIST_USER_COLLECTIONS_PATH).mock(return_value=httpx.Response(200, json=body))
        assert _api(r).list_user_collections() == [{"uuid": "a"}]


def test_create_collection_and_batch_move() -> None:
    r = router()
    create = r.post(C.CREATE_COLLECTION_PATH).mock(
        return_value=httpx.Response(200, json={"uuid": "c1", "slug": "bot-1", "user_permission": 4})
    )
    move = r.post(C.BATCH_MOVE_THREADS_PATH).mock(
        return_value=httpx.Response(200, json={"status": "success"})
    )
    api = _api(r)
    assert api.create_collection("BOT", description="d")["uuid"] == "c1"
    assert json.loads(create.calls[0].request.content) == {
        "title": "BOT",
        "description": "d",
        "emoji": "1f4c1",
        "appearance": None,
        "instructions": "",
        "access": 1,
    }
    api.batch_move_threads(["ctx-1"], "c1")
    assert json.loads(move.calls[0].request.content) == {
        "context_uuids": ["ctx-1"],
        "new_collection_uuid": "c1",
    }
    assert _q(move, 0) == [("version", "2.18"), ("source", "default")]


# -- misc -------------------------------------------------------------------------------------


def test_models_usage_mark_viewed_session() -> None:
    r = router()
    r.get(C.MODELS_CONFIG_PATH).mock(return_value=httpx.Response(200, json={"models": {}}))
    usage = r.get(C.THREAD_USAGE_PATH).mock(
        side_effect=[
            httpx.Response(200, json={"usage_cents": 1.5}),
            httpx.Response(403, json={"detail": "thread_usage_forbidden"}),
        ]
    )
    mark = r.post(C.MARK_VIEWED_PATH).mock(
        return_value=httpx.Response(200, json={"status": "success"})
    )
    r.get(C.SESSION_PATH).mock(return_value=httpx.Response(200, json={"user": {"email": "a@x"}}))
    api = _api(r)
    assert api.models_config() == {"models": {}}
    assert api.credit_usage("ctx-9") == {"usage_cents": 1.5}
    assert dict(_q(usage, 0))["thread_id"] == "ctx-9"
    with pytest.raises(PermissionDenied) as info:
        api.credit_usage("entry-uuid")
    assert info.value.code == "thread_usage_forbidden"
    assert api.mark_viewed(["c1", "c2"]) == {"status": "success"}
    assert json.loads(mark.calls[0].request.content) == {"context_uuids": ["c1", "c2"]}
    assert api.session() == {"user": {"email": "a@x"}}
    assert api.requests_made == 5


# -- assets -----------------------------------------------------------------------------------


def test_asset_candidates_order() -> None:
    data = {
        "asset_data": {
            "download_info": [
                {
                    "url": "https://cdn/x.md",
                    "filename": "x.md",
                    "is_exportable": True,
                    "text_content": "hi",
                },
                {"url": "", "filename": "skip"},
            ],
            "pdf_file": {"url": "https://cdn/x.pdf", "name": "x.pdf"},
            "doc_file": {"url": "https://cdn/x.doc", "filename": "x.doc"},
        }
    }
    cands = extract_candidates(data)
    assert [(c.url, c.filename) for c in cands] == [
        ("https://cdn/x.md", "x.md"),
        ("https://cdn/x.doc", "x.doc"),
        ("https://cdn/x.pdf", "x.pdf"),
    ]
    assert cands[0].text_content == "hi"
    assert "https://cdn" not in repr(cands[0])


def test_asset_data_call_and_errors() -> None:
    r = router()
    route = r.get(url__regex=r"/rest/assets/.*/data").mock(
        side_effect=[
            httpx.Response(
                200,
                json={
                    "entry_uuid": "e",
                    "asset_type": "RESEARCH_REPORT",
                    "asset_data": {"download_info": [{"url": "https://c/f"}]},
                },
            ),
            httpx.Response(404, json={"error_code": "ASSET_NOT_FOUND"}),
        ]
    )
    api = _api(r)
    data = api.asset_data("toolu_01/odd id")
    assert data.entry_uuid == "e" and data.asset_type == "RESEARCH_REPORT"
    assert [c.url for c in data.candidates] == ["https://c/f"]
    assert route.calls[0].request.url.raw_path.startswith(b"/rest/assets/toolu_01%2Fodd%20id/data?")
    with pytest.raises(NotFound) as info:
        api.asset_data("gone")
    assert info.value.code == "ASSET_NOT_FOUND"


CDN = "https://cdn.example.net/files/report.md"


def test_download_streams_to_temp_in_dest_without_cookies(tmp_path: Path) -> None:
    r = router()
    route = r.get(CDN).mock(return_value=httpx.Response(200, content=b"# Report\n" * 1000))
    api = _api(r, cookies={"__Secure-next-auth.session-token": "tok"})
    tmp = api.download(CDN + "?Expires=1&Signature=abc", tmp_path / "files")
    assert tmp.parent == tmp_path / "files" and tmp.name.startswith(".pplx-tmp-")
    assert tmp.read_bytes() == b"# Report\n" * 1000
    # The mode of every archive file (issue 34: not mkstemp's owner-only 0o600).
    assert stat.S_IMODE(tmp.stat().st_mode) == umask_file_mode()
    assert "Cookie" not in route.calls[0].request.headers


def test_download_retries_then_succeeds_and_cleans_up(tmp_path: Path) -> None:
    r = router()
    r.get(CDN).mock(
        side_effect=[
            httpx.Response(503),
            httpx.ReadError("reset"),
            httpx.Response(200, content=b"ok"),
        ]
    )
    api = _api(r, backoff_cap=0)
    tmp = api.download(CDN, tmp_path / "dl")
    assert tmp.read_bytes() == b"ok"
    assert list((tmp_path / "dl").iterdir()) == [tmp]


@pytest.mark.parametrize(
    ("status", "exc"), [(403, PermissionDenied), (404, NotFound), (410, NotFound)]
)
def test_download_refusals(tmp_path: Path, status: int, exc: type[Exception]) -> None:
    r = router()
    route = r.get(CDN).mock(return_value=httpx.Response(status, text="<Error>AccessDenied</Error>"))
    with pytest.raises(exc):
        _api(r).download(CDN + "?Signature=zzz", tmp_path / "dl")
    assert route.call_count == 1
    assert list((tmp_path / "dl").iterdir()) == []


def test_download_gives_up_with_transport_error(tmp_path: Path) -> None:
    r = router()
    r.get(CDN).mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(TransportError):
        _api(r, backoff_cap=0).download(CDN, tmp_path / "dl")
    assert list((tmp_path / "dl").iterdir()) == []


# -- ask --------------------------------------------------------------------------------------


def _ids() -> Any:
    n = iter(range(100))
    return lambda: f"uuid-{next(n)}"


def test_ask_body_new_thread() -> None:
    body = build_ask_body("why is the sky blue", mode="search", new_uuid=_ids())
    p = body["params"]
    assert body["query_str"] == "why is the sky blue"
    assert p["mode"] == "copilot" and p["model_preference"] == "pplx_pro"
    assert p["query_source"] == "home"
    assert p["frontend_uuid"] == "uuid-0" and p["frontend_context_uuid"] == "uuid-1"
    assert "last_backend_uuid" not in p and "read_write_token" not in p
    assert p["supported_block_use_cases"] == list(C.ASK_BLOCK_USE_CASES)
    assert len(C.ASK_BLOCK_USE_CASES) == 32
    assert p["version"] == "2.18" and p["use_schematized_api"] is True


def test_ask_body_follow_up_council_space() -> None:
    fu = FollowUp("backend-1", "rw-token")
    body = build_ask_body(
        "and then?",
        mode="council",
        compare_models=["a", "b", "c"],
        follow_up=fu,
        target_collection_uuid="space-1",
        new_uuid=_ids(),
    )
    p = body["params"]
    assert p["query_source"] == "followup" and p["followup_source"] == "link"
    assert p["last_backend_uuid"] == "backend-1" and p["read_write_token"] == "rw-token"
    assert "frontend_context_uuid" not in p
    assert p["model_preference"] == "pplx_agentic_research"
    assert p["compare_model_preferences"] == ["a", "b", "c"]
    assert p["target_collection_uuid"] == "space-1" and p["target_thread_access_level"] == 1
    assert "rw-token" not in repr(fu)


@pytest.mark.parametrize("models", [["a"], ["a", "b", "c", "d"]])
def test_ask_council_model_count(models: list[str]) -> None:
    with pytest.raises(UsageError):
        build_ask_body("q", mode="council", compare_models=models)


def test_ask_modes() -> None:
    assert build_ask_body("q", mode="deep-research")["params"]["model_preference"] == "pplx_alpha"
    assert build_ask_body("q", mode="study")["params"]["model_preference"] == "pplx_study"
    assert build_ask_body("q", model="experimental")["params"]["model_preference"] == "experimental"
    with pytest.raises(UsageError):
        build_ask_body("q", mode="computer")


def test_ask_stream_end_to_end() -> None:
    stream = (
        b'data: {"backend_uuid": "th-1", "uuid": "en-1", "status": "PENDING", "text": "a"}\r\n\r\n'
        b": comment\n\n"
        b'data: {"context_uuid": "ctx-1", "status": "COMPLETED", "text": "ab",\n'
        b'data: "final_sse_message": true}\n\n'
        b'data: {"status": "FAILED"}\n\n'
    )
    r = router()
    route = r.post(C.ASK_PATH).mock(
        return_value=httpx.Response(
            200, content=stream, headers={"content-type": "text/event-stream"}
        )
    )
    state = AskState()
    for event in _api(r).ask(build_ask_body("q")):
        state.update(event)
    assert state.completed
    assert (state.backend_uuid, state.entry_uuid, state.context_uuid) == ("th-1", "en-1", "ctx-1")
    assert state.text == "ab" and state.events == 2
    req = route.calls[0].request
    assert req.headers["Accept"] == "text/event-stream"
    assert req.url.query == b""


def test_ask_not_completed_and_errors() -> None:
    state = AskState()
    state.update({"status": "FAILED", "final_sse_message": True})
    assert state.final and not state.completed
    state = AskState()
    state.update({"status": "COMPLETED"})
    assert not state.completed  # no final event: the stream was cut

    r = router()
    route = r.post(C.ASK_PATH).mock(return_value=httpx.Response(502))
    with pytest.raises(Exception) as info:
        list(_api(r).ask(build_ask_body("q")))
    assert route.call_count == 1  # never retried: it would create a second thread
    assert "502" in str(info.value)

    r = router()
    r.post(C.ASK_PATH).mock(
        return_value=httpx.Response(
            200, text="<html>hi</html>", headers={"content-type": "text/html"}
        )
    )
    with pytest.raises(TransportError):
        list(_api(r).ask(build_ask_body("q")))


def test_create_collection_is_never_retried() -> None:
    r = router()
    route = r.post(C.CREATE_COLLECTION_PATH).mock(return_value=httpx.Response(502))
    with pytest.raises(Exception, match="502"):
        _api(r, backoff_cap=0).create_collection("BOT")
    assert route.call_count == 1
