"""Mode detection (protocol.md §4.2-§4.4): thread level, index level, blocks decision."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pplx_export.models import Step
from pplx_export.parse.mode_tables import (
    BLOCK_MODES,
    DISPLAY_MODEL_MODE,
    SEARCH_MODE_MAP,
    SPECIFICITY,
    most_specific,
)
from pplx_export.parse.steps import decode_steps
from pplx_export.util.lenient import as_dict, as_str, dicts

COMPUTER_URL_PART = "/computer/tasks/"
COMPUTER_ROW_MODES = frozenset({"ASI", "COMPUTER"})


def row_mode(index_row: dict[str, Any] | None) -> str:
    return as_str(as_dict(index_row).get("mode")).upper()


def _step_mode(
    metadata: dict[str, Any], index_row: dict[str, Any] | None, url: str, steps: Iterable[Step]
) -> str:
    if (
        COMPUTER_URL_PART in url
        or as_str(metadata.get("mode")) == "4"
        or row_mode(index_row) in COMPUTER_ROW_MODES
    ):
        return "computer"
    types = {step.step_type for step in steps}
    if "COUNCIL_RESEARCH" in types:
        return "council"
    if "RESEARCH_ANSWER" in types:
        return "deep-research"
    return ""


def detect_mode(
    metadata: dict[str, Any],
    index_row: dict[str, Any] | None,
    url: str,
    steps: Iterable[Step],
    entries: list[Any],
) -> tuple[str, list[str]]:
    """§4.2. Returns (mode, warnings); `steps` are the parsed plain steps of every turn."""
    warnings: list[str] = []
    step_mode = _step_mode(as_dict(metadata), index_row, url, steps)
    dm_mode = ""
    sm_modes: list[str] = []
    for entry in dicts(entries):
        model = entry.get("display_model")
        if not dm_mode and isinstance(model, str) and model in DISPLAY_MODEL_MODE:
            dm_mode = DISPLAY_MODEL_MODE[model]
        mapped = SEARCH_MODE_MAP.get(as_str(entry.get("search_mode")).upper())
        if mapped and mapped not in sm_modes:
            sm_modes.append(mapped)
    if sm_modes:
        mode = most_specific(sm_modes)
        if len(sm_modes) > 1:
            warnings.append(f"mode switched inside the thread: {', '.join(sm_modes)}; using {mode}")
        for label, other in (("step/url/metadata", step_mode), ("display_model", dm_mode)):
            if other and other != mode:
                warnings.append(f"mode conflict: {label} says {other}, search_mode says {mode}")
        return mode, warnings
    if dm_mode:
        if step_mode and step_mode != dm_mode:
            warnings.append(
                f"mode conflict: step/url/metadata says {step_mode}, display_model says {dm_mode}"
            )
        return dm_mode, warnings
    return step_mode or "search", warnings


def plain_steps(plain: dict[str, Any]) -> list[Step]:
    return [s for e in dicts(plain.get("entries")) for s in decode_steps(e.get("text"))]


def plain_mode(
    plain: dict[str, Any], index_row: dict[str, Any] | None = None, url: str = ""
) -> tuple[str, list[str]]:
    """detect_mode straight from a merged plain response (before any blocks fetch)."""
    if not isinstance(plain, dict):
        return "search", []
    entries = dicts(plain.get("entries"))
    metadata = as_dict(plain.get("thread_metadata"))
    return detect_mode(metadata, index_row, url, plain_steps(plain), entries)


def needs_blocks(
    plain: dict[str, Any], index_row: dict[str, Any] | None = None, url: str = ""
) -> bool:
    """§2.4: fetch the schematized response for block modes, or when `search` is uncertain,
    or when an entry has no `text` to read its answer from (§9.1: blocks only)."""
    if not isinstance(plain, dict):
        return False
    mode, _ = plain_mode(plain, index_row, url)
    if mode in BLOCK_MODES:
        return True
    entries = dicts(plain.get("entries"))
    if any(not as_str(e.get("text")).strip() and not e.get("blocks") for e in entries):
        return True
    return not any(as_str(e.get("display_model")) for e in entries)


def aggregate_search_mode(entries: list[Any]) -> str:
    """§4.4: the raw `search_mode` of the most specific known value (ties: first seen)."""
    best, best_rank = "", len(SPECIFICITY)
    for entry in dicts(entries):
        raw = as_str(entry.get("search_mode"))
        mapped = SEARCH_MODE_MAP.get(raw.upper())
        if mapped is None:
            continue
        rank = SPECIFICITY.index(mapped)
        if rank < best_rank:
            best, best_rank = raw, rank
    return best


_DISPLAY_MODEL_HEURISTIC = {
    "pplx_alpha": "deep-research",
    "pplx_agentic_research": "council",
    "pplx_study": "study",
}
ARCHIVE_MODES = ("search", "deep-research", "computer", "council", "study")


def row_archive_mode(row: Mapping[str, Any] | None) -> str:
    """The archive mode (`<mode>` folder) an index row announces, before any fetch.

    A known `search_mode` (the archive's enrichment) decides. Otherwise the listing: GraphQL
    says `SEARCH` / `COMPUTER`, the REST listing the UI mode `copilot` / `concise` / `asi`
    (protocol.md §9.3), and only `display_model` tells the search sub-modes apart:
    `pplx_alpha` deep research, `pplx_agentic_research` council, `pplx_study` study, any
    other model search. `ASI`/`COMPUTER` (or a `pplx_asi…` model) is computer. The thread's
    own entries still decide once it is exported (`detect_mode`).
    """
    row = as_dict(dict(row) if isinstance(row, Mapping) else row)
    known = SEARCH_MODE_MAP.get(as_str(row.get("search_mode")).upper())
    if known is not None:
        return known
    model = as_str(row.get("displayModel"))
    if row_mode(row) in COMPUTER_ROW_MODES or model.lower().startswith("pplx_asi"):
        return "computer"
    return _DISPLAY_MODEL_HEURISTIC.get(model) or DISPLAY_MODEL_MODE.get(model) or "search"


def row_matches_mode(row: Mapping[str, Any], mode: str) -> bool:
    """§4.4 `batch --mode` filter on an index row: the row's archive mode is `mode`.

    `search` means ordinary search threads only (a deep-research row is `deep-research`,
    whichever listing wrote it). A value that is no archive mode compares with the listing's
    own `mode` (`--mode copilot`)."""
    mode = mode.strip().lower()
    if mode in ARCHIVE_MODES:
        return row_archive_mode(row) == mode
    return row_mode(as_dict(dict(row) if isinstance(row, Mapping) else row)) == mode.upper()
