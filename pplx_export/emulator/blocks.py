"""Which `supported_block_use_cases` value a block needs (protocol §2.4, §2.12, §9.7).

A schematized thread request lists the use cases the client can show; the platform leaves
out the blocks of every other use case (the browser's 28-29 values bring back blocks the
earlier tool's 8 hid). The emulator does the same, so a client that asks for too little
loses blocks here too. The mapping is ours (docs/emulator.md, "Block use cases"):

* a markdown block (`ask_text`, `ask_text_0_markdown`, ...)   -> `markdown`
* `workflow_root` (workflow_block)                             -> `workflow_steps`
* `media_items` (media_block)                                  -> `media_items`
* media between the answer's blocks (`ask_text_1_images`)      -> `inline_images`
* an answer mode (`sources_answer_mode`, `image_answer_mode`,
  `video_answer_mode`, `shopping_mode`, `maps_mode`)           -> `answer_modes`
* a usage named like a use case (`unified_assets`, `background_agents`, `knowledge_cards`,
  `inline_images`, ...)                                        -> that use case
* `plan`, `pro_search_steps`, `web_results`, `reasoning_plan` and unknown usages: no use
  case, always served. The earlier tool received plan and web-result blocks with its 8
  values (§2.4), none of which names them, and the browser's list names none of them either.

The emulator keeps its own copy of the use-case names: it must not share the client's.
"""

from __future__ import annotations

import re
from typing import Any

from pplx_export.util.lenient import as_str, dicts

JSON = dict[str, Any]

# Values seen in `supported_block_use_cases` (§2.4's 8 and §2.12's ask list).
USE_CASES: frozenset[str] = frozenset(
    [
        "answer_modes",
        "media_items",
        "knowledge_cards",
        "inline_entity_cards",
        "place_widgets",
        "finance_widgets",
        "sports_widgets",
        "news_widgets",
        "shopping_widgets",
        "jobs_widgets",
        "search_result_widgets",
        "inline_images",
        "inline_assets",
        "placeholder_cards",
        "diff_blocks",
        "inline_knowledge_cards",
        "entity_group_v2",
        "refinement_filters",
        "canvas_mode",
        "maps_preview",
        "answer_tabs",
        "price_comparison_widgets",
        "preserve_latex",
        "generic_onboarding_widgets",
        "in_context_suggestions",
        "pending_followups",
        "inline_claims",
        "unified_assets",
        "workflow_steps",
        "workflow_widgets",
        "navigation_results",
        "background_agents",
        "asset_diff_assets",
        "write_delta",
        "bash_delta",
        "run_subagent_delta",
        "markdown",
    ]
)

_MARKDOWN_USAGE = re.compile(r"^ask_text(_\d+_markdown)?$")
# The media an answer shows between its Markdown blocks (a generated chart).
_INLINE_IMAGES_USAGE = re.compile(r"^ask_text_\d+_images$")
_ANSWER_MODES = frozenset(
    ("sources_answer_mode", "image_answer_mode", "video_answer_mode", "shopping_mode", "maps_mode")
)
_BY_USAGE = {"workflow_root": "workflow_steps", "media_items": "media_items"}
# Block kinds whose usage is missing or unfamiliar.
_BY_KIND = {
    "markdown_block": "markdown",
    "workflow_block": "workflow_steps",
    "media_block": "media_items",
    "sources_mode_block": "answer_modes",
    "image_mode_block": "answer_modes",
    "unified_assets_block": "unified_assets",
}


def use_case_of(block: JSON) -> str:
    """The use case a request must list to receive this block; "" when none gates it."""
    usage = as_str(block.get("intended_usage"))
    if _MARKDOWN_USAGE.match(usage):
        return "markdown"
    if _INLINE_IMAGES_USAGE.match(usage):
        return "inline_images"
    if usage in _ANSWER_MODES:
        return "answer_modes"
    if usage in _BY_USAGE:
        return _BY_USAGE[usage]
    if usage in USE_CASES:
        return usage
    for kind, case in _BY_KIND.items():
        if kind in block:
            return case
    return ""


def withhold(page: JSON, requested: set[str]) -> None:
    """In place, on a served (already copied) schematized page: drop every block whose use
    case is not in `requested`, from main and background entries."""
    for entry in dicts(page.get("entries")) + dicts(page.get("background_entries")):
        blocks = entry.get("blocks")
        if isinstance(blocks, list):
            entry["blocks"] = [
                b for b in blocks if not isinstance(b, dict) or use_case_of(b) in ("", *requested)
            ]
