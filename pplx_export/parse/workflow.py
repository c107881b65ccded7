"""Schematized workflow blocks (protocol.md §3.6-§3.8, §5.4): lookups and a guarded walk.

Blocks stay raw dicts (the renderer walks them); this module only finds things in them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pplx_export.util.lenient import as_dict, as_list, as_str, dicts

# Nested payloads are walked to this depth at most: real data nests 2-3 levels; the limit
# only exists so a pathological payload cannot exhaust the stack.
MAX_WALK_DEPTH = 32
ANSWER_SUFFIX = ":answer"
WORKFLOW_SUFFIX = ":workflow"


def workflow_blocks(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """Every `workflow_block` dict among an entry's blocks, in order."""
    out = []
    for block in dicts(entry.get("blocks")):
        wf = block.get("workflow_block")
        if isinstance(wf, dict):
            out.append(wf)
    return out


def index_wf_blocks(entries: list[Any]) -> dict[str, dict[str, Any]]:
    """Schematized entry uuid -> its workflow_block (several in one entry: the last wins)."""
    out: dict[str, dict[str, Any]] = {}
    for entry in dicts(entries):
        uuid = as_str(entry.get("uuid"))
        blocks = workflow_blocks(entry)
        if uuid and blocks:
            out[uuid] = blocks[-1]
    return out


def item_payload(item: Any) -> dict[str, Any] | None:
    """The `workflow_payload` dict of an item, if it has one (a non-empty dict)."""
    # Spelled out rather than as_dict(as_dict(as_dict(...))): every workflow walk calls this
    # for every item.
    if not isinstance(item, dict):
        return None
    payload = item.get("payload")
    if not isinstance(payload, dict):
        return None
    wp = payload.get("workflow_payload")
    return wp if isinstance(wp, dict) and wp else None


def is_anchor_payload(wp: dict[str, Any] | None) -> bool:
    if not wp:
        return False
    chunks = [c for c in as_list(wp.get("objective_chunks")) if as_str(c)]
    return bool(chunks) or bool(wp.get("is_background_anchor"))


def anchor_payload(step: dict[str, Any]) -> dict[str, Any] | None:
    """The anchor payload of a sub-agent anchor step (§3.8), or None."""
    return _first_anchor(map(item_payload, dicts(step.get("items"))))


def _first_anchor(payloads: Iterable[dict[str, Any] | None]) -> dict[str, Any] | None:
    for wp in payloads:
        if is_anchor_payload(wp):
            return wp
    return None


def is_subagent_step(step: dict[str, Any]) -> bool:
    """Rendered as a sub-agent step: run_subagent tool, subagent icon, or an anchor payload."""
    return (
        step.get("tool_name") == "run_subagent"
        or step.get("icon") == "subagent"
        or anchor_payload(step) is not None
    )


def step_sid(step: dict[str, Any]) -> str:
    """Sub-agent id of a step: the payload id, else the step id minus `:workflow`."""
    return _sid(step, map(item_payload, dicts(step.get("items"))))


def _sid(step: dict[str, Any], payloads: Iterable[dict[str, Any] | None]) -> str:
    for wp in payloads:
        if wp and as_str(wp.get("id")):
            return as_str(wp.get("id"))
    sid = as_str(step.get("id"))
    return sid[: -len(WORKFLOW_SUFFIX)] if sid.endswith(WORKFLOW_SUFFIX) else sid


def prompt_of(wp: dict[str, Any] | None) -> str:
    return "".join(as_str(c) for c in as_list(as_dict(wp).get("objective_chunks")))


@dataclass(frozen=True, slots=True)
class WalkStep:
    """A step met by `walk`, with what the parser's passes read from every step."""

    step: dict[str, Any]
    items: list[dict[str, Any]]  # the step's dict items
    payloads: list[dict[str, Any]]  # their workflow payloads (`item_payload`), in order
    top: bool  # a step of the walked block itself, not of a nested payload

    @property
    def anchor(self) -> dict[str, Any] | None:
        """`anchor_payload(step)`."""
        return _first_anchor(self.payloads)

    @property
    def sid(self) -> str:
        """`step_sid(step)`."""
        return _sid(self.step, self.payloads)


def walk(wf: dict[str, Any]) -> list[WalkStep]:
    """Every step of a workflow block/payload, nested payload steps included (depth first,
    each step before the steps of its payloads), with its items and payloads looked up once.

    The cycle guard: a payload whose id is already on the current path (or any payload past
    MAX_WALK_DEPTH) is not descended into, so repeated or self-referencing ids terminate.
    The parser's passes over a block (sub-agents, attribution, drift) share one walk
    through `BlockWalks` instead of walking the tree each.
    """
    out: list[WalkStep] = []
    _walk(wf, out, 0, frozenset())
    return out


def _walk(wf: dict[str, Any], out: list[WalkStep], depth: int, path: frozenset[str]) -> None:
    for step in dicts(wf.get("steps")):
        items = dicts(step.get("items"))
        payloads = [wp for wp in map(item_payload, items) if wp is not None]
        out.append(WalkStep(step, items, payloads, depth == 0))
        for wp in payloads:
            wid = as_str(wp.get("id"))
            if depth + 1 >= MAX_WALK_DEPTH or (wid and wid in path):
                continue
            _walk(wp, out, depth + 1, path | {wid} if wid else path)


class BlockWalks:
    """One parse's memo of `walk` per workflow block dict (the blocks are not modified
    while a thread is parsed). Not shared between threads."""

    def __init__(self) -> None:
        # id(block) -> (block, its walk); the block is kept so its id cannot be reused.
        self._done: dict[int, tuple[dict[str, Any], list[WalkStep]]] = {}

    def __call__(self, wf: dict[str, Any]) -> list[WalkStep]:
        hit = self._done.get(id(wf))
        if hit is None:
            hit = self._done[id(wf)] = (wf, walk(wf))
        return hit[1]


def iter_steps(wf: dict[str, Any], *, recursive: bool = True) -> Iterator[dict[str, Any]]:
    """Steps of a workflow block/payload; with `recursive`, nested payload steps too, in
    `walk` order."""
    if not recursive:
        return iter(dicts(wf.get("steps")))
    return (ws.step for ws in walk(wf))


def iter_payloads(wf: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every nested workflow payload under a block, recursively (cycle-guarded)."""
    return (wp for ws in walk(wf) for wp in ws.payloads)


def top_level_payloads(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """Payloads directly on items of the entry's root workflow steps (no recursion, §5.6)."""
    out = []
    for wf in workflow_blocks(entry):
        for step in dicts(wf.get("steps")):
            for item in dicts(step.get("items")):
                wp = item_payload(item)
                if wp is not None:
                    out.append(wp)
    return out


def count_wf_steps(entry: dict[str, Any]) -> int:
    return sum(len(dicts(wf.get("steps"))) for wf in workflow_blocks(entry))
