"""The fixture library exercises every known step and item type; drift counts the rest;
the parse package stays pure."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pplx_export.parse import parse_thread
from pplx_export.parse.drift import KNOWN_ITEM_TYPES, scan
from pplx_export.parse.steps import KNOWN_STEP_TYPES
from pplx_export.parse.workflow import iter_steps, workflow_blocks
from tests import live_shapes
from tests.parse_support import FIXTURES, load_dir, thread_dirs


def test_fixtures_cover_every_step_and_item_type() -> None:
    step_types: set[str] = set()
    item_types: set[str] = set()
    for path in thread_dirs(FIXTURES):
        conv = load_dir(path).parse()
        for turn in conv.turns:
            step_types.update(s.step_type for s in turn.steps)
            for step in turn.steps:
                item_types.update(i.get("type") for i in step.content.get("workflow_items", []))
        blocks = conv.raw_blocks or {}
        for entry in blocks.get("entries", []) + blocks.get("background_entries", []):
            for wf in workflow_blocks(entry):
                for raw_step in iter_steps(wf):
                    item_types.update(i.get("type") for i in raw_step.get("items", []))
    # The live site's shapes (tests/live_shapes.py): a blocks-only pro search's steps.
    plain = live_shapes.pro_search()
    del plain["entries"][0]["text"]
    step_types.update(s.step_type for s in parse_thread(plain, web_uuid="x").turns[0].steps)
    assert step_types == KNOWN_STEP_TYPES | {"READ"}
    assert item_types == KNOWN_ITEM_TYPES


def test_drift_counts_unknown_vocabulary_and_keeps_the_content() -> None:
    text = json.dumps(
        [
            {"step_type": "MCP_TOOL_CALL", "content": {"x": 1}},
            {"content": {"workflow_items": [{"type": "WORKFLOW_ITEM_WIDGET"}]}},
        ]
    )
    plain = {"entries": [{"uuid": "e", "text": text, "thread_url_slug": "t", "search_mode": "ASI"}]}
    item = {"type": "WORKFLOW_ITEM_MAP", "payload": {}}
    nested = {
        "id": "n",
        "status": "WORKFLOW_PAUSED",
        "steps": [{"status": "RUNNING", "items": [item]}],
    }
    wf = {
        "status": "WORKFLOW_COMPLETED",
        "steps": [
            {"items": [{"type": "WORKFLOW_ITEM_WORKFLOW", "payload": {"workflow_payload": nested}}]}
        ],
    }
    blocks = {
        "entries": [
            {
                "uuid": "e",
                "blocks": [
                    {"intended_usage": "ask_text_3_widgets", "x": {}},
                    # Read since issue 34: a chart the answer shows inline (not drift).
                    {"intended_usage": "ask_text_4_images", "inline_entity_block": {}},
                    {"intended_usage": "workflow_root", "workflow_block": wf},
                    {},
                ],
            }
        ]
    }
    drift = scan(plain, blocks)
    assert drift.counts == {
        "step_type:MCP_TOOL_CALL": 1,
        "step_type:(missing)": 1,
        "item_type:WORKFLOW_ITEM_WIDGET": 1,
        "item_type:WORKFLOW_ITEM_MAP": 1,
        "block_usage:ask_text_3_widgets": 1,
        "block_usage:(missing)": 1,
        "status:WORKFLOW_PAUSED": 1,
        "status:RUNNING": 1,
    }
    conv = parse_thread(plain, blocks)
    assert conv.drift.counts == drift.counts
    assert [s.step_type for s in conv.turns[0].steps] == ["MCP_TOOL_CALL", ""]
    assert conv.turns[0].wf_block is wf  # raw dict kept as-is


@pytest.mark.parametrize("package", ["parse", "render"])
def test_package_is_pure(package: str) -> None:
    """No file, clock, process or network access in the pure stages (imports are checked by
    the import-linter contract in pyproject.toml)."""
    root = Path(__file__).resolve().parents[1] / "pplx_export" / package
    forbidden = re.compile(
        r"\bopen\(|\bpathlib\b|\bimport os\b|\bsocket\b|\bhttpx\b"
        r"|\.now\(|\btime\.time\b|\bsubprocess\b|\bsys\.std(?:out|err)\b"
    )
    sources = sorted(root.rglob("*.py"))
    assert sources
    for source in sources:
        assert not forbidden.search(source.read_text(encoding="utf-8")), source.name
