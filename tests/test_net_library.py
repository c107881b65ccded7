"""Library listing: GraphQL pages, stop rules, loop guard, no page cap, REST fallback."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from pplx_export.site import constants as C
from pplx_export.site.library import (
    GRAPHQL_FIRST,
    ListingRun,
    iter_library,
    iter_library_graphql,
    iter_library_rest,
    listing_order,
    node_to_row,
    rest_item_to_row,
)
from tests.net_fakes import make_client, router


def _node(i: int, space: bool = False) -> dict[str, Any]:
    return {
        "name": f"Thread {i}",
        "entryId": f"e-{i}",
        "slug": f"thread-{i}-slug",
        "mode": "SEARCH",
        "displayModel": {"modelID": "pplx_pro"},
        "updatedAt": f"2036-01-0{i % 9 + 1}T10:00:00.123456Z",
        "status": "COMPLETED",
        "space": {"spaceUuid": "s-1", "title": "Garden", "slug": "garden-x"} if space else None,
        "unused": True,
    }


def _page(nodes: list[dict[str, Any]], has_next: bool, cursor: str | None) -> httpx.Response:
    threads = {
        "edges": [{"node": n} for n in nodes],
        "pageInfo": {"hasNextPage": has_next, "endCursor": cursor},
    }
    return httpx.Response(200, json={"data": {"viewer": {"recentGroup": {"threads": threads}}}})


def _bodies(route: Any) -> list[dict[str, Any]]:
    return [json.loads(call.request.content) for call in route.calls]


def test_node_mapping_key_order() -> None:
    row = node_to_row(_node(1, space=True))
    assert list(row) == [
        "title",
        "entryUUID",
        "href",
        "mode",
        "displayModel",
        "lastUpdated",
        "status",
        "space",
    ]
    assert row["space"] == {"uuid": "s-1", "title": "Garden", "slug": "garden-x"}
    assert row["displayModel"] == "pplx_pro"
    bare = node_to_row({"entryId": "x", "displayModel": None})
    assert bare["space"] is None and bare["displayModel"] is None


def test_rest_item_mapping_matches_graphql_shape() -> None:
    item = {
        "uuid": "e-1",
        "title": "",
        "query_str": "what grows in shade",
        "slug": "what-grows",
        "mode": "COMPUTER",
        "display_model": "pplx_asi",
        "last_query_datetime": "2036-01-01T00:00:00.000001Z",
        "status": "COMPLETED",
        "collection": {"uuid": "s", "title": "T", "slug": "t"},
        "has_next_page": False,
    }
    row = rest_item_to_row(item)
    assert row == {
        "title": "what grows in shade",
        "entryUUID": "e-1",
        "href": "what-grows",
        "mode": "COMPUTER",
        "displayModel": "pplx_asi",
        "lastUpdated": "2036-01-01T00:00:00.000001Z",
        "status": "COMPLETED",
        "space": {"uuid": "s", "title": "T", "slug": "t"},
    }
    assert list(row) == list(node_to_row({}))


def test_graphql_paging_operations_and_variables() -> None:
    r = router()
    route = r.post(C.GRAPHQL_PATH).mock(
        side_effect=[
            _page([_node(1), _node(2)], True, "cur-1"),
            _page([_node(3)], True, "cur-2"),
            _page([_node(4)], False, "cur-3"),
        ]
    )
    rows = list(iter_library_graphql(make_client(r), page_size=2))
    assert [x["entryUUID"] for x in rows] == ["e-1", "e-2", "e-3", "e-4"]
    bodies = _bodies(route)
    assert bodies[0]["operationName"] == C.GQL_FIRST_PAGE_OP
    assert bodies[0]["extensions"]["persistedQuery"] == {
        "version": 1,
        "sha256Hash": C.GQL_FIRST_PAGE_HASH,
    }
    assert "cursor" not in bodies[0]["variables"] and bodies[0]["variables"]["count"] == 2
    assert bodies[1]["operationName"] == C.GQL_NEXT_PAGE_OP
    assert bodies[1]["extensions"]["persistedQuery"]["sha256Hash"] == C.GQL_NEXT_PAGE_HASH
    assert (
        bodies[1]["variables"]["cursor"] == "cur-1" and bodies[2]["variables"]["cursor"] == "cur-2"
    )
    assert bodies[1]["variables"]["sortOrder"] == "NEWEST"
    assert route.calls[0].request.url.query == b""  # no query string on GraphQL


@pytest.mark.parametrize(
    "last",
    [
        _page([], True, "x"),  # empty edges
        _page([_node(9)], True, ""),  # hasNextPage but empty cursor
        _page([_node(9)], False, "x"),
        httpx.Response(200, json={"data": {"viewer": {"recentGroup": {"threads": None}}}}),
        httpx.Response(200, json={"data": None}),
    ],
)
def test_graphql_stop_rules(last: httpx.Response) -> None:
    r = router()
    route = r.post(C.GRAPHQL_PATH).mock(side_effect=[_page([_node(1)], True, "c1"), last])
    rows = list(iter_library_graphql(make_client(r)))
    assert route.call_count == 2
    assert rows[0]["entryUUID"] == "e-1"


def test_graphql_loop_guard_on_repeated_cursor() -> None:
    r = router()
    route = r.post(C.GRAPHQL_PATH).mock(
        side_effect=[
            _page([_node(1)], True, "c1"),
            _page([_node(2)], True, "c2"),
            _page([_node(3)], True, "c1"),
            _page([_node(4)], True, "c9"),
        ]
    )
    rows = list(iter_library_graphql(make_client(r)))
    assert [x["entryUUID"] for x in rows] == ["e-1", "e-2", "e-3"]
    assert route.call_count == 3


def test_no_page_cap() -> None:
    pages = [_page([_node(i)], True, f"c{i}") for i in range(60)] + [_page([_node(60)], False, "")]
    r = router()
    r.post(C.GRAPHQL_PATH).mock(side_effect=pages)
    assert len(list(iter_library_graphql(make_client(r)))) == 61  # beyond the old 50-page cap


def test_generator_can_stop_early() -> None:
    r = router()
    route = r.post(C.GRAPHQL_PATH).mock(
        side_effect=[_page([_node(1), _node(2)], True, "c1"), _page([_node(3)], False, "")]
    )
    it = iter_library(make_client(r), ListingRun(order=GRAPHQL_FIRST))
    assert next(it)["entryUUID"] == "e-1"
    it.close()  # type: ignore[attr-defined]  # a generator, typed as an Iterator
    assert route.call_count == 1


def _rest_items(ids: list[int], has_next: bool) -> httpx.Response:
    items = [
        {
            "uuid": f"e-{i}",
            "title": f"T{i}",
            "slug": f"s{i}",
            "mode": "SEARCH",
            "display_model": "pplx_pro",
            "last_query_datetime": "2036-01-01T00:00:00.000000Z",
            "status": "COMPLETED",
            "collection": None,
            "has_next_page": has_next,
        }
        for i in ids
    ]
    return httpx.Response(200, json=items)


def test_rest_listing_offset_paging_and_body() -> None:
    r = router()
    route = r.post(C.LIST_ASK_THREADS_PATH).mock(
        side_effect=[
            _rest_items([1, 2], True),
            httpx.Response(200, json={"threads": _rest_items([3], True).json()}),
            httpx.Response(200, json=[]),
        ]
    )
    rows = list(iter_library_rest(make_client(r), page_size=2))
    assert [x["entryUUID"] for x in rows] == ["e-1", "e-2", "e-3"]
    bodies = _bodies(route)
    assert bodies[0] == {
        "limit": 2,
        "ascending": False,
        "offset": 0,
        "search_term": "",
        "exclude_asi": False,
        "include_assets": True,
    }
    assert [b["offset"] for b in bodies] == [0, 2, 3]
    assert route.calls[0].request.url.query == b"version=2.18&source=default"


def test_rest_listing_stops_when_last_item_has_no_next_page() -> None:
    r = router()
    route = r.post(C.LIST_ASK_THREADS_PATH).mock(side_effect=[_rest_items([1, 2], False)])
    assert len(list(iter_library_rest(make_client(r)))) == 2
    assert route.call_count == 1


def test_rest_listing_loop_guard() -> None:
    r = router()
    route = r.post(C.LIST_ASK_THREADS_PATH).mock(return_value=_rest_items([1, 2], True))
    assert len(list(iter_library_rest(make_client(r)))) == 2
    assert route.call_count == 2


def test_fallback_on_persisted_query_not_found() -> None:
    r = router()
    r.post(C.GRAPHQL_PATH).mock(
        return_value=httpx.Response(200, json={"errors": [{"message": "PersistedQueryNotFound"}]})
    )
    rest = r.post(C.LIST_ASK_THREADS_PATH).mock(side_effect=[_rest_items([1], False)])
    run = ListingRun(order=GRAPHQL_FIRST)
    rows = list(iter_library(make_client(r), run))
    assert [x["entryUUID"] for x in rows] == ["e-1"]
    assert rest.call_count == 1
    assert run.used == "rest" and run.tried == ["graphql", "rest"]


def test_fallback_mid_listing_skips_rows_already_yielded() -> None:
    r = router()
    r.post(C.GRAPHQL_PATH).mock(
        side_effect=[
            _page([_node(1), _node(2)], True, "c1"),
            httpx.Response(
                400, json={"errors": [{"extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"}}]}
            ),
        ]
    )
    r.post(C.LIST_ASK_THREADS_PATH).mock(side_effect=[_rest_items([1, 2, 3], False)])
    rows = list(iter_library(make_client(r), ListingRun(order=GRAPHQL_FIRST)))
    assert [x["entryUUID"] for x in rows] == ["e-1", "e-2", "e-3"]


def test_graphql_error_answer_is_an_error_not_an_empty_library() -> None:
    from pplx_export.errors import ApiError

    r = router()
    r.post(C.GRAPHQL_PATH).mock(
        return_value=httpx.Response(
            200, json={"errors": [{"message": "Internal boom"}], "data": None}
        )
    )
    with pytest.raises(ApiError) as info:
        list(iter_library(make_client(r), ListingRun(order=GRAPHQL_FIRST)))
    assert "Internal boom" in str(info.value)


# ------------------------------------------------------------------ REST as the live site lists


def _live_row(i: int, **extra: Any) -> dict[str, Any]:
    """A row shaped like the May 2026 captures (§9.3): naive time, UI mode, extra keys."""
    row = {
        "uuid": f"e-{i}",
        "slug": f"e-{i}",
        "title": f"T{i}",
        "query_str": f"q{i}",
        "first_answer": "{}",
        "answer_preview": "preview",
        "mode": "copilot",
        "display_model": "claude2",
        "search_focus": "internet",
        "last_query_datetime": "2026-05-29T12:25:17.955282",
        "status": "COMPLETED",
        "thread_status": "completed",
        "locked_reason": None,
        "context_uuid": f"ctx-{i}",
        "frontend_context_uuid": f"fctx-{i}",
        "read_write_token": "secret",
        "query_count": 2,
        "thread_access": 1,
        "source": "ios",
        "unread": True,
        "expiry_time": None,
        "collection": {"uuid": "s-1", "title": "Garden", "emoji": "1f331", "slug": "garden"},
        "has_next_page": False,
        "total_threads": 1,
    }
    row.update(extra)
    return row


def test_live_rest_row_keeps_the_9_3_fields_on_the_canonical_clock() -> None:
    asset = {"uuid": "a-1", "name": "report.pdf", "url": "https://cdn/x?sig=1"}
    row = rest_item_to_row(_live_row(1, mode="asi", display_model="PPLX_ASI", assets=[asset]))
    assert row["lastUpdated"] == "2026-05-29T12:25:17.955282Z"
    assert row["mode"] == "asi" and row["displayModel"] == "PPLX_ASI"
    assert row["space"] == {"uuid": "s-1", "title": "Garden", "slug": "garden"}
    assert {k: row[k] for k in ("context_uuid", "query_count", "thread_status", "source")} == {
        "context_uuid": "ctx-1",
        "query_count": 2,
        "thread_status": "completed",
        "source": "ios",
    }
    assert row["assets"] == [asset]
    assert "read_write_token" not in row and "unread" not in row


def test_rest_listing_without_page_flags_stops_on_a_short_page_or_total() -> None:
    r = router()
    flagless = ("has_next_page", "total_threads")
    full = [{k: v for k, v in _live_row(i).items() if k not in flagless} for i in (1, 2)]
    short = [{k: v for k, v in _live_row(3).items() if k not in flagless}]
    route = r.post(C.LIST_ASK_THREADS_PATH).mock(
        side_effect=[httpx.Response(200, json=full), httpx.Response(200, json=short)]
    )
    assert len(list(iter_library_rest(make_client(r), page_size=2))) == 3
    assert route.call_count == 2
    r = router()
    totalled = [dict(row, total_threads=2) for row in full]
    route = r.post(C.LIST_ASK_THREADS_PATH).mock(side_effect=[httpx.Response(200, json=totalled)])
    assert len(list(iter_library_rest(make_client(r), page_size=2))) == 2
    assert route.call_count == 1


def test_rest_missing_hands_over_to_graphql() -> None:
    r = router()
    r.post(C.LIST_ASK_THREADS_PATH).mock(
        return_value=httpx.Response(404, json={"error_code": "NOT_FOUND"})
    )
    r.post(C.GRAPHQL_PATH).mock(side_effect=[_page([_node(1)], False, "")])
    run = ListingRun()
    assert [x["entryUUID"] for x in iter_library(make_client(r), run)] == ["e-1"]
    assert run.tried == ["rest", "graphql"] and run.used == "graphql"


def test_no_listing_answering_is_an_error() -> None:
    from pplx_export.errors import ApiError

    r = router()
    r.post(C.LIST_ASK_THREADS_PATH).mock(return_value=httpx.Response(200, json={"odd": 1}))
    r.post(C.GRAPHQL_PATH).mock(
        return_value=httpx.Response(200, json={"errors": [{"message": "PersistedQueryNotFound"}]})
    )
    with pytest.raises(ApiError, match="no library listing"):
        list(iter_library(make_client(r)))


@pytest.mark.parametrize(
    ("setting", "remembered", "order"),
    [
        ("auto", "", ("rest", "graphql")),
        ("auto", "graphql", ("graphql", "rest")),
        ("auto", "rest", ("rest", "graphql")),
        ("rest", "graphql", ("rest", "graphql")),
        ("graphql", "", ("graphql", "rest")),
    ],
)
def test_listing_order(setting: str, remembered: str, order: tuple[str, ...]) -> None:
    assert listing_order(setting, remembered) == order
