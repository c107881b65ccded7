"""Payload shape helpers for the bundled sample library (protocol.md §3).

Small constructors for plain entries, plain steps, schematized entries, workflow steps and
items, so `sample_builder.py` reads as content, not as JSON plumbing. Everything here is
deterministic: ids come from `uid(name)` (UUIDv5) and times from ISO literals.
"""

from __future__ import annotations

import base64
import json
import re
import uuid as uuidlib
from datetime import UTC, datetime
from typing import Any

JSON = dict[str, Any]

_NAMESPACE = uuidlib.UUID("6d1f0c52-7a4e-4f3b-9a53-2f61c1e0b7a1")
AUTHOR = "alice"
AUTHOR_ID = "00000000-0000-4000-8000-00000000e001"


def uid(name: str) -> str:
    return str(uuidlib.uuid5(_NAMESPACE, name))


def dt(iso: str) -> datetime:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone(UTC)


def us(iso: str) -> int:
    return int(dt(iso).timestamp() * 1_000_000 + 0.5)


def naive(iso: str) -> str:
    return dt(iso).strftime("%Y-%m-%dT%H:%M:%S.%f")


def aware(iso: str) -> str:
    return dt(iso).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def epoch_s(iso: str) -> str:
    return str(int(dt(iso).timestamp()))


# -- plain steps (entries[].text) ------------------------------------------------------------


def step(step_type: str, content: JSON, step_uuid: str = "") -> JSON:
    return {"step_type": step_type, "content": content, "uuid": step_uuid}


def initial_query(query: str) -> JSON:
    return step("INITIAL_QUERY", {"goal_id": None, "query": query})


def search_web(*queries: str) -> JSON:
    return step(
        "SEARCH_WEB",
        {"goal_id": None, "queries": [{"engine": "web", "query": q, "limit": 8} for q in queries]},
    )


def web_result(name: str, url: str, snippet: str, date: str = "") -> JSON:
    return {
        "name": name,
        "url": url,
        "snippet": snippet,
        "timestamp": date,
        "meta_data": {"date": date, "client": "web"} if date else {"client": "web"},
        "is_attachment": False,
        "is_image": False,
        "is_code_interpreter": False,
    }


def search_results(results: list[JSON]) -> JSON:
    return step("SEARCH_RESULTS", {"goal_id": None, "web_results": results})


def final(answer: str, web_results: list[JSON] | None = None) -> JSON:
    """FINAL step: `content.answer` is itself a JSON string (protocol §3.5)."""
    body = {
        "answer": answer,
        "web_results": web_results or [],
        "chunks": chunks(answer),
        "extra_web_results": [],
        "structured_answer": [],
    }
    return step("FINAL", {"goal_id": None, "answer": json.dumps(body, ensure_ascii=False)})


def final_snapshot_only() -> JSON:
    """A computer FINAL: only `workflow_snapshots`, no answer (the answer lives in blocks)."""
    return step("FINAL", {"goal_id": None, "answer": json.dumps({"workflow_snapshots": None})})


def chunks(text: str, size: int = 48) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def steps_text(steps: list[JSON]) -> str:
    return json.dumps(steps, ensure_ascii=False)


# -- entries ---------------------------------------------------------------------------------


def plain_entry(
    *,
    thread_uuid: str,
    entry_uuid: str,
    context_uuid: str,
    query: str,
    steps: list[JSON],
    created: str,
    updated: str,
    search_mode: str,
    display_model: str,
    title: str,
    backend_uuid: str = "",
    **extra: Any,
) -> JSON:
    entry: JSON = {
        "uuid": entry_uuid,
        "frontend_uuid": entry_uuid,
        "backend_uuid": backend_uuid or entry_uuid,
        "context_uuid": context_uuid,
        "frontend_context_uuid": uid(f"fctx:{context_uuid}"),
        "query_str": query,
        "text": steps_text(steps),
        "sources": [],
        "plan": {"goals": [], "final": True},
        "created_us": us(created),
        "updated_us": us(updated),
        "updated_datetime": naive(updated),
        "author_username": AUTHOR,
        "author_id": AUTHOR_ID,
        "search_mode": search_mode,
        "display_model": display_model,
        "user_selected_model": display_model,
        "mode": "ASI" if search_mode == "ASI" else "copilot",
        "status": "COMPLETED",
        "step_type": "FINAL",
        "query_source": "default",
        "trigger": None,
        "is_background": None,
        "locked_reason": None,
        "side_by_side_metadata": None,
        "read_write_token": uid(f"rw:{thread_uuid}"),
        "thread_url_slug": thread_uuid,
        "thread_title": title,
        "thread_access": 1,
        "related_queries": [],
        "attachments": [],
        "media_items": [],
        "search_focus": "internet",
        "privacy_state": "NONE",
        "expiry_time": None,
    }
    entry.update(extra)
    return entry


_SCHEMATIZED_DROP = ("text", "plan", "created_us", "updated_us")


def schematized(plain: JSON, blocks: list[JSON], *, created: str, updated: str) -> JSON:
    """The schematized twin of a plain entry: same identity fields, `blocks`, aware datetimes."""
    entry = {k: v for k, v in plain.items() if k not in _SCHEMATIZED_DROP}
    entry["entry_created_datetime"] = aware(created)
    entry["entry_updated_datetime"] = aware(updated)
    entry["access_level"] = "PRIVATE_READ"
    entry["structured_answer_block_usages"] = [
        b["intended_usage"] for b in blocks if b.get("intended_usage") == "workflow_root"
    ]
    entry["query_language"] = "en"
    entry["blocks"] = blocks
    return entry


# -- blocks ----------------------------------------------------------------------------------


def markdown_block(answer: str, usage: str = "ask_text") -> JSON:
    return {
        "intended_usage": usage,
        "markdown_block": {
            "progress": "DONE",
            "chunks": chunks(answer),
            "chunk_starting_offset": 0,
            "answer": answer,
            "inline_token_annotations": [],
        },
    }


def web_results_block(results: list[JSON]) -> JSON:
    return {
        "intended_usage": "web_results",
        "web_result_block": {"progress": "DONE", "web_results": results},
    }


def plan_block(*goals: str) -> JSON:
    return {
        "intended_usage": "plan",
        "plan_block": {
            "progress": "DONE",
            "goals": [
                {"id": str(i), "description": g, "final": True, "todo_task_status": "COMPLETED"}
                for i, g in enumerate(goals)
            ],
            "final": True,
        },
    }


def assets_block(assets: list[JSON]) -> JSON:
    return {"intended_usage": "unified_assets", "unified_assets_block": {"assets": assets}}


def workflow_block(
    steps: list[JSON], status: str, *, started: str = "", completed: str = "", **extra: Any
) -> JSON:
    block: JSON = {
        "version": "1.0",
        "status": status,
        "headline": "",
        "started_at": aware(started) if started else "",
        "completed_at": aware(completed) if completed else "",
        "predicted_completion_at": "",
        "steps": steps,
        "snapshots": [{"type": "USAGE_TOTAL", "usage_total": {"compute_time_s": 42}}],
    }
    block.update(extra)
    return {"intended_usage": "workflow_root", "workflow_block": block}


def wf_step(
    step_id: str,
    title: str,
    items: list[JSON],
    *,
    status: str = "WORKFLOW_COMPLETED",
    started: str = "",
    completed: str = "",
    tool_name: str = "",
    icon: str = "",
    **extra: Any,
) -> JSON:
    out: JSON = {
        "status": status,
        "title": title,
        "items": items,
        "started_at": aware(started) if started else "",
        "completed_at": aware(completed) if completed else "",
        "source_tier": "SOURCE_TIER_DEFAULT",
        "id": step_id,
    }
    if tool_name:
        out["tool_name"] = tool_name
    if icon:
        out["icon"] = icon
    out.update(extra)
    return out


def text_item(item_id: str, text: str, variant: str | None = None, header: str = "") -> JSON:
    payload: JSON = {
        "text": text,
        "chunks": chunks(text),
        "variant": variant,
        "is_mono": header == "Output",
        "is_streaming": False,
    }
    if header:
        payload["header"] = header
    return {"id": item_id, "type": "WORKFLOW_ITEM_TEXT", "payload": {"text_payload": payload}}


def queries_item(item_id: str, *queries: str) -> JSON:
    return {
        "id": item_id,
        "type": "WORKFLOW_ITEM_QUERIES",
        "payload": {"queries_payload": {"queries": list(queries)}},
    }


def sources_item(item_id: str, sources: list[JSON]) -> JSON:
    return {
        "id": item_id,
        "type": "WORKFLOW_ITEM_SOURCES",
        "payload": {"sources_payload": {"sources": sources}},
    }


def workflow_item(payload: JSON) -> JSON:
    return {
        "id": payload["id"],
        "type": "WORKFLOW_ITEM_WORKFLOW",
        "payload": {"workflow_payload": payload},
    }


def workflow_payload(
    run_id: str,
    headline: str,
    steps: list[JSON],
    *,
    status: str,
    started: str,
    completed: str,
    objective: list[str] | None = None,
    model: str = "claudecode",
    **extra: Any,
) -> JSON:
    out: JSON = {
        "version": "1.0",
        "model": model,
        "status": status,
        "headline": headline,
        "id": run_id,
        "steps": steps,
        "snapshots": [{"type": "USAGE_TOTAL", "usage_total": {"compute_time_s": 17}}],
        "started_at": aware(started) if started else "",
        "completed_at": aware(completed) if completed else "",
        "predicted_completion_at": "",
    }
    if objective is not None:
        out["objective_chunks"] = objective
    out.update(extra)
    return out


# -- live-site shapes (protocol §9) ------------------------------------------------------------


def object_text(answer: str, web_results: list[JSON]) -> str:
    """An entry `text` that is a JSON object, not a step list (§9.1 form 2: 2023-2024)."""
    body = {
        "answer": answer,
        "web_results": web_results,
        "chunks": chunks(answer),
        "extra_web_results": [],
    }
    return json.dumps(body, ensure_ascii=False)


def short_result(name: str, url: str, snippet: str) -> JSON:
    """A web result as the 2024 object `text` carries it: name, url, snippet only."""
    return {"name": name, "url": url, "snippet": snippet}


def live_times(entry: JSON, *, created: str = "", updated: str) -> JSON:
    """Time fields as live captures carry them (§9.2): no `created_us`/`updated_us`, a naive
    `updated_datetime` always, tz-aware `entry_*_datetime` only when `created` is given."""
    entry.pop("created_us", None)
    entry.pop("updated_us", None)
    entry["updated_datetime"] = naive(updated)
    if created:
        entry["entry_created_datetime"] = aware(created)
        entry["entry_updated_datetime"] = aware(updated)
    return entry


def pro_step(step_type: str, content: JSON, step_uuid: str) -> JSON:
    """A `pro_search_steps` step (§9.7): the content sits under `<type>_content`."""
    key = {"SEARCH_RESULTS": "web_results"}.get(step_type, step_type.lower())
    return {"uuid": step_uuid, "step_type": step_type, f"{key}_content": content}


def pro_search_steps_block(goals: list[JSON], steps: list[JSON]) -> JSON:
    return {
        "intended_usage": "pro_search_steps",
        "plan_block": {"progress": "DONE", "goals": goals, "final": True, "steps": steps},
    }


def goals_plan_block(goals: list[JSON]) -> JSON:
    """A `plan` block listing the same goals as the entry's `plan` field (§9.7)."""
    return {
        "intended_usage": "plan",
        "plan_block": {"progress": "DONE", "goals": goals, "final": True},
    }


def media_block(items: list[JSON]) -> JSON:
    """`media_items` block (§9.7, reported): images and videos shown with the answer.

    The item shape is ours (docs/emulator.md): `medium` (image|video), `name`, `url` (the page
    it comes from), `image` (full-size image, a video's poster frame), `thumbnail`,
    `image_width`, `image_height`, `source`; a video also has `video_url` and `duration_s`."""
    return {
        "intended_usage": "media_items",
        "media_block": {"progress": "DONE", "media_items": items},
    }


def sources_mode_block(results: list[JSON]) -> JSON:
    """`sources_answer_mode` block (§9.7, reported): one row per source, with its citation."""
    rows = [
        {"web_result": {k: r[k] for k in ("name", "url", "snippet")}, "citation": n}
        for n, r in enumerate(results, start=1)
    ]
    return {
        "intended_usage": "sources_answer_mode",
        "sources_mode_block": {"progress": "DONE", "rows": rows},
    }


def title_slug(title: str, thread_uuid: str) -> str:
    """A pre-2026 thread URL slug (§9.4): title words, then the UUID's 16 bytes in unpadded
    base64url (22 characters, which may themselves hold `-` and `_`)."""
    words = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60].rstrip("-")
    tail = base64.urlsafe_b64encode(uuidlib.UUID(thread_uuid).bytes).rstrip(b"=").decode()
    return f"{words}-{tail}"


# -- archive naming (protocol §6.1) -----------------------------------------------------------

_SLUG_RUN = re.compile(r"[^\w\u4e00-\u9fff-]+")


def slugify(title: str) -> str:
    return _SLUG_RUN.sub("-", title)[:40].strip("-") or "untitled"
