"""Schema drift: unknown step types, item types, workflow statuses, block usages and step
content keys.

Nothing unknown is dropped by the parser; this pass only counts what the renderer will show
as a placeholder, so `verify` can report a platform change as a warning.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pplx_export.models import SchemaDrift, Step
from pplx_export.parse.steps import KNOWN_STEP_TYPES, raw_step_list
from pplx_export.parse.workflow import BlockWalks, workflow_blocks
from pplx_export.util.lenient import as_dict, as_str, decode_json, dicts, first

KNOWN_ITEM_TYPES = frozenset(
    {
        "WORKFLOW_ITEM_TEXT",
        "WORKFLOW_ITEM_SOURCES",
        "WORKFLOW_ITEM_QUERIES",
        "WORKFLOW_ITEM_WORKFLOW",
        "WORKFLOW_ITEM_TODO_LIST",
        "WORKFLOW_ITEM_TABLE",
        "WORKFLOW_ITEM_USER_QUESTIONS",
        "WORKFLOW_ITEM_USER_RESPONSE",
        "WORKFLOW_ITEM_CONTENT",
    }
)
KNOWN_STATUSES = frozenset(
    {"", "COMPLETED", "WORKFLOW_COMPLETED", "WORKFLOW_AWAITING_NEXT_STEPS", "WORKFLOW_CANCELED"}
)
KNOWN_USAGES = frozenset(
    {
        "plan",
        "workflow_root",
        "web_results",
        "unified_assets",
        "ask_text",
        # §9.7: read since the live captures (steps, images and videos, sources rows).
        "pro_search_steps",
        "media_items",
        "sources_answer_mode",
    }
)
# The content keys of `pro_search_steps` steps (§9.7) the step renderer knows.
KNOWN_CONTENT_KEYS = frozenset(
    {
        "content",
        "initial_query_content",
        "attachment_content",
        "search_web_content",
        "web_results_content",
        "url_navigate_content",
        "terminate_content",
    }
)
# The answer's numbered Markdown blocks, and the media blocks between them (a chart the
# answer shows inline: render/media.py places it).
_MARKDOWN_USAGE = re.compile(r"^ask_text_\d+_(?:markdown|images)$")


def _items(drift: SchemaDrift, items: Any) -> None:
    _item_dicts(drift, dicts(items))


def _item_dicts(drift: SchemaDrift, items: list[dict[str, Any]]) -> None:
    for item in items:
        kind = as_str(item.get("type"))
        if kind not in KNOWN_ITEM_TYPES:
            drift.add("item_type", kind or "(missing)")


def _blocks(drift: SchemaDrift, entry: dict[str, Any]) -> None:
    for block in dicts(entry.get("blocks")):
        usage = as_str(block.get("intended_usage"))
        if usage not in KNOWN_USAGES and not _MARKDOWN_USAGE.match(usage):
            drift.add("block_usage", usage or "(missing)")
        elif usage == "pro_search_steps":
            for step in dicts(as_dict(block.get("plan_block")).get("steps")):
                kind = as_str(step.get("step_type"))
                if kind not in KNOWN_STEP_TYPES:
                    drift.add("step_type", kind or "(missing)")
                for name in step:
                    if name.endswith("content") and name not in KNOWN_CONTENT_KEYS:
                        drift.add("step_content", name)


def _status(drift: SchemaDrift, value: Any) -> None:
    status = as_str(value).upper()
    if status not in KNOWN_STATUSES:
        drift.add("status", status)


def scan(
    plain: dict[str, Any],
    blocks: dict[str, Any] | None,
    decoded: Mapping[int, list[Step]] | None = None,
    walks: BlockWalks | None = None,
) -> SchemaDrift:
    """`decoded` maps `id(entry)` to the steps the parser already decoded from that plain
    entry's `text` (the same values `raw_step_list` + `decode_json` give), so the JSON inside
    the strings is not decoded a second time; `walks` the block walks it already made."""
    drift = SchemaDrift()
    decoded = decoded or {}
    walks = walks or BlockWalks()
    for key in ("entries", "background_entries"):
        for entry in dicts(plain.get(key)):
            known = decoded.get(id(entry))
            if known is not None:
                for parsed in known:
                    if parsed.step_type not in KNOWN_STEP_TYPES:
                        drift.add("step_type", parsed.step_type or "(missing)")
                    _items(drift, parsed.content.get("workflow_items"))
                continue
            for step in raw_step_list(entry.get("text")):
                kind = as_str(first(step, "step_type", "type"))
                if kind not in KNOWN_STEP_TYPES:
                    drift.add("step_type", kind or "(missing)")
                _items(drift, as_dict(decode_json(step.get("content"))).get("workflow_items"))
    for key in ("entries", "background_entries"):
        for entry in dicts(plain.get(key)):
            _blocks(drift, entry)  # plain entries without `text` carry blocks too (§9.1)
        for entry in dicts(as_dict(blocks).get(key)):
            _blocks(drift, entry)
            for wf in workflow_blocks(entry):
                _status(drift, wf.get("status"))
                for ws in walks(wf):
                    _status(drift, ws.step.get("status"))
                    _item_dicts(drift, ws.items)
                    for wp in ws.payloads:
                        _status(drift, wp.get("status"))
    return drift
