"""Answer extraction (protocol.md §5.2)."""

from __future__ import annotations

from typing import Any

from pplx_export.models import Step
from pplx_export.util.lenient import as_dict, as_list, as_str, decode_json, dicts

HARVEST_MIN = 30  # FINAL fallback strings must be longer than this
PLAN_MIN = 80  # plan goal descriptions must be longer than this
_HARVEST_DEPTH = 64  # recursion guard for the string harvest


def text_of(text_payload: Any) -> str:
    """A text payload's text: `text` if non-empty, else the joined `chunks`."""
    payload = as_dict(text_payload)
    text = as_str(payload.get("text"))
    if text:
        return text
    return "".join(as_str(c) for c in as_list(payload.get("chunks")))


def _harvest(value: Any, out: list[str], depth: int = 0) -> None:
    if depth > _HARVEST_DEPTH:
        return
    if isinstance(value, str):
        if len(value) > HARVEST_MIN:
            out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _harvest(v, out, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _harvest(v, out, depth + 1)


def final_answers(steps: list[Step]) -> list[tuple[Step, Any]]:
    """Every FINAL step with its decoded `answer` JSON, in order: the answer and the turn's
    citations both read it, and it is the largest JSON string of a turn."""
    return [(s, decode_json(s.content.get("answer"))) for s in steps if s.step_type == "FINAL"]


def _final_answer(raw_answer: Any, decoded: Any) -> str | None:
    """The answer of one FINAL step (`decoded` from its raw answer), or None to keep looking
    at earlier FINALs."""
    if isinstance(decoded, dict):
        if "answer" in decoded:
            value = decoded["answer"]
            return value if isinstance(value, str) and value else None
        if "workflow_snapshots" in decoded:
            return None
        found: list[str] = []
        _harvest(decoded, found)
        return max(found, key=len) if found else None
    if isinstance(raw_answer, str) and len(raw_answer) > HARVEST_MIN:
        return raw_answer
    return None


def final_step_answer(finals: list[tuple[Step, Any]]) -> str:
    """The answer of the last FINAL step that has one (`finals`: `final_answers(steps)`)."""
    for step, decoded in reversed(finals):
        answer = _final_answer(step.content.get("answer"), decoded)
        if answer is not None:
            return answer
    return ""


def wf_block_answer(wf_block: dict[str, Any] | None) -> str:
    """Last non-blank `variant == "answer"` TEXT item among the block's own steps."""
    answer = ""
    for step in dicts(as_dict(wf_block).get("steps")):
        for item in dicts(step.get("items")):
            if item.get("type") != "WORKFLOW_ITEM_TEXT":
                continue
            payload = as_dict(as_dict(item.get("payload")).get("text_payload"))
            if payload.get("variant") != "answer":
                continue
            text = text_of(payload)
            if text.strip():
                answer = text
    return answer
