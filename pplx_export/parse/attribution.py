"""Sub-agent attribution waterfall (protocol.md §5.6): anchored -> stub window -> appendix.

Invariant: every top-level background payload lands in exactly one place. Times are compared
as aware UTC datetimes (naive payload values are UTC), so mixed inputs never raise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pplx_export.models import AppendixItem, Turn
from pplx_export.parse.workflow import (
    BlockWalks,
    count_wf_steps,
    top_level_payloads,
    workflow_blocks,
)
from pplx_export.util.lenient import as_str, dicts
from pplx_export.util.timefmt import from_us, parse_iso

STUB_WINDOW_S = 10.0
STUB_TRIGGER = "subagent_result"


@dataclass
class Attribution:
    anchored: set[str] = field(default_factory=set)
    stub_wfs: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # turn index -> wps
    appendix: list[AppendixItem] = field(default_factory=list)
    stub_turns: set[int] = field(default_factory=set)  # indexes of stub turns


def anchored_ids(main_entries: list[Any], walks: BlockWalks | None = None) -> set[str]:
    """Ids of every workflow payload in the main entries' blocks, searched recursively."""
    walks = walks or BlockWalks()
    out: set[str] = set()
    for entry in dicts(main_entries):
        for wf in workflow_blocks(entry):
            for ws in walks(wf):
                for wp in ws.payloads:
                    wid = as_str(wp.get("id"))
                    if wid:
                        out.add(wid)
    return out


def is_stub_entry(entry: dict[str, Any], plain_trigger: Any = None) -> bool:
    """§5.6: trigger `subagent_result` and no workflow step in any block.

    The trigger is read from the schematized entry; its plain twin's value stands in only
    when the schematized entry carries none.
    """
    trigger = entry.get("trigger") or plain_trigger
    return trigger == STUB_TRIGGER and count_wf_steps(entry) == 0


def _bg_updated(bg: dict[str, Any]) -> str:
    return as_str(bg.get("entry_updated_datetime")) or as_str(bg.get("updated_datetime"))


def _effective_time(wp: dict[str, Any], bg: dict[str, Any]) -> Any:
    for value in (
        wp.get("completed_at"),
        bg.get("entry_updated_datetime"),
        bg.get("updated_datetime"),
    ):
        moment = parse_iso(value)
        if moment is not None:
            return moment
    return None


def attribute(
    turns: list[Turn],
    main_entries: list[Any],
    bg_entries: list[Any],
    plain_entries: list[Any] | None = None,
    walks: BlockWalks | None = None,
) -> Attribution:
    """Run the waterfall. `turns` are sorted and indexed; schematized entries pair by uuid."""
    result = Attribution(anchored=anchored_ids(main_entries, walks))
    by_uuid = {as_str(e.get("uuid")): e for e in dicts(main_entries) if as_str(e.get("uuid"))}
    triggers = {as_str(e.get("uuid")): e.get("trigger") for e in dicts(plain_entries)}
    stubs = []
    for turn in turns:
        entry = by_uuid.get(turn.uuid)
        if entry is None or not is_stub_entry(entry, triggers.get(turn.uuid)):
            continue
        moment = from_us(turn.created_us)
        if moment is not None:
            result.stub_turns.add(turn.index)
            stubs.append((turn.index, moment))

    # Every top-level payload not anchored is a candidate for ② or goes to ③.
    remaining: list[tuple[int, dict[str, Any], dict[str, Any]]] = []
    for bg in dicts(bg_entries):
        for wp in top_level_payloads(bg):
            wid = as_str(wp.get("id"))
            if wid and wid in result.anchored:
                continue
            remaining.append((len(remaining), wp, bg))

    pairs = []
    for key, wp, bg in remaining:
        if not as_str(wp.get("id")):
            continue
        moment = _effective_time(wp, bg)
        if moment is None:
            continue
        for turn_index, stub_time in stubs:
            delta = abs((stub_time - moment).total_seconds())
            if delta <= STUB_WINDOW_S:
                pairs.append((delta, turn_index, key))
    pairs.sort(key=lambda p: p[0])
    used: set[int] = set()
    for _delta, turn_index, key in pairs:
        if key in used:
            continue
        used.add(key)
        result.stub_wfs.setdefault(turn_index, []).append(remaining[key][1])

    for key, wp, bg in remaining:
        if key in used:
            continue
        # §5.6 ③ only lists payloads with an id; an id-less one could land nowhere else, so
        # it is kept here too rather than silently lost.
        result.appendix.append(
            AppendixItem(
                wp=wp,
                locked_reason=as_str(bg.get("locked_reason")),
                updated=_bg_updated(bg),
                bg_uuid=as_str(bg.get("uuid")),
            )
        )
    return result
