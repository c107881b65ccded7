from __future__ import annotations

import copy
import json
import logging
from datetime import UTC, datetime
from typing import Any

import pytest

from pplx_export.commands.export.plan import make_plan, parse_since, plan_to_json, row_matches_mode
from pplx_export.parse.last_updated import normalize_last_updated, same_last_updated
from pplx_export.util.timefmt import parse_time


def row(
    uuid: str,
    updated: str,
    *,
    title: str = "",
    mode: str = "SEARCH",
    model: str = "",
    search_mode: str | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "title": title or f"thread {uuid}",
        "entryUUID": uuid,
        "href": f"slug-{uuid}",
        "mode": mode,
        "displayModel": model,
        "lastUpdated": updated,
        "status": "COMPLETED",
        "space": None,
    }
    if search_mode is not None:
        out["search_mode"] = search_mode
    return out


def ok(updated: str) -> dict[str, Any]:
    return {"status": "ok", "lastUpdated": updated, "title": "t", "exported_at": "x"}


def day(n: int, frac: str = ".500000") -> str:
    return f"2040-03-{n:02d}T08:00:00{frac}Z"


# ------------------------------------------------------------------ lastUpdated normalisation


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        ("2040-01-01T00:00:00.18033Z", "2040-01-01T00:00:00.180330Z", True),
        ("2040-01-01T00:00:00.100Z", "2040-01-01T00:00:00.900Z", False),
        ("2040-01-01T00:00:00.000000Z", "2040-01-01T00:00:00Z", True),  # one clock
        ("2040-01-01T00:00:00.180330", "2040-01-01T00:00:00.18033Z", True),  # naive = UTC
        ("2040-01-01T01:00:00.5+01:00", "2040-01-01T00:00:00.500000Z", True),
        ("2040-01-01T00:00:00.180330", "2040-01-01T00:00:00.180331Z", False),
        ("not a time", "not a time", True),
        ("not a time", "2040-01-01T00:00:00Z", False),
        ("2040-01-01T00:00:00.000000Z", "2040-01-01T00:00:00.0Z", True),
        ("2040-01-01T00:00:00.1Z", "2040-01-01T00:00:00.100000Z", True),
        ("2040-01-01T00:00:00Z", "2040-01-01T00:00:00Z", True),
        ("2040-01-01T00:00:01Z", "2040-01-01T00:00:00Z", False),
    ],
)
def test_last_updated_equality_examples(a: str, b: str, equal: bool) -> None:
    assert same_last_updated(a, b) is equal
    assert same_last_updated(b, a) is equal


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("2040-01-01T00:00:00.180330Z", "2040-01-01T00:00:00.180330Z"),
        ("2040-01-01T00:00:00.18033Z", "2040-01-01T00:00:00.180330Z"),
        ("2040-01-01T00:00:00.000000Z", "2040-01-01T00:00:00.000000Z"),
        ("2040-01-01T00:00:00.100Z", "2040-01-01T00:00:00.100000Z"),
        ("2040-01-01T00:00:00Z", "2040-01-01T00:00:00.000000Z"),
        ("2040-01-01T00:00:00.955282", "2040-01-01T00:00:00.955282Z"),  # REST: naive UTC
        ("2040-01-01T02:00:00+02:00", "2040-01-01T00:00:00.000000Z"),
        ("2040-01-01 00:03 UTC", "2040-01-01T00:03:00.000000Z"),
        ("2040-01-01", "2040-01-01"),  # no time of day: compared as text
        (None, ""),
        (12, ""),
    ],
)
def test_normalize_last_updated(raw: Any, normal: str) -> None:
    assert normalize_last_updated(raw) == normal


def test_unknown_last_updated_never_equals() -> None:
    assert not same_last_updated("", "")
    assert not same_last_updated(None, None)


def test_parse_time_forms() -> None:
    want = datetime(2040, 1, 1, 0, 3, tzinfo=UTC)
    assert parse_time("2040-01-01T00:03:00.000000Z") == want
    assert parse_time("2040-01-01 00:03 UTC") == want
    assert parse_time("2040-01-01T01:03:00+01:00") == want
    assert parse_time("2040-01-01T00:03:00.1234567Z") == want.replace(microsecond=123456)
    assert parse_time("2040-01-01") == datetime(2040, 1, 1, tzinfo=UTC)
    assert parse_time("yesterday") is None
    assert parse_time("") is None


# ------------------------------------------------------------------ classification


def test_each_kind_is_classified() -> None:
    rows = [
        row("new1", day(9)),
        row("upd1", day(8)),
        row("err1", day(7)),
        row("done", day(6)),
        row("exp1", day(5)),
        row("del1", day(4)),
        row("tail", day(3)),
    ]
    state = {
        "upd1": ok(day(1)),
        "err1": {"status": "error", "lastUpdated": day(7), "error": "boom"},
        "done": ok(day(6, ".5")),  # same instant, fewer fractional digits
        "exp1": {"status": "expired", "lastUpdated": day(5)},
        "del1": {"status": "deleted", "lastUpdated": day(4)},
    }
    plan = make_plan(rows, state, full=True)
    kinds = {item.uuid: item.kind for item in plan.items}
    assert kinds == {
        "new1": "new",
        "upd1": "updated",
        "err1": "updated",
        "done": "done",
        "exp1": "expired",
        "del1": "deleted",
        "tail": "new",
    }
    assert [i.uuid for i in plan.todo] == ["new1", "upd1", "err1", "tail"]
    assert next(i for i in plan.items if i.uuid == "err1").previous == "error"
    assert plan.counts["new"] == 2 and plan.counts["updated"] == 2


def test_rows_are_sorted_newest_first_whatever_the_input_order() -> None:
    rows = [row("b", day(2)), row("c", "2040-03-05 08:00 UTC"), row("a", day(9))]
    plan = make_plan(rows, {})
    assert [i.uuid for i in plan.items] == ["a", "c", "b"]


def test_trailing_run_of_finished_rows_is_early_stopped() -> None:
    rows = [
        row("n", day(9)),
        row("d1", day(8)),  # done above a work item: stays
        row("u", day(7)),
        row("d2", day(6)),
        row("x", day(5)),
        row("d3", day(4)),
    ]
    state = {
        "d1": ok(day(8)),
        "u": ok(day(1)),
        "d2": ok(day(6)),
        "x": {"status": "expired"},
        "d3": ok(day(4)),
    }
    plan = make_plan(rows, state)
    assert [i.uuid for i in plan.items] == ["n", "d1", "u"]
    assert [i.uuid for i in plan.early_stopped] == ["d2", "x", "d3"]
    assert plan.counts["early_stopped"] == 3
    assert plan.counts["done"] == 1  # only the walked one
    assert plan.counts["expired"] == 0


def test_full_walks_everything_without_early_stop() -> None:
    rows = [row("n", day(9)), row("d", day(8))]
    plan = make_plan(rows, {"d": ok(day(8))}, full=True)
    assert [i.kind for i in plan.items] == ["new", "done"]
    assert plan.early_stopped == []
    assert [i.uuid for i in plan.todo] == ["n"]


def test_everything_done_means_everything_early_stopped() -> None:
    rows = [row("a", day(9)), row("b", day(8))]
    plan = make_plan(rows, {"a": ok(day(9)), "b": ok(day(8))})
    assert plan.items == [] and plan.todo == []
    assert plan.counts["early_stopped"] == 2


def test_force_reexports_done_but_terminal_states_stay_terminal() -> None:
    rows = [row("d", day(9)), row("x", day(8)), row("z", day(7))]
    state = {
        "d": ok(day(9)),
        "x": {"status": "expired", "lastUpdated": day(1)},
        "z": {"status": "deleted", "lastUpdated": day(7)},
    }
    plan = make_plan(rows, state, force=True)
    assert [(i.uuid, i.kind) for i in plan.items] == [
        ("d", "updated"),
        ("x", "expired"),
        ("z", "deleted"),
    ]
    assert [i.uuid for i in plan.todo] == ["d"]
    assert plan.early_stopped == []


def test_rows_without_uuid_are_skipped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    broken = row("", day(9), title="no id here")
    with caplog.at_level(logging.WARNING, logger="pplx_export"):
        plan = make_plan([broken, row("a", day(1))], {})
    assert [i.uuid for i in plan.items] == ["a"]
    assert plan.skipped == ["no id here"]
    assert "no id here" in caplog.text
    assert plan_to_json(plan)["skipped_no_uuid"] == ["no id here"]


def test_duplicate_rows_are_planned_once() -> None:
    plan = make_plan([row("a", day(2)), row("a", day(9))], {})
    assert [(i.uuid, i.last_updated) for i in plan.items] == [("a", day(9))]


def test_make_plan_does_not_touch_its_inputs() -> None:
    rows = [row("b", day(1)), row("a", day(2))]
    state = {"b": ok(day(1))}
    before = copy.deepcopy((rows, state))
    make_plan(rows, state, force=True, limit=1, mode="search", since="2040-01-01")
    assert (rows, state) == before


# ------------------------------------------------------------------ filters


@pytest.mark.parametrize(
    ("kwargs", "mode", "matches"),
    [
        ({"search_mode": "RESEARCH", "mode": "SEARCH"}, "deep-research", True),
        ({"search_mode": "RESEARCH", "mode": "SEARCH"}, "search", False),
        ({"search_mode": "studio"}, "search", True),  # compared upper-cased
        ({"search_mode": "ASI", "mode": "SEARCH"}, "computer", True),
        ({"search_mode": "AGENTIC_RESEARCH"}, "council", True),
        ({"search_mode": "STUDY", "model": "pplx_alpha"}, "deep-research", False),
        ({"model": "pplx_alpha"}, "deep-research", True),
        ({"model": "pplx_agentic_research"}, "council", True),
        ({"model": "pplx_study"}, "study", True),
        ({"model": "pplx_study"}, "search", False),  # a study row is study, not search
        ({"model": "turbo", "mode": "copilot"}, "search", True),  # REST UI modes (§9.3)
        ({"model": "pplx_alpha", "mode": "copilot"}, "deep-research", True),
        ({"model": "PPLX_ASI", "mode": "asi"}, "computer", True),
        ({"model": "PPLX_ASI", "mode": "asi"}, "search", False),
        ({"mode": "concise"}, "search", True),
        ({"model": "pplx_asi_opus"}, "computer", True),  # a computer model is computer
        ({"mode": "COMPUTER"}, "computer", True),
        ({"mode": "ASI"}, "computer", True),
        ({"mode": "COMPUTER"}, "search", False),
        ({"mode": "LABS"}, "labs", True),  # any other value: listing mode, case-insensitive
        ({"search_mode": "SOMETHING_NEW", "model": "pplx_study"}, "study", True),
    ],
)
def test_row_matches_mode(kwargs: dict[str, str], mode: str, matches: bool) -> None:
    assert row_matches_mode(row("a", day(1), **kwargs), mode) is matches


def test_mode_filter_applies_before_the_plan() -> None:
    rows = [
        row("r", day(9), model="pplx_alpha"),
        row("c", day(8), mode="COMPUTER"),
        row("s", day(7), search_mode="RESEARCH"),
    ]
    plan = make_plan(rows, {}, mode="deep-research")
    assert [i.uuid for i in plan.todo] == ["r", "s"]
    assert plan.counts["filtered_out"] == 1


def test_since_keeps_rows_updated_on_or_after_the_date() -> None:
    rows = [
        row("late", "2040-03-02T00:00:00.000001Z"),
        row("edge", "2040-03-02T00:00:00Z"),
        row("early", "2040-03-01T23:59:59.999999Z"),
        row("junk", "not a date"),
    ]
    plan = make_plan(rows, {}, since="2040-03-02")
    assert [i.uuid for i in plan.todo] == ["late", "edge"]
    assert plan.counts["filtered_out"] == 2
    timed = make_plan(rows, {}, since="2040-03-02T00:00:00.000001Z")
    assert [i.uuid for i in timed.todo] == ["late"]
    assert [i.uuid for i in make_plan(rows, {}, since="2040-03-01T12:00:00Z").todo] == [
        "late",
        "edge",
        "early",
    ]


def test_since_rejects_garbage() -> None:
    with pytest.raises(ValueError, match="not a date"):
        parse_since("last tuesday")


def test_limit_applies_to_work_items_only() -> None:
    rows = [row("a", day(9)), row("d", day(8)), row("b", day(7)), row("c", day(6))]
    plan = make_plan(rows, {"d": ok(day(8))}, limit=2)
    assert [i.uuid for i in plan.todo] == ["a", "b"]
    assert plan.counts["deferred"] == 1
    assert plan.counts["done"] == 1
    assert make_plan(rows, {}, limit=0).todo == []


def test_plan_to_json_is_serialisable_and_complete() -> None:
    rows = [row("a", day(9), title="Ünïcode [x]"), row("d", day(8))]
    doc = plan_to_json(make_plan(rows, {"d": ok(day(8))}))
    assert json.loads(json.dumps(doc)) == doc
    assert doc["counts"] == {
        "new": 1,
        "updated": 0,
        "done": 0,
        "expired": 0,
        "deleted": 0,
        "early_stopped": 1,
        "deferred": 0,
        "filtered_out": 0,
        "skipped_no_uuid": 0,
    }
    assert doc["todo"] == [
        {
            "uuid": "a",
            "title": "Ünïcode [x]",
            "lastUpdated": day(9),
            "kind": "new",
            "previous": "",
            "mode": "search",
            "dir": "search/2040-03-09_Ünïcode-x_a",
        }
    ]
