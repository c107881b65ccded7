"""Plain steps: `entries[].text` is a JSON string holding the step list (protocol.md §3.5)."""

from __future__ import annotations

from typing import Any

from pplx_export.models import Step
from pplx_export.util.lenient import as_dict, as_str, decode_json, first, first_str

# Step types the renderer understands. Anything else is kept and counted as schema drift.
KNOWN_STEP_TYPES = frozenset(
    {
        "INITIAL_QUERY",
        "FINAL",
        "SEARCH_WEB",
        "SEARCH_RESULTS",
        "GET_URL_CONTENT",
        "ASI_TOOL_INPUT",
        "ASI_TOOL_OUTPUT",
        "THOUGHT",
        "LOAD_SKILL",
        "LOAD_SKILL_RESPONSE",
        "RESEARCH_ANSWER",
        "CODE",
        "ATTACHMENT",
        "URL_NAVIGATE",
        "CREATE_CHART",
        "GENERATE_IMAGE_RESULTS",
        "COUNCIL_RESEARCH",
        "TERMINATE",  # the last of a pro search's steps (§9.7); it carries nothing to show
    }
)


def step_from_raw(raw: dict[str, Any]) -> Step:
    """One raw step dict -> Step. Renamed keys are tolerated (`type`, `id`)."""
    content = as_dict(decode_json(raw.get("content")))
    timestamp = first_str(raw, "timestamp") or as_str(content.get("timestamp"))
    return Step(
        step_type=as_str(first(raw, "step_type", "type")),
        content=content,
        uuid=as_str(first(raw, "uuid", "id")),
        timestamp=timestamp,
        raw=raw,
    )


def decode_steps(text: Any) -> list[Step]:
    """`text` -> steps. Not a JSON array -> no steps; non-dict items are skipped."""
    return steps_of(decode_json(text))


def steps_of(decoded: Any) -> list[Step]:
    """The steps of an already decoded `text` (an object or a string has none)."""
    if not isinstance(decoded, list):
        return []
    return [step_from_raw(item) for item in decoded if isinstance(item, dict)]


def raw_step_list(text: Any) -> list[dict[str, Any]]:
    decoded = decode_json(text)
    return [s for s in decoded if isinstance(s, dict)] if isinstance(decoded, list) else []
