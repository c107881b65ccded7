"""Every fixture thread parses into the Conversation its scenario describes."""

from __future__ import annotations

import re

import pytest

from pplx_export.models import MODES
from tests.parse_support import FIXTURES, fixture, load_dir, thread_dirs

# slug part -> (mode, turns, sources, sub-agents, stub payloads, appendix, interruptions)
EXPECTED = {
    "How-do-Rust-lifetimes-work": ("search", 2, 3, 0, 0, 0, []),
    "Heat-pump-efficiency": ("deep-research", 1, 3, 0, 0, 0, []),
    "Teach-me-Bayes": ("study", 1, 2, 0, 0, 0, []),
    "Which-database-should": ("council", 1, 4, 3, 0, 0, []),
    "Audit-the-nginx-config": ("computer", 3, 3, 0, 0, 0, []),
    "Compare-three-commuter": (
        "computer",
        4,
        0,
        2,
        2,
        2,
        [
            ("turn_0001/subagent", "canceled"),
            ("background_unassigned", "completed"),
            ("background_unassigned", "awaiting"),
        ],
    ),
    "Draft-chapter-two": (
        "computer",
        1,
        0,
        1,
        0,
        1,
        [
            ("turn_0001", "limit_interrupted"),
            ("turn_0001/subagent", "limit_interrupted"),
            ("background_unassigned", "limit_interrupted"),
        ],
    ),
    "Rename-every-photo": ("computer", 1, 0, 0, 0, 0, [("turn_0001", "canceled")]),
    "Summarise-the-meeting-notes": ("computer", 2, 0, 1, 0, 0, []),
    "Best-way-to-store-fresh-basil": ("search", 2, 0, 0, 0, 0, []),
}


def test_every_fixture_has_an_expectation_and_all_modes_are_covered() -> None:
    dirs = thread_dirs(FIXTURES)
    assert len(dirs) == len(EXPECTED)
    for path in dirs:
        assert sum(part in path.name for part in EXPECTED) == 1, path
    assert {v[0] for v in EXPECTED.values()} == set(MODES)


@pytest.mark.parametrize("slug", sorted(EXPECTED))
def test_fixture_counts(slug: str) -> None:
    mode, turns, sources, subs, stubs, appendix, interruptions = EXPECTED[slug]
    conv = fixture(slug).parse()
    assert conv.mode == mode
    assert len(conv.turns) == turns
    assert len(conv.citations) == sources
    assert len(conv.sub_agents) == subs
    assert sum(len(t.stub_wfs) for t in conv.turns) == stubs
    assert len(conv.appendix) == appendix
    assert [(i.location, i.kind) for i in conv.interruptions] == interruptions
    assert conv.warnings == [] or all(isinstance(w, str) for w in conv.warnings)


@pytest.mark.parametrize("path", thread_dirs(FIXTURES), ids=lambda p: p.name)
def test_fixture_layout_and_thread_json_agree_with_parse(path) -> None:  # type: ignore[no-untyped-def]
    thread = load_dir(path)
    tj = thread.thread_json
    author, mode = path.parts[-3], path.parts[-2]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}_[\w-]{1,40}_[0-9a-f]{8}", path.name)
    assert path.name.endswith(tj["web_uuid"][:8])
    assert list(tj)[:15] == [
        "web_uuid",
        "psc_uuid",
        "url",
        "title",
        "mode",
        "author",
        "export_via",
        "space",
        "lastUpdated",
        "threadAccess",
        "n_turns",
        "n_sources",
        "metadata",
        "report_info",
        "exported_at",
    ]
    assert (thread.blocks is None) == (mode == "search")
    conv = thread.parse()
    assert (conv.mode, conv.author) == (mode, author) == (tj["mode"], tj["author"])
    assert len(conv.turns) == tj["n_turns"]
    assert len(conv.citations) == tj["n_sources"]
    assert conv.web_uuid == tj["web_uuid"] and conv.psc_uuid == tj["psc_uuid"]
    assert conv.last_updated == tj["lastUpdated"]
    assert [i.to_json() for i in conv.interruptions] == tj.get("interruptions", [])
    assert conv.answer_variants == tj.get("answer_variants", [])
    assert (conv.space.to_json() if conv.space else None) == tj["space"]
    assert conv.metadata == tj["metadata"]
    assert conv.drift.counts == ({"step_type:READ": 1} if "nginx" in path.name else {})
