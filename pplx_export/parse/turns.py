"""One plain entry -> Turn (protocol.md §5.1-§5.3). Used for main and background entries."""

from __future__ import annotations

from typing import Any

from pplx_export.models import ReportInfo, Turn, TurnMeta
from pplx_export.parse.answers import extract_answer, final_answers
from pplx_export.parse.citations import answer_sources, turn_citations
from pplx_export.parse.steps import decode_steps
from pplx_export.util.lenient import as_str, first_str, optional_int


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


def build_turn(entry: dict[str, Any], index: int) -> Turn:
    steps = decode_steps(entry.get("text"))
    finals = final_answers(steps)
    answer = extract_answer(entry, steps, finals)
    return Turn(
        index=index,
        uuid=as_str(entry.get("uuid")),
        context_uuid=as_str(entry.get("context_uuid")),
        backend_uuid=as_str(entry.get("backend_uuid")),
        query=first_str(entry, "query_str", "query"),
        author=as_str(entry.get("author_username")),
        created_us=optional_int(entry.get("created_us")),
        updated_us=optional_int(entry.get("updated_us")),
        steps=steps,
        answer=answer,
        display_answer=answer,
        citations=turn_citations(entry, steps, finals),
        answer_sources=answer_sources(entry, finals),
        search_mode=as_str(entry.get("search_mode")),
        display_model=as_str(entry.get("display_model")),
        metadata=TurnMeta(
            report_info=report_info_of(steps),
            locked_reason=as_str(entry.get("locked_reason")),
            query_source=as_str(entry.get("query_source")),
        ),
    )
