"""Mode vocabulary shared by thread-level detection and index-level filtering (protocol.md §4)."""

from __future__ import annotations

# Entry `search_mode`, compared upper-cased.
SEARCH_MODE_MAP: dict[str, str] = {
    "ASI": "computer",
    "AGENTIC_RESEARCH": "council",
    "STUDY": "study",
    "RESEARCH": "deep-research",
    "SEARCH": "search",
    "STUDIO": "search",  # labs pplx_beta; the UI groups it under search
}

# Entry `display_model`, exact match. `pplx_alpha` is deliberately absent: it is the
# RESEARCH model (the thing being detected), not evidence of it. `pplx_asi` is absent too.
DISPLAY_MODEL_MODE: dict[str, str] = {
    "pplx_agentic_research": "council",
    "pplx_asi_opus": "computer",
    "pplx_asi_opus_thinking": "computer",
    "pplx_study": "study",
}

# Highest first: when signals disagree, the most specific mode wins.
SPECIFICITY: tuple[str, ...] = ("computer", "council", "study", "deep-research", "search")

# Modes whose threads need the schematized (blocks) fetch.
BLOCK_MODES = frozenset({"computer", "deep-research", "council", "study"})
# Modes rendered from workflow blocks (wf_block / stub / appendix attached).
WORKFLOW_MODES = frozenset({"computer", "council"})


def most_specific(modes: set[str] | list[str]) -> str:
    for mode in SPECIFICITY:
        if mode in modes:
            return mode
    return ""
