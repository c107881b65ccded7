"""The plain step log of a background run that is rendered from its workflow payload only.

Stub-turn and appendix payloads (§5.6 ②③) come from the schematized response; the plain
background entry of the same run can hold steps and an answer the payload lacks. This finds
that entry in the raw responses kept on the Conversation and renders what is not yet shown.
"""

from __future__ import annotations

from typing import Any

from pplx_export.models import Step
from pplx_export.render.context import Ctx
from pplx_export.render.latex import norm
from pplx_export.render.steps import novel_steps, render_steps, step_from_dict
from pplx_export.render.text import (
    details,
    join_blocks,
    model_links,
    one_line,
    quote,
    squash,
    squashed_on_page,
    time_range,
)
from pplx_export.util.lenient import as_dict, as_str, decode_json, dicts

# Every (entry uuid, root workflow block) of the background entries, and the positions in
# that list of the roots with a step of each id.
_RootIndex = tuple[list[tuple[str, dict[str, Any]]], dict[str, set[int]]]


def _roots(ctx: Ctx, run_id: str) -> list[tuple[str, dict[str, Any]]]:
    """(entry uuid, root workflow block) of the schematized background entries whose root
    workflow has a step for the run (`toolu_X` or `toolu_X:workflow`), in entry order."""
    if not run_id:
        return []
    index: _RootIndex | None = ctx.memo.get("roots")
    if index is None:
        index = ctx.memo["roots"] = _index_roots(ctx)
    roots, by_step_id = index
    hits = by_step_id.get(run_id, set()) | by_step_id.get(f"{run_id}:workflow", set())
    return [roots[i] for i in sorted(hits)]


def _index_roots(ctx: Ctx) -> _RootIndex:
    """Built once per thread (memoised in ctx): every run looks its roots up, and a scan of
    all roots per run grows with the square of the number of runs."""
    roots: list[tuple[str, dict[str, Any]]] = []
    by_step_id: dict[str, set[int]] = {}
    for entry in dicts(as_dict(ctx.conv.raw_blocks).get("background_entries")):
        uuid = as_str(entry.get("uuid"))
        for block in dicts(entry.get("blocks")):
            wf = as_dict(block.get("workflow_block"))
            for step in dicts(wf.get("steps")):
                by_step_id.setdefault(as_str(step.get("id")), set()).add(len(roots))
            roots.append((uuid, wf))
    return roots, by_step_id


def _entry_uuids(ctx: Ctx, run_id: str, bg_uuid: str) -> list[str]:
    if bg_uuid:
        return [bg_uuid]
    out: list[str] = []
    for uuid, _ in _roots(ctx, run_id):
        if uuid and uuid not in out:
            out.append(uuid)
    return out


def background_payloads(ctx: Ctx, run_id: str) -> list[dict[str, Any]]:
    """The run's own workflow payloads in its background entry (the complete copy; the one
    in the launching turn can lag behind it)."""
    out: list[dict[str, Any]] = []
    for _, wf in _roots(ctx, run_id):
        for step in dicts(wf.get("steps")):
            for item in dicts(step.get("items")):
                wp = as_dict(as_dict(item.get("payload")).get("workflow_payload"))
                if as_str(wp.get("id")) == run_id and wp not in out:
                    out.append(wp)
    return out


def launcher_line(ctx: Ctx, run_id: str) -> str:
    """The background root's launcher step (`run_subagent`): title, tool and time."""
    parts: list[str] = []
    for _, wf in _roots(ctx, run_id):
        for step in dicts(wf.get("steps")):
            if as_str(step.get("id")) != run_id:
                continue
            title = one_line(as_str(step.get("title")))
            tool = as_str(step.get("tool_name"))
            text = " ".join(x for x in (f"`{tool}`" if tool else "", title) if x)
            text += time_range(step.get("started_at"), step.get("completed_at"))
            if text.strip() and text not in parts:
                parts.append(text)
    return quote(" · ".join(parts)) if parts else ""


def _final_answer(steps: list[Step]) -> str:
    for step in reversed(steps):
        if step.step_type == "FINAL":
            decoded = decode_json(step.content.get("answer"))
            answer = as_dict(decoded).get("answer")
            if isinstance(answer, str) and answer.strip():
                return answer
    return ""


def background_steps(ctx: Ctx, run_id: str, bg_uuid: str = "") -> list[Step]:
    sub = ctx.sub_map.get(run_id)
    if sub is not None and sub.steps:
        return sub.steps
    if not run_id and not bg_uuid:
        return []
    uuids = _entry_uuids(ctx, run_id, bg_uuid)
    steps: list[Step] = []
    for entry in dicts(as_dict(ctx.conv.raw_plain).get("background_entries")):
        if as_str(entry.get("uuid")) in uuids:
            steps += [step_from_dict(s) for s in dicts(decode_json(entry.get("text")))]
    return steps


def _shown(text: str, page: str) -> bool:
    squashed = squash(text)
    return squashed_on_page(text, squashed, page) or squashed in squash(page)


def background_log(ctx: Ctx, wp: dict[str, Any], shown_md: str, bg_uuid: str = "") -> str:
    """Folded step log (and answer) of the run's plain entry, minus what `shown_md` shows."""
    steps = background_steps(ctx, as_str(wp.get("id")), bg_uuid)
    if not steps:
        return ""
    extra = novel_steps(ctx, steps, shown_md)
    blocks = [render_steps(ctx, extra)] if extra else []
    answer = _final_answer(steps)
    if answer.strip() and not _shown(answer, shown_md):
        blocks.append(
            f"**{ctx.labels.conclusion}{ctx.labels.colon}**\n\n"
            + model_links(norm(answer.strip("\n")))
        )
    body = join_blocks(blocks)
    if not body:
        return ""
    return details(ctx.labels.step_log, body)
