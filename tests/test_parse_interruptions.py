"""§5.7 classification + registry, §5.8 answer variants."""

from __future__ import annotations

from typing import Any

import pytest

from pplx_export.models import AppendixItem, SubAgent, Turn, TurnMeta
from pplx_export.parse import build_registry, classify
from pplx_export.parse.variants import find_variants, is_variant

LIMIT = "spending_limit_exceeded"


@pytest.mark.parametrize(
    ("status", "locked", "kind"),
    [
        ("", LIMIT, "completed"),
        (None, None, "completed"),
        ("COMPLETED", None, "completed"),
        ("workflow_completed", LIMIT, "completed"),
        ("WORKFLOW_AWAITING_NEXT_STEPS", LIMIT, "limit_interrupted"),
        ("WORKFLOW_AWAITING_NEXT_STEPS", None, "awaiting"),
        ("WORKFLOW_AWAITING_NEXT_STEPS", "other_reason", "awaiting"),
        ("WORKFLOW_CANCELED", LIMIT, "canceled"),
        ("WORKFLOW_IN_PROGRESS", None, "other"),
    ],
)
def test_classify(status: str | None, locked: str | None, kind: str) -> None:
    assert classify(status, locked) == kind


def test_registry_order_locations_and_headlines() -> None:
    sub_ok = SubAgent("toolu_1", headline="ok", status="WORKFLOW_COMPLETED")
    sub_cut = SubAgent(
        "toolu_2", headline="cut", status="WORKFLOW_AWAITING_NEXT_STEPS", locked_reason=LIMIT
    )
    council = SubAgent("gpt", status="WORKFLOW_CANCELED", is_council=True)
    turns = [
        Turn(
            index=1,
            query="q" * 100,
            metadata=TurnMeta(wf_status="WORKFLOW_AWAITING_NEXT_STEPS", locked_reason=LIMIT),
            sub_agents=[sub_ok, sub_cut, council],
        ),
        Turn(
            index=2,
            metadata=TurnMeta(locked_reason=LIMIT),
            stub_wfs=[
                {"headline": "s1", "status": "WORKFLOW_AWAITING_NEXT_STEPS"},
                {"headline": "s2", "status": "WORKFLOW_COMPLETED"},
            ],
        ),
        Turn(index=3, metadata=TurnMeta(wf_status="WORKFLOW_CANCELED")),
    ]
    appendix = [
        AppendixItem(wp={"headline": "a", "status": "WORKFLOW_COMPLETED"}),
        AppendixItem(wp={"status": "X"}, locked_reason=LIMIT),
    ]
    out = [i.to_json() for i in build_registry(turns, appendix)]
    assert out == [
        {
            "location": "turn_0001",
            "kind": "limit_interrupted",
            "headline": "q" * 80,
            "status": "WORKFLOW_AWAITING_NEXT_STEPS",
        },
        {
            "location": "turn_0001/subagent",
            "kind": "limit_interrupted",
            "headline": "cut",
            "status": "WORKFLOW_AWAITING_NEXT_STEPS",
        },
        {
            "location": "turn_0002/subagent_stub",
            "kind": "limit_interrupted",
            "headline": "s1",
            "status": "WORKFLOW_AWAITING_NEXT_STEPS",
        },
        {
            "location": "turn_0003",
            "kind": "canceled",
            "headline": "",
            "status": "WORKFLOW_CANCELED",
        },
        {
            "location": "background_unassigned",
            "kind": "completed",
            "headline": "a",
            "status": "WORKFLOW_COMPLETED",
        },
        {"location": "background_unassigned", "kind": "other", "headline": "", "status": "X"},
    ]
    assert build_registry([Turn(index=1)], []) == []


def meta(**kw: Any) -> dict[str, Any]:
    return {"sibling_uuid": "sib", "selection_status": "", "experiment_role": "", **kw}


@pytest.mark.parametrize(
    ("value", "hit"),
    [
        (meta(selection_status="SELECTED", experiment_role="[control]x"), True),
        (meta(selection_status="SELECTION_STATUS_UNSPECIFIED", experiment_role="override-x"), True),
        (meta(), True),  # empty role counts as "not control"
        (
            meta(
                selection_status="SELECTION_STATUS_UNSPECIFIED", experiment_role="[control]default"
            ),
            False,
        ),
        (meta(experiment_role="[control]default"), False),
        (meta(sibling_uuid="", selection_status="SELECTED"), False),
        (None, False),
        ("text", False),
    ],
)
def test_variant_criterion(value: Any, hit: bool) -> None:
    assert is_variant(value) is hit


def test_variant_record_fields() -> None:
    entry = {
        "uuid": "e1",
        "updated_datetime": "2035-01-01T00:00:00",
        "side_by_side_metadata": meta(
            selection_status="SELECTED",
            experiment_override={},
            decided_at="t1",
            sibling_uuid="s",
            latency_us=5,
            execution_log={},
        ),
    }
    (record,) = find_variants([entry, {"side_by_side_metadata": None}, "junk"])
    assert record == {
        "entry_uuid": "e1",
        "sibling_uuid": "s",
        "selection_status": "SELECTED",
        "experiment_role": "",
        "decided_at": "t1",
        "latency_us": 5,
        "entry_updated": "2035-01-01T00:00:00",
    }


def test_variant_log_line() -> None:
    from pplx_export.parse.variants import variant_log_line

    record = {
        "entry_uuid": "e1",
        "sibling_uuid": "s1",
        "selection_status": "",
        "experiment_role": "r",
    }
    line = variant_log_line("abcdef012345", 'A "quoted" title', record, "see docs")
    assert line == (
        'ANSWER_VARIANT_DETECTED thread=abcdef012345 uuid8=abcdef01 title="A \\"quoted\\" title" '
        "entry=e1 sibling=s1 selection_status=UNSPECIFIED experiment_role=r | see docs"
    )
