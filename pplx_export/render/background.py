"""The plain step log of a background run that is rendered from its workflow payload only.

Stub-turn and appendix payloads (§5.6 ②③) come from the schematized response; the plain
background entry of the same run can hold steps and an answer the payload lacks. This finds
that entry in the raw responses kept on the Conversation and renders what is not yet shown.
"""

from __future__ import annotations

from typing import Any

from pplx_export.models import Step
from pplx_export.parse.lenient import as_dict, as_str, decode_json, dicts
from pplx_export.render.context import Ctx
from pplx_export.render.latex import norm
from pplx_export.render.steps import novel_steps, render_steps, step_from_dict
from pplx_export.render.text import details, join_blocks, model_links, squash


def _entry_uuids(ctx: Ctx, run_id: str, bg_uuid: str) -> list[str]:
    """Background entry uuids of the run: the known one, else the entry whose root workflow
    has a step for the run (`toolu_X` or `toolu_X:workflow`)."""
    if bg_uuid:
        return [bg_uuid]
    ids = {run_id, f"{run_id}:workflow"}
    out: list[str] = []
    for entry in dicts(as_dict(ctx.conv.raw_blocks).get("background_entries")):
        for block in dicts(entry.get("blocks")):
            steps = dicts(as_dict(block.get("workflow_block")).get("steps"))
            if any(as_str(s.get("id")) in ids for s in steps):
                uuid = as_str(entry.get("uuid"))
                if uuid and uuid not in out:
                    out.append(uuid)
    return out


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


def background_log(ctx: Ctx, wp: dict[str, Any], shown_md: str, bg_uuid: str = "") -> str:
    """Folded step log (and answer) of the run's plain entry, minus what `shown_md` shows."""
    steps = background_steps(ctx, as_str(wp.get("id")), bg_uuid)
    if not steps:
        return ""
    shown = squash(shown_md)
    extra = novel_steps(ctx, steps, shown)
    blocks = [render_steps(ctx, extra)] if extra else []
    answer = _final_answer(steps)
    if answer.strip() and squash(answer) not in shown:
        blocks.append(
            f"**{ctx.labels.conclusion}{ctx.labels.colon}**\n\n"
            + model_links(norm(answer.strip("\n")))
        )
    body = join_blocks(blocks)
    if not body:
        return ""
    return details(ctx.labels.step_log, body)
