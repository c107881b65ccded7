"""§5.6 waterfall: anchored -> 10 s stub window -> appendix, incl. a property test."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pplx_export.parse import parse_thread
from pplx_export.parse.attribution import anchored_ids
from pplx_export.util.timefmt import parse_iso

T0 = datetime(2035, 12, 26, 0, 0, 0, tzinfo=UTC)


def us(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000)


def wp(
    wid: str, completed: str = "", status: str = "WORKFLOW_COMPLETED", **extra: Any
) -> dict[str, Any]:
    return {
        "id": wid,
        "headline": f"run {wid}",
        "status": status,
        "completed_at": completed,
        "steps": [],
        **extra,
    }


def wf_entry(uuid: str, payloads: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    steps = [
        {
            "id": f"{p.get('id')}:workflow",
            "items": [{"type": "WORKFLOW_ITEM_WORKFLOW", "payload": {"workflow_payload": p}}],
        }
        for p in payloads
    ]
    return {
        "uuid": uuid,
        "blocks": [
            {
                "intended_usage": "workflow_root",
                "workflow_block": {"status": "WORKFLOW_COMPLETED", "steps": steps},
            }
        ],
        **extra,
    }


def thread(
    turns: list[tuple[str, int | None, bool]],
    main_payloads: dict[str, list[dict[str, Any]]],
    bgs: list[dict[str, Any]],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """turns: (uuid, created_us, is_stub_trigger); main_payloads: uuid -> anchored payloads."""
    plain_entries: list[dict[str, Any]] = []
    sch_entries: list[dict[str, Any]] = []
    for uuid, created, stub in turns:
        trigger = "subagent_result" if stub else None
        plain_entries.append(
            {
                "uuid": uuid,
                "created_us": created,
                "text": "[]",
                "trigger": trigger,
                "search_mode": "ASI",
                "thread_url_slug": "t-1",
            }
        )
        if stub:
            sch_entries.append({"uuid": uuid, "trigger": trigger, "blocks": []})
        else:
            sch_entries.append(wf_entry(uuid, main_payloads.get(uuid, [])))
    plain = {"thread_metadata": {}, "entries": plain_entries, "background_entries": []}
    return plain, {"thread_metadata": {}, "entries": sch_entries, "background_entries": bgs}


def test_appendix_c_worked_example() -> None:
    anchor = wp("toolu_A", "2035-12-25T23:59:55.5Z", objective_chunks=["do A"])
    plain, blocks = thread(
        [("e1", us(T0 - timedelta(seconds=25.8)), False), ("e2", us(T0), True)],
        {"e1": [anchor]},
        [
            wf_entry("bgA", [wp("toolu_A", "2035-12-25T23:59:55.5+00:00")], is_background=True),
            wf_entry("bgB", [wp("toolu_B", "2035-12-25T23:59:59.5+00:00")], is_background=True),
            wf_entry("bgC", [wp("toolu_C", "2035-12-25T23:49:59Z")], is_background=True),
        ],
    )
    conv = parse_thread(plain, blocks)
    assert conv.mode == "computer"
    assert [s.sub_id for s in conv.turns[0].sub_agents] == ["toolu_A"]
    assert conv.turns[1].is_stub and [p["id"] for p in conv.turns[1].stub_wfs] == ["toolu_B"]
    assert [i.wp["id"] for i in conv.appendix] == ["toolu_C"]
    assert [i.to_json() for i in conv.interruptions] == [
        {
            "location": "background_unassigned",
            "kind": "completed",
            "headline": "run toolu_C",
            "status": "WORKFLOW_COMPLETED",
        }
    ]


def test_window_boundary_is_inclusive() -> None:
    plain, blocks = thread(
        [("s", us(T0), True)],
        {},
        [
            wf_entry("b1", [wp("in", (T0 - timedelta(seconds=10)).isoformat())]),
            wf_entry("b2", [wp("out", (T0 + timedelta(seconds=10, milliseconds=1)).isoformat())]),
        ],
    )
    conv = parse_thread(plain, blocks, {"mode": "ASI"})
    assert [p["id"] for p in conv.turns[0].stub_wfs] == ["in"]
    assert [i.wp["id"] for i in conv.appendix] == ["out"]


def test_closest_stub_wins_and_one_stub_collects_several() -> None:
    plain, blocks = thread(
        [("s1", us(T0), True), ("s2", us(T0 + timedelta(seconds=8)), True)],
        {},
        [
            wf_entry(
                "b1",
                [
                    wp("near1", (T0 + timedelta(seconds=1)).isoformat()),
                    wp("near2", (T0 - timedelta(seconds=2)).isoformat()),
                ],
            ),
            wf_entry("b2", [wp("mid", (T0 + timedelta(seconds=6)).isoformat())]),  # 6 s vs 2 s
        ],
    )
    conv = parse_thread(plain, blocks, {"mode": "ASI"})
    assert [p["id"] for p in conv.turns[0].stub_wfs] == ["near1", "near2"]
    assert [p["id"] for p in conv.turns[1].stub_wfs] == ["mid"]
    assert conv.appendix == []


def test_naive_aware_and_compact_offsets_compare_without_crashing() -> None:
    naive = (T0 + timedelta(seconds=3)).replace(tzinfo=None).isoformat()
    compact = (T0 - timedelta(seconds=4)).strftime("%Y-%m-%dT%H:%M:%S.%f+0000")
    plain, blocks = thread(
        [("s", us(T0), True)],
        {},
        [
            wf_entry("b1", [wp("naive", naive)]),
            wf_entry("b2", [wp("compact", "")], entry_updated_datetime=compact),
            wf_entry(
                "b3",
                [wp("fallback", "garbage")],
                entry_updated_datetime="bad",
                updated_datetime=naive,
            ),
            wf_entry("b4", [wp("untimed", "")]),
            wf_entry(
                "b5", [wp("", (T0).isoformat())]
            ),  # id-less: never a candidate, kept in appendix
        ],
    )
    conv = parse_thread(plain, blocks, {"mode": "ASI"})
    assert sorted(p["id"] for p in conv.turns[0].stub_wfs) == ["compact", "fallback", "naive"]
    assert [i.wp["id"] for i in conv.appendix] == ["untimed", ""]
    assert parse_iso("2035-12-26T00:00:00") == parse_iso("2035-12-26T00:00:00Z") == T0


def test_stub_needs_trigger_no_workflow_steps_and_created_us() -> None:
    plain, blocks = thread(
        [("busy", us(T0), False), ("nots", None, True)],
        {"busy": [wp("toolu_X", "", objective_chunks=["x"])]},
        [wf_entry("b", [wp("late", T0.isoformat())])],
    )
    blocks["entries"][0]["trigger"] = "subagent_result"  # has steps -> not a stub
    conv = parse_thread(plain, blocks, {"mode": "ASI"})
    assert [t.is_stub for t in conv.turns] == [False, False]
    assert [i.wp["id"] for i in conv.appendix] == ["late"]


def test_anchored_ids_are_found_recursively_and_cycles_terminate() -> None:
    inner = wp("deep")
    middle = wp("mid", steps=[{"items": [{"payload": {"workflow_payload": inner}}]}])
    # The same id nested inside itself: the walk must stop.
    loop: dict[str, Any] = wp("loop")
    loop["steps"] = [
        {
            "items": [
                {
                    "payload": {
                        "workflow_payload": wp(
                            "loop", steps=[{"items": [{"payload": {"workflow_payload": middle}}]}]
                        )
                    }
                }
            ]
        }
    ]
    ids = anchored_ids([wf_entry("e", [loop]), "junk"])
    assert ids == {"loop"}  # the repeated id is not descended into
    assert anchored_ids([wf_entry("e", [middle])]) == {"mid", "deep"}


# ------------------------------------------------------------------ property: exactly once

TIME = st.one_of(
    st.none(),
    st.just(""),
    st.just("not a time"),
    st.integers(-30, 30).map(lambda s: (T0 + timedelta(seconds=s)).isoformat()),
    st.integers(-30, 30).map(
        lambda s: (T0 + timedelta(seconds=s)).replace(tzinfo=None).isoformat()
    ),
    st.integers(-30, 30).map(
        lambda s: (T0 + timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%S.%f+0000")
    ),
    st.integers(-30, 30).map(lambda s: (T0 + timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%SZ")),
)
IDS = st.sampled_from(["", "toolu_a", "toolu_b", "toolu_c", "toolu_d", "toolu_e"])


@st.composite
def threads(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    n_turns = draw(st.integers(1, 4))
    turns = []
    main: dict[str, list[dict[str, Any]]] = {}
    for i in range(n_turns):
        created = draw(
            st.one_of(st.none(), st.integers(-20, 20).map(lambda s: us(T0 + timedelta(seconds=s))))
        )
        stub = draw(st.booleans())
        turns.append((f"e{i}", created, stub))
        if not stub:
            main[f"e{i}"] = [
                wp(wid, objective_chunks=["go"]) for wid in draw(st.lists(IDS, max_size=2)) if wid
            ]
    bgs = []
    for j in range(draw(st.integers(0, 5))):
        payloads = [
            wp(wid, draw(TIME) or "") for wid in draw(st.lists(IDS, min_size=1, max_size=3))
        ]
        extra = {
            "entry_updated_datetime": draw(TIME),
            "updated_datetime": draw(TIME),
            "locked_reason": draw(st.sampled_from([None, "spending_limit_exceeded"])),
        }
        bgs.append(wf_entry(f"bg{j}", payloads, **extra))
    return thread(turns, main, bgs)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(threads())
def test_every_top_level_background_payload_lands_in_exactly_one_place(
    data: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    plain, blocks = data
    snapshot = json.dumps(blocks, sort_keys=True)
    conv = parse_thread(plain, blocks, {"mode": "ASI"})
    anchored = anchored_ids(blocks["entries"])
    stubbed = [id(p) for t in conv.turns for p in t.stub_wfs]
    appendix = [id(i.wp) for i in conv.appendix]
    for bg in blocks["background_entries"]:
        for step in bg["blocks"][0]["workflow_block"]["steps"]:
            payload = step["items"][0]["payload"]["workflow_payload"]
            places = (
                (payload["id"] in anchored)
                + stubbed.count(id(payload))
                + appendix.count(id(payload))
            )
            assert places == 1, payload
    assert len(conv.interruptions) >= len(conv.appendix)
    assert json.dumps(blocks, sort_keys=True) == snapshot  # the parser never mutates its input


def test_plain_trigger_stands_in_when_the_schematized_entry_has_none() -> None:
    plain, blocks = thread([("s", us(T0), True)], {}, [wf_entry("b", [wp("x", T0.isoformat())])])
    del blocks["entries"][0]["trigger"]
    conv = parse_thread(plain, blocks, {"mode": "ASI"})
    assert conv.turns[0].is_stub and [p["id"] for p in conv.turns[0].stub_wfs] == ["x"]
    plain["entries"][0]["trigger"] = None
    assert parse_thread(plain, blocks, {"mode": "ASI"}).turns[0].is_stub is False
