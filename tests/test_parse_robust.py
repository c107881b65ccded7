"""Malformed input: a broken piece degrades only itself; nothing but SchemaError escapes."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pplx_export.errors import SchemaError
from pplx_export.parse import parse_thread
from tests.parse_support import FIXTURES, load_dir, thread_dirs

THREADS = [load_dir(p) for p in thread_dirs(FIXTURES)]
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "{not json", "[1, 2", "x" * 300_000, "[" * 5000, '{"answer": 5}', "null"]),
    st.text(max_size=30),
    # Fresh containers each draw: a shared object could be inserted into itself.
    st.builds(list),
    st.builds(dict),
    st.builds(lambda: [None, "x", 1]),
    st.builds(lambda: {"steps": "x", "items": 1, "payload": []}),
)


def containers(node: Any, out: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Every (container, key) slot of a JSON tree, JSON-in-string `text` fields included."""
    if isinstance(node, dict):
        for key, value in node.items():
            out.append((node, key))
            containers(value, out)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out.append((node, i))
            containers(value, out)
    return out


def expand_text(tree: Any) -> None:
    """Decode `text` step lists so mutations reach inside them (re-encoded by the caller)."""
    for container, key in containers(tree, []):
        if key == "text" and isinstance(container[key], str) and container[key].startswith("["):
            container[key] = {"__steps__": json.loads(container[key])}


def encode_text(tree: Any) -> None:
    for container, key in containers(tree, []):
        value = container[key]
        if key == "text" and isinstance(value, dict) and "__steps__" in value:
            container[key] = json.dumps(value["__steps__"])


@st.composite
def mutated(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any]]:
    thread = draw(st.sampled_from(THREADS))
    plain, blocks = copy.deepcopy(thread.plain), copy.deepcopy(thread.blocks)
    expand_text(plain)
    roots = [plain] if blocks is None else [plain, blocks]
    for _ in range(draw(st.integers(1, 12))):
        root = draw(st.sampled_from(roots))
        slots = containers(root, [])
        if not slots:
            break
        container, key = slots[draw(st.integers(0, len(slots) - 1))]
        if draw(st.booleans()) and isinstance(container, dict):
            del container[key]
        else:
            container[key] = draw(JUNK)
    encode_text(plain)
    return plain, blocks, thread.thread_json


@settings(
    max_examples=300,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    deadline=None,
)
@given(mutated())
def test_mutated_fixtures_never_raise_anything_but_schema_error(data: Any) -> None:
    plain, blocks, tj = data
    try:
        conv = parse_thread(plain, blocks, {"mode": tj["mode"].upper()})
    except SchemaError as err:
        assert err.path
        return
    assert conv.mode in ("search", "deep-research", "computer", "council", "study")
    assert all(isinstance(w, str) for w in conv.warnings)


def test_one_broken_entry_degrades_only_itself() -> None:
    thread = next(t for t in THREADS if "Audit-the-nginx" in t.name)
    plain = copy.deepcopy(thread.plain)
    plain["entries"][1] = "garbage"
    plain["entries"][2]["text"] = "{not json"
    conv = parse_thread(plain, thread.blocks, {"mode": "COMPUTER"})
    assert len(conv.turns) == 2
    assert conv.turns[0].answer.startswith("## Audit result")
    assert conv.turns[1].steps == [] and conv.turns[1].answer == ""
    # The wf_block of the un-decodable entry still supplies the display answer.
    assert conv.turns[1].display_answer.startswith("A reload keeps existing connections")
    assert any("entries[1]" in w for w in conv.warnings)


def test_cyclic_python_objects_and_repeated_ids_terminate() -> None:
    payload: dict[str, Any] = {"id": "", "headline": "loop", "status": "WORKFLOW_COMPLETED"}
    payload["steps"] = [
        {"items": [{"type": "WORKFLOW_ITEM_WORKFLOW", "payload": {"workflow_payload": payload}}]}
    ]
    named: dict[str, Any] = {
        "id": "toolu_loop",
        "objective_chunks": ["x"],
        "status": "WORKFLOW_COMPLETED",
    }
    named["steps"] = [
        {"items": [{"type": "WORKFLOW_ITEM_WORKFLOW", "payload": {"workflow_payload": named}}]}
    ]
    wf = {
        "status": "WORKFLOW_COMPLETED",
        "steps": payload["steps"]
        + [{"id": "toolu_loop:workflow", "items": named["steps"][0]["items"]}],
    }
    plain = {
        "thread_metadata": {"mode": "4"},
        "entries": [{"uuid": "e", "text": "[]", "thread_url_slug": "t"}],
        "background_entries": [],
    }
    blocks = {
        "entries": [
            {"uuid": "e", "blocks": [{"intended_usage": "workflow_root", "workflow_block": wf}]}
        ],
        "background_entries": [{"uuid": "b", "blocks": [{"workflow_block": wf}]}],
    }
    conv = parse_thread(plain, blocks)
    assert list(conv.sub_agents) == ["toolu_loop"]
    assert conv.appendix[0].wp is payload  # id-less top-level payload is kept, not lost


def test_huge_strings_pass_through_untruncated() -> None:
    big = "word " * 400_000
    plain = {
        "thread_metadata": {"title": big},
        "entries": [
            {
                "uuid": "e",
                "thread_url_slug": "t",
                "query_str": big,
                "text": json.dumps(
                    [{"step_type": "FINAL", "content": {"answer": json.dumps({"answer": big})}}]
                ),
                "updated_datetime": big,
            }
        ],
        "background_entries": [],
    }
    conv = parse_thread(plain)
    assert conv.turns[0].answer == big and conv.turns[0].query == big
    assert conv.title == big.strip()


@pytest.mark.parametrize("bad", [None, 5, "x", [], {"entries": None}])
def test_bad_blocks_shapes_are_tolerated(bad: Any) -> None:
    plain = {
        "thread_metadata": {"mode": "4"},
        "entries": [{"uuid": "e", "text": "[]", "thread_url_slug": "t"}],
    }
    conv = parse_thread(plain, bad)
    assert conv.mode == "computer" and len(conv.turns) == 1


def test_infinite_and_nan_numbers_are_read_as_missing() -> None:
    # JSON allows Infinity and NaN (json.loads reads them); int() of them raises.
    thread = next(t for t in THREADS if "Audit-the-nginx" in t.name)
    plain = copy.deepcopy(thread.plain)
    plain["entries"][0]["created_us"] = float("inf")
    plain["entries"][1]["updated_us"] = float("-inf")
    plain["entries"][2]["created_us"] = float("nan")
    conv = parse_thread(plain, thread.blocks, {"mode": "COMPUTER"})
    assert len(conv.turns) == 3
    assert all(t.created_us is None or isinstance(t.created_us, int) for t in conv.turns)
