"""One plain entry -> Turn (protocol.md §5.1-§5.3). Used for main and background entries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from pplx_export.models import Citation, ReportInfo, Turn, TurnMeta
from pplx_export.parse.answer_forms import (
    entry_blocks,
    find_answer,
    media_items,
    pro_search_steps,
    sources_mode_rows,
)
from pplx_export.parse.answers import final_answers
from pplx_export.parse.citations import (
    answer_sources,
    dedupe,
    normalise,
    normalise_all,
    turn_citations,
)
from pplx_export.parse.steps import step_from_raw, steps_of
from pplx_export.util.lenient import as_list, as_str, decode_json, first_str, optional_int
from pplx_export.util.timefmt import parse_iso

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def report_info_of(steps: list[Any]) -> ReportInfo | None:
    """From the LAST `RESEARCH_ANSWER` step, if any."""
    for step in reversed(steps):
        if step.step_type == "RESEARCH_ANSWER":
            content = step.content
            return ReportInfo(
                title=as_str(content.get("title")),
                file_name=as_str(content.get("file_name")),
                url=as_str(content.get("url")),
            )
    return None


def iso_us(value: Any) -> int | None:
    """An ISO time (naive = UTC) as µs since the epoch; None when absent or unreadable."""
    moment = parse_iso(value)
    if moment is None:
        return None
    return (moment - _EPOCH) // timedelta(microseconds=1)


def turn_times(entry: dict[str, Any]) -> tuple[int | None, int | None]:
    """(created, updated) in µs (§9.2): the µs fields, else `entry_created_datetime` /
    `entry_updated_datetime`, else the naive `updated_datetime` (UTC). No captured entry
    carries the µs fields."""
    created = optional_int(entry.get("created_us"))
    updated = optional_int(entry.get("updated_us"))
    fallback = entry.get("updated_datetime")
    if created is None:
        created = iso_us(entry.get("entry_created_datetime")) or iso_us(fallback)
    if updated is None:
        updated = iso_us(entry.get("entry_updated_datetime")) or iso_us(fallback)
    return created, updated


def build_turn(entry: dict[str, Any], index: int, twin: dict[str, Any] | None = None) -> Turn:
    """`twin`: the entry of the same uuid in the schematized response, if any."""
    decoded = decode_json(entry.get("text"))
    blocks = entry_blocks(entry, twin)
    steps = steps_of(decoded)
    if not steps:
        # Blocks-only entries: the `pro_search_steps` block holds the same steps (§9.7).
        steps = [step_from_raw(raw) for raw in pro_search_steps(blocks)]
    finals = final_answers(steps)
    found = find_answer(entry, decoded, steps, finals, blocks)
    created_us, updated_us = turn_times(entry)
    extra = found.extra_sources + sources_mode_rows(blocks)
    if found.form == "blocks":
        extra = as_list(found.sources) + extra
    citations = turn_citations(entry, steps, finals)
    if found.form in ("object", "blocks") or extra:
        citations = dedupe(citations + normalise_all(as_list(found.sources) + extra))
    numbered = answer_sources(entry, finals)
    if found.sources and not any(c.url for c in numbered):
        numbered = [normalise(r) or Citation("", "") for r in found.sources]
    return Turn(
        index=index,
        uuid=as_str(entry.get("uuid")),
        context_uuid=as_str(entry.get("context_uuid")),
        backend_uuid=as_str(entry.get("backend_uuid")),
        query=first_str(entry, "query_str", "query"),
        author=as_str(entry.get("author_username")),
        created_us=created_us,
        updated_us=updated_us,
        steps=steps,
        answer=found.answer,
        display_answer=found.answer,
        citations=citations,
        answer_sources=numbered,
        search_mode=as_str(entry.get("search_mode")),
        display_model=as_str(entry.get("display_model")),
        metadata=TurnMeta(
            report_info=report_info_of(steps),
            locked_reason=as_str(entry.get("locked_reason")),
            query_source=as_str(entry.get("query_source")),
            imported_from=as_str(entry.get("imported_from")),
        ),
        related=[
            q for q in (as_str(r).strip() for r in as_list(entry.get("related_queries"))) if q
        ],
        media=media_items(blocks),
        answer_form=found.form,
    )
