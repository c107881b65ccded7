"""The sub-agent map `sub_map` (protocol.md §5.5): council models or computer sub-agents."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pplx_export.models import Citation, Step, SubAgent
from pplx_export.parse.answers import text_of, wf_block_answer
from pplx_export.parse.citations import item_sources, normalise_all
from pplx_export.parse.turns import build_turn
from pplx_export.parse.workflow import (
    BlockWalks,
    item_payload,
    prompt_of,
    top_level_payloads,
    workflow_blocks,
)
from pplx_export.util.lenient import as_dict, as_list, as_str, dicts

COUNCIL_MODE = "LLM_COUNCIL"


def _queries(item: dict[str, Any]) -> list[str]:
    raw = as_list(as_dict(as_dict(item.get("payload")).get("queries_payload")).get("queries"))
    out = []
    for q in raw:
        text = as_str(as_dict(q).get("query")) if isinstance(q, dict) else as_str(q)
        if text:
            out.append(text)
    return out


def _citation_dict(c: Citation) -> dict[str, str]:
    # dataclasses.asdict(c), field for field: asdict's generic deep copy costs ten times this.
    return {
        "name": c.name,
        "url": c.url,
        "snippet": c.snippet,
        "timestamp": c.timestamp,
        "category": c.category,
    }


def council_agent(wp: dict[str, Any], ordinal: int) -> SubAgent:
    """One LLM_COUNCIL payload -> SubAgent with synthetic COUNCIL_ROUND steps."""
    model = as_str(wp.get("model"))
    sub = SubAgent(
        sub_id=model or f"council_model_{ordinal}",
        headline=as_str(wp.get("headline")) or model,
        status=as_str(wp.get("status")),
        started_at=as_str(wp.get("started_at")),
        completed_at=as_str(wp.get("completed_at")),
        is_council=True,
    )
    current: list[str] = []
    for step in dicts(wp.get("steps")):
        for item in dicts(step.get("items")):
            kind = item.get("type")
            payload = as_dict(item.get("payload"))
            if kind == "WORKFLOW_ITEM_TEXT":
                text_payload = as_dict(payload.get("text_payload"))
                text = text_of(text_payload)
                if text_payload.get("variant") == "answer" and text:
                    sub.answer = text
            elif kind == "WORKFLOW_ITEM_QUERIES":
                current = _queries(item)
            elif kind == "WORKFLOW_ITEM_SOURCES":
                found: list[Citation] = normalise_all(item_sources(item))
                sub.sources.extend(found)
                if current or found:
                    content = {"queries": current, "sources": [_citation_dict(c) for c in found]}
                    sub.steps.append(Step(step_type="COUNCIL_ROUND", content=content))
                current = []
    return sub


def council_payloads(
    wf: dict[str, Any] | None, walks: BlockWalks | None = None
) -> list[dict[str, Any]]:
    """LLM_COUNCIL payloads on the items of a block's own steps, in order."""
    if not isinstance(wf, dict):
        return []
    steps = (walks or BlockWalks())(wf)
    return [wp for ws in steps if ws.top for wp in ws.payloads if wp.get("mode") == COUNCIL_MODE]


def council_map(main_entries: list[Any], walks: BlockWalks | None = None) -> dict[str, SubAgent]:
    out: dict[str, SubAgent] = {}
    for entry in dicts(main_entries):
        for wf in workflow_blocks(entry):
            for wp in council_payloads(wf, walks):
                sub = council_agent(wp, len(out) + 1)
                out[sub.sub_id] = sub
    return out


@dataclass
class _BgRun:
    """What a schematized background entry says about its sub-agent run."""

    status: str  # the root block status: the run's true status (§3.8)
    locked_reason: str
    entry: dict[str, Any]
    payload: dict[str, Any] | None  # its top-level payload with the run id, if any


def _run_id(bg: dict[str, Any]) -> tuple[str, str]:
    """(sid, root status): the first `run_subagent` step id across the entry's blocks.

    Not in §5.5: without such a step, the first top-level payload id names the run; pairing
    on it keeps the entry's true status and steps instead of losing them.
    """
    blocks = workflow_blocks(bg)
    for wf in blocks:
        for step in dicts(wf.get("steps")):
            if step.get("tool_name") == "run_subagent" and as_str(step.get("id")):
                return as_str(step.get("id")), as_str(wf.get("status"))
    for wf in blocks:
        for step in dicts(wf.get("steps")):
            for item in dicts(step.get("items")):
                wid = as_str(as_dict(item_payload(item)).get("id"))
                if wid:
                    return wid, as_str(wf.get("status"))
    return "", ""


def _background_runs(bg_entries: list[Any]) -> dict[str, _BgRun]:
    runs: dict[str, _BgRun] = {}
    for bg in dicts(bg_entries):
        sid, status = _run_id(bg)
        if not sid or sid in runs:
            continue
        top = next((wp for wp in top_level_payloads(bg) if as_str(wp.get("id")) == sid), None)
        runs[sid] = _BgRun(status, as_str(bg.get("locked_reason")), bg, top)
    return runs


def build_sub_map(
    main_entries: list[Any],
    bg_entries: list[Any],
    bg_plain: list[Any],
    plain_main: list[Any],
    walks: BlockWalks | None = None,
) -> dict[str, SubAgent]:
    """Council first (keyed by model id); otherwise the computer sub-agents (keyed by run id)."""
    walks = walks or BlockWalks()
    council = council_map(main_entries, walks)
    if council:
        return council
    runs = _background_runs(bg_entries)
    plain_by_uuid = {as_str(e.get("uuid")): e for e in dicts(bg_plain) if as_str(e.get("uuid"))}
    main_locked = {as_str(e.get("uuid")): as_str(e.get("locked_reason")) for e in dicts(plain_main)}
    out: dict[str, SubAgent] = {}
    for entry in dicts(main_entries):
        entry_locked = as_str(entry.get("locked_reason")) or main_locked.get(
            as_str(entry.get("uuid")), ""
        )
        for wf in workflow_blocks(entry):
            for ws in walks(wf):
                wp = ws.anchor
                if wp is None:
                    continue
                sid = ws.sid
                if not sid or sid in out:
                    continue
                out[sid] = _computer_agent(
                    sid, ws.step, wp, runs.get(sid), plain_by_uuid, entry_locked
                )
    return out


def _computer_agent(
    sid: str,
    step: dict[str, Any],
    wp: dict[str, Any],
    run: _BgRun | None,
    plain_by_uuid: dict[str, dict[str, Any]],
    entry_locked: str,
) -> SubAgent:
    sub = SubAgent(
        sub_id=sid,
        headline=as_str(wp.get("headline")) or as_str(step.get("title")),
        prompt=prompt_of(wp),
        # Without a background entry the anchor copy is the only status there is (§5.5 leaves
        # it empty, which would hide an interrupted run); the launching turn's lock applies.
        status=as_str(wp.get("status")),
        locked_reason=entry_locked,
        started_at=as_str(wp.get("started_at")),
        completed_at=as_str(wp.get("completed_at")),
    )
    if run is None:
        return sub
    bg_sch, top = run.entry, run.payload
    sub.status, sub.locked_reason = run.status, run.locked_reason
    if top is not None:
        sub.prompt = sub.prompt or prompt_of(top)
        sub.started_at = as_str(top.get("started_at")) or sub.started_at
        sub.completed_at = as_str(top.get("completed_at")) or sub.completed_at
    bg = plain_by_uuid.get(as_str(bg_sch.get("uuid")), bg_sch)
    sub.thread_uuid = as_str(bg.get("backend_uuid")) or as_str(bg_sch.get("backend_uuid"))
    parsed = build_turn(bg, 0)
    sub.steps, sub.answer, sub.sources = parsed.steps, parsed.answer, parsed.citations
    if not sub.answer.strip() and top is not None:
        # Not in §5.5: the plain entry of a run that never reached FINAL has no answer, but
        # its payload may still carry an answer TEXT item; keep it rather than lose it.
        sub.answer = wf_block_answer(top)
    return sub
