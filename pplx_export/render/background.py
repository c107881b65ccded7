"""The plain step log of a background run that is rendered from its workflow payload only.

Stub-turn and appendix payloads (§5.6 ②③) come from the schematized response; the plain
background entry of the same run can hold steps and an answer the payload lacks. The parser
finds that entry (`RunLog`, parse/views.py); this renders what is not yet shown, and the
run's launcher step and other payload copies among the background roots.
"""

from __future__ import annotations

from pplx_export.models import RunLog, WfPayload
from pplx_export.render.context import Ctx
from pplx_export.render.items import is_the_answer
from pplx_export.render.shown import Shown
from pplx_export.render.steps import novel_steps, render_steps
from pplx_export.render.text import (
    details,
    join_blocks,
    one_line,
    quote,
    time_range,
    work_md,
)


def background_payloads(ctx: Ctx, run_id: str) -> list[WfPayload]:
    """The run's own workflow payloads in its background entry (the complete copy; the one
    in the launching turn can lag behind it). Equal copies count once."""
    out: list[WfPayload] = []
    for root in ctx.conv.views.roots_of(run_id):
        for step in root.block.steps:
            for item in step.items:
                wp = item.workflow
                if wp is not None and wp.id == run_id and all(wp.raw != o.raw for o in out):
                    out.append(wp)
    return out


# The tool that starts every sub-agent: naming it under a "Sub-agent" heading says nothing.
_LAUNCHER = "run_subagent"


def launcher_line(ctx: Ctx, run_id: str, with_time: bool = True, headline: str = "") -> str:
    """The background root's launcher step (`run_subagent`): title, tool and time (left
    out with `with_time` False: the caller's status line gives it). A title equal to the
    `headline` the caller's heading already gives is left out, and so is a line that would
    then only name the ordinary launcher: every fact once."""
    parts: list[str] = []
    said = one_line(headline)
    for root in ctx.conv.views.roots_of(run_id):
        for step in root.block.steps:
            if step.id != run_id:
                continue
            title = one_line(step.title)
            title = "" if title == said else title
            tool = step.tool_name
            when = time_range(step.started_at, step.completed_at) if with_time else ""
            if not title and not when and tool in ("", _LAUNCHER):
                continue
            text = " ".join(x for x in (f"`{tool}`" if tool else "", title) if x) + when
            if text.strip() and text not in parts:
                parts.append(text)
    return quote(" · ".join(parts)) if parts else ""


def background_log(ctx: Ctx, log: RunLog, shown_md: str) -> str:
    """Folded step log (and answer) of the run's plain entry, minus what `shown_md` shows."""
    if not log.steps:
        return ""
    extra = novel_steps(ctx, log.steps, shown_md)
    blocks = [render_steps(ctx, extra)] if extra else []
    if (
        log.answer.strip()
        and not is_the_answer(ctx, log.answer)
        and log.answer not in Shown(shown_md)
    ):
        blocks.append(ctx.labels.labelled(ctx.labels.conclusion, work_md(log.answer.strip("\n"))))
    body = join_blocks(blocks)
    if not body:
        return ""
    return details(ctx.labels.step_log, body, ctx.flavor)
