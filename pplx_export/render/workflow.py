"""Workflow blocks (computer/council): the work process and its top-level steps (§6.6)."""

from __future__ import annotations

from pplx_export.models import WfPayload, WfStep
from pplx_export.parse import interruptions
from pplx_export.render import council, subagents
from pplx_export.render.context import Ctx
from pplx_export.render.text import bold, join_blocks
from pplx_export.render.tree import drop_repeated_label, render_item, step_heading


def render_generic_step(ctx: Ctx, i: int, step: WfStep) -> str:
    body = join_blocks([render_item(ctx, item) for item in step.items])
    if not body and not step.title.strip() and not ctx.labels.tag(step.status, ctx.locked_reason):
        # Nothing under it, no title and no interruption to report (a `share_file` call
        # with no items): an empty `### Step N` heading would only break the outline.
        return ""
    heading = step_heading(ctx, i, step)
    title = heading.split(" · ", 1)[1] if " · " in heading else ""
    return join_blocks([heading, drop_repeated_label(ctx.labels, title, body)])


def render_wf_step(
    ctx: Ctx, i: int, step: WfStep, log: council.CouncilLog = council.NO_LOG, models: int = 0
) -> str:
    """One top-level workflow step: council, sub-agent, or generic. `log`: the step log's
    council entries the model folds show (render.council.split_council_log); `models`: how
    many council models the block's earlier steps showed."""
    if step.tool_name == "council_research":
        return council.render_council_step(ctx, i, step, log, models)
    if subagents.is_subagent_step(step):
        return subagents.render_subagent_step(ctx, i, step)
    return render_generic_step(ctx, i, step)


def render_wf_block(ctx: Ctx, wf: WfPayload, log: council.CouncilLog = council.NO_LOG) -> str:
    """`## Work process (N steps · STATUS · tag)` and every step of a workflow block."""
    lb = ctx.labels
    # Numbered by place in the raw list: an entry that is not a step keeps its number.
    steps = []
    models = 0
    for step in wf.steps:
        steps.append(render_wf_step(ctx, step.position, step, log, models))
        if step.tool_name == "council_research":
            models += len(council.council_payloads(step))
    # The count is of the steps shown (an empty untitled step is not).
    stat = [lb.steps_n.format(n=sum(1 for text in steps if text))]
    # A status the tag below names (completed: no tag; awaiting, canceled: the tag) is not
    # repeated as the API's constant; one it does not know is shown as it came.
    if wf.status and interruptions.classify(wf.status, ctx.locked_reason) == interruptions.OTHER:
        stat.append(wf.status)
    tag = lb.tag(wf.status, ctx.locked_reason)
    if tag:
        stat.append(tag)
    headline = wf.headline.strip()
    if not any(steps) and not headline and len(stat) == 1:
        return ""  # nothing to show: no empty "Work process (steps: 0)" section
    blocks = [f"## {lb.work_process}{lb.par(' · '.join(stat))}"]
    if headline:
        blocks.append(bold(headline))
    blocks += steps
    return join_blocks(blocks)
