"""Parser and renderer paths that keep content on odd input (issue: nothing lost, provably).

Each test here fails if the path it covers is changed to drop content: an entry the parser
cannot read stays a (bare) turn, and a citation without a name still reaches every page.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from pplx_export.parse import thread as parse_thread_module
from pplx_export.render import render_thread
from tests.parse_support import fixture

BASIL = "Best-way-to-store-fresh-basil"
NAMELESS_URL = "https://example.org/no-name-given"


def test_an_entry_the_parser_cannot_read_is_kept_as_a_bare_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    thread = fixture(BASIL)
    entries = thread.plain["entries"]
    broken = entries[-1]["uuid"]
    real = parse_thread_module.build_turn  # type: ignore[attr-defined]  # patched where used

    def build_turn(entry: dict[str, Any], index: int) -> Any:
        if entry.get("uuid") == broken:
            raise ValueError("an odd payload")
        return real(entry, index)

    monkeypatch.setattr(parse_thread_module, "build_turn", build_turn)
    conv = thread.parse()
    assert sorted(t.uuid for t in conv.turns) == sorted(e["uuid"] for e in entries)
    assert any("kept as a bare turn" in w for w in conv.warnings)
    files = render_thread(conv)
    assert f"turns/turn_{len(entries):04d}.md" in files


def test_a_citation_without_a_name_reaches_the_turn_file_and_sources() -> None:
    thread = fixture(BASIL)
    plain = copy.deepcopy(thread.plain)
    plain["entries"][0]["sources"] = [{"url": NAMELESS_URL, "snippet": "no name here"}]
    thread.plain = plain
    files = render_thread(thread.parse())
    assert NAMELESS_URL in files["turns/turn_0001.md"]
    assert NAMELESS_URL in files["sources.md"]
    urls = [s["url"] for s in json.loads(files["sources.json"])["sources"]]
    assert NAMELESS_URL in urls
