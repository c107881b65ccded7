"""One shared walk per workflow block: the same steps, payloads, anchors and ids as the
step-by-step helpers, walked once per parse."""

from __future__ import annotations

from typing import Any

from pplx_export.parse.workflow import (
    BlockWalks,
    anchor_payload,
    item_payload,
    step_sid,
    walk,
    workflow_blocks,
)
from tests.parse_support import FIXTURES, load_dir, thread_dirs


def _blocks() -> list[dict[str, Any]]:
    out = []
    for path in thread_dirs(FIXTURES):
        raw = load_dir(path).parse().raw_blocks or {}
        for entry in raw.get("entries", []) + raw.get("background_entries", []):
            out += workflow_blocks(entry)
    return out


def test_walk_agrees_with_the_step_helpers() -> None:
    blocks = _blocks()
    assert blocks
    anchors = 0
    for wf in blocks:
        walked = walk(wf)
        assert [ws.step for ws in walked if ws.top] == wf["steps"]
        for ws in walked:
            payloads = [item_payload(i) for i in ws.step.get("items", [])]
            assert ws.payloads == [wp for wp in payloads if wp is not None]
            assert ws.anchor is anchor_payload(ws.step)
            assert ws.sid == step_sid(ws.step)
            anchors += ws.anchor is not None
    assert anchors  # the fixtures launch sub-agents


def test_nested_steps_follow_their_step_and_cycles_stop() -> None:
    inner: dict[str, Any] = {"id": "p1", "steps": [{"id": "inner"}]}
    step = {"id": "outer", "items": [{"payload": {"workflow_payload": inner}}, "junk"]}
    inner["steps"].append({"id": "loop", "items": [{"payload": {"workflow_payload": inner}}]})
    walked = walk({"steps": [step, {"id": "last"}]})
    assert [ws.step["id"] for ws in walked] == ["outer", "inner", "loop", "last"]
    assert [ws.top for ws in walked] == [True, False, False, True]
    assert walked[0].items == [step["items"][0]]


def test_block_walks_walk_each_block_once() -> None:
    walks = BlockWalks()
    wf = {"steps": [{"id": "a"}]}
    assert walks(wf) is walks(wf)
    assert walks({"steps": [{"id": "a"}]}) is not walks(wf)
