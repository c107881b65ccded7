"""§4.2 mode detection, §2.4 blocks decision, §4.4 index-level helpers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pplx_export.models import Step
from pplx_export.parse import aggregate_search_mode, detect_mode, needs_blocks, row_matches_mode


def e(
    search_mode: Any = None, display_model: Any = None, steps: list[str] | None = None
) -> dict[str, Any]:
    text = json.dumps([{"step_type": s, "content": {}} for s in steps or []])
    return {"search_mode": search_mode, "display_model": display_model, "text": text}


def steps(*types: str) -> list[Step]:
    return [Step(step_type=t) for t in types]


@pytest.mark.parametrize(
    ("sm", "mode"),
    [
        ("ASI", "computer"),
        ("agentic_research", "council"),
        ("STUDY", "study"),
        ("RESEARCH", "deep-research"),
        ("SEARCH", "search"),
        ("STUDIO", "search"),
    ],
)
def test_search_mode_is_authoritative(sm: str, mode: str) -> None:
    assert detect_mode({}, None, "", [], [e(sm)]) == (mode, [])


def test_most_specific_search_mode_wins_and_switch_is_warned() -> None:
    mode, warnings = detect_mode({}, None, "", [], [e("SEARCH"), e("RESEARCH"), e("bogus")])
    assert mode == "deep-research"
    assert len(warnings) == 1 and "switched" in warnings[0]


def test_conflicting_step_and_display_model_signals_warn_but_search_mode_wins() -> None:
    mode, warnings = detect_mode(
        {"mode": "4"}, None, "", steps("COUNCIL_RESEARCH"), [e("STUDY", "pplx_agentic_research")]
    )
    assert mode == "study"
    assert len(warnings) == 2
    assert any("computer" in w for w in warnings) and any("council" in w for w in warnings)


def test_display_model_first_known_entry_then_step_mode() -> None:
    entries = [e(None, "turbo"), e(None, "pplx_study"), e(None, "pplx_asi_opus")]
    assert detect_mode({}, None, "", [], entries) == ("study", [])
    mode, warnings = detect_mode({}, None, "", steps("RESEARCH_ANSWER"), [e(None, "pplx_study")])
    assert mode == "study" and len(warnings) == 1
    # pplx_alpha and pplx_asi are deliberately not evidence.
    assert detect_mode({}, None, "", [], [e(None, "pplx_alpha"), e(None, "pplx_asi")]) == (
        "search",
        [],
    )


@pytest.mark.parametrize(
    ("metadata", "row", "url", "types", "mode"),
    [
        ({}, None, "https://www.perplexity.ai/computer/tasks/x", [], "computer"),
        ({"mode": 4}, None, "", [], "computer"),
        ({}, {"mode": "asi"}, "", [], "computer"),
        ({}, {"mode": "COMPUTER"}, "", ["COUNCIL_RESEARCH"], "computer"),
        ({}, None, "", ["RESEARCH_ANSWER", "COUNCIL_RESEARCH"], "council"),
        ({}, None, "", ["RESEARCH_ANSWER"], "deep-research"),
        ({"mode": "1"}, {"mode": "SEARCH"}, "", ["FINAL"], "search"),
    ],
)
def test_step_mode_fallbacks(
    metadata: dict[str, Any], row: Any, url: str, types: list[str], mode: str
) -> None:
    assert detect_mode(metadata, row, url, steps(*types), [e()]) == (mode, [])


def test_needs_blocks() -> None:
    def plain(*entries: dict[str, Any]) -> dict[str, Any]:
        return {"thread_metadata": {}, "entries": list(entries)}

    assert needs_blocks(plain(e("SEARCH", "turbo"))) is False
    assert needs_blocks(plain(e("SEARCH", ""))) is True  # uncertain: over-fetch
    assert needs_blocks(plain(e(None, None))) is True
    assert needs_blocks(plain(e("RESEARCH", "pplx_alpha"))) is True
    assert needs_blocks(plain(e(None, "turbo", ["RESEARCH_ANSWER"]))) is True
    assert needs_blocks(plain(e(None, "turbo")), {"mode": "ASI"}) is True
    assert needs_blocks(plain(e(None, "turbo")), None, "https://x/computer/tasks/u") is True
    assert needs_blocks("junk") is False  # type: ignore[arg-type]


def test_aggregate_search_mode_returns_raw_value() -> None:
    assert (
        aggregate_search_mode([e("search"), e("Research"), e("RESEARCH"), e("STUDIO")])
        == "Research"
    )
    assert aggregate_search_mode([e("STUDIO"), e("SEARCH")]) == "STUDIO"
    assert aggregate_search_mode([e("x"), "junk", e(None)]) == ""
    assert aggregate_search_mode([e("SEARCH"), e("ASI"), e("AGENTIC_RESEARCH")]) == "ASI"


@pytest.mark.parametrize(
    ("row", "mode", "expected"),
    [
        ({"search_mode": "RESEARCH", "displayModel": "turbo"}, "deep-research", True),
        ({"search_mode": "RESEARCH"}, "search", False),
        ({"search_mode": "studio"}, "search", True),
        ({"displayModel": "pplx_alpha", "mode": "SEARCH"}, "deep-research", True),
        ({"displayModel": "turbo", "mode": "SEARCH"}, "deep-research", False),
        ({"displayModel": "pplx_agentic_research"}, "council", True),
        ({"displayModel": "pplx_study"}, "study", True),
        ({"mode": "COMPUTER"}, "computer", True),
        ({"mode": "SEARCH"}, "computer", False),
        ({"mode": "SEARCH", "displayModel": "pplx_alpha"}, "search", False),  # deep research
        ({"mode": "copilot", "displayModel": "claude2"}, "search", True),  # REST UI modes
        ({"mode": "concise", "displayModel": "turbo"}, "search", True),
        ({"mode": "copilot", "displayModel": "pplx_alpha"}, "deep-research", True),
        ({"mode": "copilot", "displayModel": "pplx_agentic_research"}, "council", True),
        ({"mode": "copilot", "displayModel": "pplx_study"}, "study", True),
        ({"mode": "asi", "displayModel": "PPLX_ASI"}, "computer", True),
        ({"mode": "asi", "displayModel": "PPLX_ASI"}, "search", False),
        ({"mode": "copilot"}, "copilot", True),
        ({"mode": "LABS"}, "labs", True),
        ({"search_mode": "ASI"}, " Computer ", True),
        ({"search_mode": "unknown", "mode": "COMPUTER"}, "computer", True),
    ],
)
def test_row_matches_mode(row: dict[str, Any], mode: str, expected: bool) -> None:
    assert row_matches_mode(row, mode) is expected


def test_plain_mode() -> None:
    from pplx_export.parse import plain_mode

    assert plain_mode({"entries": [e("STUDY")]}) == ("study", [])
    assert plain_mode({"thread_metadata": {"mode": "4"}, "entries": []}) == ("computer", [])
    assert plain_mode([]) == ("search", [])  # type: ignore[arg-type]
