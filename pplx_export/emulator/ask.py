"""`POST /rest/sse/perplexity_ask`: create a thread (or a follow-up turn) in memory, then stream.

The mode comes from `params.model_preference` exactly as protocol §2.12 describes; the new
thread is stored before the first event is sent, so a GET right after the final event finds
it (the `ask_404` fault imitates the platform's brief 404 of a just-created thread). The
`ask` fault decides how the stream ends (faults.ASK_OUTCOMES): the events built here stop
where that outcome stops, and the turn is stored as the server would have it (COMPLETED,
still PENDING, or FAILED).

Long because the events sent, where they stop and the turn stored must agree for every fault
outcome, so `start_ask` decides them together; the council block, the one large event
builder, serves only it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pplx_export.emulator import timeutil
from pplx_export.emulator.library import (
    Library,
    ThreadRecord,
    plain_steps,
    schematized_entry,
)
from pplx_export.util.lenient import as_dict, as_list, as_str

JSON = dict[str, Any]

# model_preference -> (archive mode, entry search_mode)
_MODES = {
    "pplx_alpha": ("deep-research", "RESEARCH"),
    "pplx_agentic_research": ("council", "AGENTIC_RESEARCH"),
    "pplx_study": ("study", "STUDY"),
}


class AskError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass
class AskResult:
    record: ThreadRecord
    events: list[JSON] = field(default_factory=list)
    mode: str = "search"  # archive mode of the new turn
    created: bool = True  # a new thread (False: a follow-up turn)
    backend_uuid: str = ""  # the new turn's


def complete_turn(record: ThreadRecord, backend_uuid: str) -> None:
    """The server finishes a turn that was still running: its entries become COMPLETED
    (the caller holds the library lock)."""
    for source in (record.plain, record.blocks or {}):
        for entry in as_list(source.get("entries")):
            if isinstance(entry, dict) and entry.get("backend_uuid") == backend_uuid:
                entry["status"] = "COMPLETED"


# Where the stored turn stands when the stream ends in each outcome.
_STORED_STATUS = {"cut_running": "PENDING", "end": "PENDING", "hang": "PENDING", "error": "FAILED"}
ERROR_EVENT = {
    "error_code": "INTERNAL_SERVER_ERROR",
    "message": "Something went wrong while answering. Please try again.",
}


def mode_for(model: str) -> tuple[str, str]:
    if model.startswith("pplx_asi"):
        return "computer", "ASI"
    return _MODES.get(model, ("search", "SEARCH"))


def answer_for(mode: str, query: str, models: list[str]) -> str:
    """A plausible, deterministic answer shaped like the mode's real answers."""
    topic = query.strip().rstrip("?.!") or "your question"
    if mode == "deep-research":
        return (
            f"## Research summary: {topic}\n\n"
            "The sources agree on the main points; the details differ by context.\n\n"
            "### Key findings\n\n1. The core mechanism is well documented.\n"
            "2. Recent work refines, rather than overturns, the standard account.\n\n"
            "### Open questions\n\nLong-term effects remain less studied."
        )
    if mode == "council":
        names = ", ".join(models) or "the council"
        return (
            f"**Council synthesis** ({names}): the models broadly agree on {topic}. "
            "Where they differ, the majority view is given first and the dissent noted."
        )
    if mode == "study":
        return (
            f"Let's learn about {topic} step by step.\n\n"
            "1. Start with the definition.\n2. Work one example.\n3. Check yourself: "
            "can you explain it in one sentence?"
        )
    return f"Short answer about {topic}: it depends on the context, but the usual case is simple."


def sources_for(query: str) -> list[JSON]:
    """Two deterministic web results, so a stream has sources to count."""
    topic = query.strip().rstrip("?.!") or "the question"
    return [
        {
            "name": f"{topic}: an overview",
            "url": f"https://example.org/overview/{index}",
            "snippet": f"What is known about {topic} (part {index}).",
        }
        for index in (1, 2)
    ]


def answer_chunks(answer: str, groups: int = 4) -> list[list[str]]:
    """The answer as the live site streams it: word chunks (each with its trailing space),
    in `groups` events of one or more chunks."""
    chunks = re.findall(r"\S+\s*", answer) or [answer]
    size = -(-len(chunks) // groups)
    return [chunks[i : i + size] for i in range(0, len(chunks), size)]


def stream_events(
    ids: JSON,
    answer: str,
    sources: list[JSON],
    full: JSON,
    *,
    outcome: str = "complete",
    diff: bool = True,
) -> list[JSON]:
    """The events of one ask as the live site sends them (protocol §9.6): a first PENDING event,
    then the answer as diff blocks (`diff`: RFC 6902 patches per block field) or as chunk deltas
    (each markdown block holds its new chunks at `chunk_starting_offset`), the sources arriving
    one by one, then the FULL final event carrying the whole entry. `outcome` cuts it short:
    `cut`/`cut_running`/`end` keep the first half of the growing events, `hang` only the first
    event, `error` ends with a FAILED final event."""
    head: JSON = {**ids, "status": "PENDING", "final_sse_message": False}
    events: list[JSON] = [{**head, "blocks": []}]
    if outcome == "error":
        return [*events, {**ids, **ERROR_EVENT, "status": "FAILED", "final_sse_message": True}]
    if outcome == "hang":
        return events
    offset = 0
    for index, group in enumerate(answer_chunks(answer)):
        blocks: list[JSON] = []
        for usage in ("ask_text_0_markdown", "ask_text"):
            if diff and offset == 0:
                value = {"progress": "IN_PROGRESS", "chunks": group, "chunk_starting_offset": 0}
                patches = [{"op": "replace", "path": "", "value": value}]
            elif diff:
                patches = [
                    {"op": "add", "path": f"/chunks/{offset + i}", "value": chunk}
                    for i, chunk in enumerate(group)
                ]
            else:
                delta = {
                    "progress": "IN_PROGRESS",
                    "chunks": group,
                    "chunk_starting_offset": offset,
                }
                blocks.append({"intended_usage": usage, "markdown_block": delta})
                continue
            blocks.append(
                {
                    "intended_usage": usage,
                    "diff_block": {"field": "markdown_block", "patches": patches},
                }
            )
        if index < len(sources):
            if not diff:
                shown = {"web_results": sources[: index + 1]}
                blocks.append({"intended_usage": "web_results", "web_result_block": shown})
            else:
                op = (
                    {"op": "replace", "path": "", "value": {"web_results": [sources[0]]}}
                    if index == 0
                    else {"op": "add", "path": f"/web_results/{index}", "value": sources[index]}
                )
                blocks.append(
                    {
                        "intended_usage": "web_results",
                        "diff_block": {"field": "web_result_block", "patches": [op]},
                    }
                )
        offset += len(group)
        events.append({**head, "blocks": blocks})
    if outcome in ("cut", "cut_running", "end"):
        return events[: 1 + (len(events) - 1) // 2]
    final = {**full, "status": "COMPLETED", "message_mode": "FULL", "final_sse_message": True}
    return [*events, final]


def _council_block(models: list[str], query: str) -> JSON:
    items = []
    for index, model in enumerate(models):
        answer = f"{model} view on {query.strip() or 'the question'}: a careful, sourced answer."
        items.append(
            {
                "id": f"council-{index}",
                "type": "WORKFLOW_ITEM_WORKFLOW",
                "payload": {
                    "workflow_payload": {
                        "version": "1.0",
                        "mode": "LLM_COUNCIL",
                        "model": model,
                        "status": "WORKFLOW_COMPLETED",
                        "headline": model,
                        "id": f"council-{index}",
                        "steps": [
                            {
                                "status": "WORKFLOW_COMPLETED",
                                "title": "Answer",
                                "id": f"council-{index}-answer",
                                "items": [
                                    {
                                        "id": f"council-{index}-text",
                                        "type": "WORKFLOW_ITEM_TEXT",
                                        "payload": {
                                            "text_payload": {
                                                "text": answer,
                                                "chunks": [answer],
                                                "variant": "answer",
                                            }
                                        },
                                    }
                                ],
                            }
                        ],
                    }
                },
            }
        )
    return {
        "intended_usage": "workflow_root",
        "workflow_block": {
            "version": "1.0",
            "mode": "LLM_COUNCIL",
            "status": "WORKFLOW_COMPLETED",
            "headline": "",
            "steps": [
                {
                    "status": "WORKFLOW_COMPLETED",
                    "title": "Consulting the council",
                    "tool_name": "council_research",
                    "id": "council-step",
                    "items": items,
                }
            ],
        },
    }


def start_ask(
    library: Library,
    body: JSON,
    new_id: Callable[[], str],
    username: str,
    *,
    outcome: str = "complete",
) -> AskResult:
    params = as_dict(body.get("params"))
    query = as_str(body.get("query_str"))
    if not query.strip():
        raise AskError(400, "INVALID_REQUEST", "query_str is empty")
    model = as_str(params.get("model_preference")) or "pplx_pro"
    compare = [as_str(m) for m in as_list(params.get("compare_model_preferences")) if as_str(m)]
    last_backend = as_str(params.get("last_backend_uuid"))

    with library.lock:
        parent: ThreadRecord | None = None
        if last_backend:
            parent = library.by_backend_uuid(last_backend)
            if parent is None:
                raise AskError(404, "THREAD_NOT_FOUND", "no thread has that last_backend_uuid")
            if parent.uuid in library.forbidden_threads:
                raise AskError(403, "VIEW_THREAD_NOT_ALLOWED", "You cannot view this thread")
            if parent.state != "ok":
                code = "ENTRY_DELETED" if parent.state == "deleted" else "ENTRY_EXPIRED"
                raise AskError(400, code, f"This entry has {parent.state}")
            # A token is optional here, but a wrong one is a client bug worth surfacing.
            token = as_str(params.get("read_write_token"))
            tokens = {as_str(e.get("read_write_token")) for e in parent.entries}
            if token and token not in tokens:
                raise AskError(403, "INVALID_READ_WRITE_TOKEN", "read_write_token does not match")
            mode = parent.mode
            _, search_mode = mode_for(model)
        else:
            mode, search_mode = mode_for(model)
        stamp = library.next_timestamp()
        when = timeutil.parse_time(stamp) or timeutil.EPOCH
        us = timeutil.to_us(when)
        thread_uuid = parent.uuid if parent else new_id()
        context_uuid = parent.context_uuid if parent else new_id()
        frontend_context = as_str(params.get("frontend_context_uuid")) or new_id()
        entry_uuid = as_str(params.get("frontend_uuid")) or new_id()
        # A fresh thread's first backend_uuid is the thread UUID (protocol §3.1).
        backend_uuid = new_id() if parent else thread_uuid
        answer = answer_for(mode, query, compare[:3])
        sources = sources_for(query)
        entry: JSON = {
            "uuid": entry_uuid,
            "frontend_uuid": entry_uuid,
            "backend_uuid": backend_uuid,
            "context_uuid": context_uuid,
            "frontend_context_uuid": frontend_context,
            "query_str": query,
            "text": plain_steps(query, answer, sources),
            "created_us": us,
            "updated_us": us,
            "updated_datetime": when.strftime("%Y-%m-%dT%H:%M:%S.%f"),
            "author_username": username,
            "search_mode": search_mode,
            "display_model": model,
            "user_selected_model": model,
            "mode": "copilot",
            "status": _STORED_STATUS.get(outcome, "COMPLETED"),
            "step_type": "FINAL",
            "query_source": "followup" if parent else "home",
            "trigger": None,
            "is_background": None,
            "locked_reason": None,
            "side_by_side_metadata": None,
            "sources": [],
            "read_write_token": f"rw-{context_uuid}",
            "thread_url_slug": thread_uuid,
            "thread_title": parent.title if parent else query[:120],
            "thread_access": 1,
        }
        block_entry = schematized_entry(entry, answer)
        block_entry["blocks"].append(
            {"intended_usage": "web_results", "web_result_block": {"web_results": sources}}
        )
        if mode == "council":
            block_entry["blocks"].append(
                _council_block(compare[:3] or ["model-a", "model-b"], query)
            )
        if parent is not None:
            parent.plain.setdefault("entries", []).append(entry)
            if parent.blocks is None:
                parent.blocks = {
                    "thread_metadata": parent.plain.get("thread_metadata"),
                    "entries": [],
                    "background_entries": [],
                }
            parent.blocks.setdefault("entries", []).append(block_entry)
            parent.last_updated = stamp
            record = parent
        else:
            metadata = {
                "created_at": when.strftime("%Y-%m-%dT%H:%M:%S.%f"),
                "updated_at": when.strftime("%Y-%m-%dT%H:%M:%S.%f"),
                "title": query[:120],
                "mode": {"computer": "4", "search": "1"}.get(mode, "2"),
                "thread_status": "completed",
                "locked_reason": None,
            }
            space_uuid = as_str(params.get("target_collection_uuid"))
            record = ThreadRecord(
                uuid=thread_uuid,
                title=query[:120].strip() or "untitled",
                mode=mode,
                last_updated=stamp,
                plain={"thread_metadata": metadata, "entries": [entry], "background_entries": []},
                blocks={
                    "thread_metadata": metadata,
                    "entries": [block_entry],
                    "background_entries": [],
                },
                author=username,
                space_uuid=space_uuid if space_uuid in library.spaces else "",
            )
            library.add_thread(record)

    ids = {
        "backend_uuid": backend_uuid,
        "uuid": entry_uuid,
        "context_uuid": context_uuid,
        "frontend_context_uuid": frontend_context,
        "thread_url_slug": thread_uuid,
        "display_model": model,
        "search_mode": search_mode,
        "mode": "copilot",
    }
    diff = "diff_blocks" in [as_str(u) for u in as_list(params.get("supported_block_use_cases"))]
    full = {**block_entry, "text": entry["text"], **ids}
    events = stream_events(ids, answer, sources, full, outcome=outcome, diff=diff)
    return AskResult(
        record=record,
        events=events,
        mode=mode,
        created=parent is None,
        backend_uuid=backend_uuid,
    )


def sse_frame(event: JSON, *, split: bool = False) -> bytes:
    """One SSE event. `split` spreads the JSON over two `data:` lines (clients must concatenate)."""
    data = json.dumps(event)
    # Split between two keys (outside any string), because clients strip each line.
    cut = data.find(', "') + 1
    if split and cut > 0:
        lines = f"data: {data[:cut]}\r\ndata: {data[cut:]}\r\n"
    else:
        lines = f"data: {data}\r\n"
    return f"event: message\r\n{lines}\r\n".encode()


END_OF_STREAM = b"event: end_of_stream\r\ndata: {}\r\n\r\n"
