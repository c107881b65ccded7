"""Small archives for the spaces/relations tests, written by hand (no emulator needed).

`write_thread` lays out one thread directory the way the writer does (thread.json, and
unless `raw=False` a raw_entries.json whose entries the real parser reads); `write_index`
writes a library index. Content is invented for these tests.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

JSON = dict[str, Any]


def steps_text(query: str, answer: str, urls: tuple[str, ...] = ()) -> str:
    results = [{"name": f"source {n}", "url": url, "snippet": ""} for n, url in enumerate(urls)]
    final = {"answer": answer, "web_results": results, "chunks": [answer]}
    steps = [
        {"step_type": "INITIAL_QUERY", "content": {"goal_id": None, "query": query}, "uuid": ""},
        {
            "step_type": "FINAL",
            "content": {"goal_id": None, "answer": json.dumps(final, ensure_ascii=False)},
            "uuid": "",
        },
    ]
    return json.dumps(steps, ensure_ascii=False)


def space(slug: str, title: str = "", uuid: str = "") -> JSON:
    return {"uuid": uuid or f"space-{slug}", "title": title or slug.title(), "slug": slug}


def write_thread(
    root: Path,
    uuid: str,
    *,
    title: str = "",
    query: str = "",
    answer: str = "An answer.",
    author: str = "alice",
    folder: str = "alice",
    mode: str = "search",
    day: str = "2026-11-01",
    space_ref: JSON | None = None,
    created_us: int = 0,
    query_source: str = "default",
    urls: tuple[str, ...] = (),
    raw: bool = True,
    conversation: str = "",
) -> Path:
    title = title or f"Thread {uuid[:8]}"
    slug = re.sub(r"[^\w-]+", "-", title)[:40].strip("-")
    directory = root / folder / mode / f"{day}_{slug}_{uuid[:8]}"
    directory.mkdir(parents=True, exist_ok=True)
    doc = {
        "web_uuid": uuid,
        "psc_uuid": f"ctx-{uuid}",
        "url": f"https://www.perplexity.ai/search/{uuid}",
        "title": title,
        "mode": mode,
        "author": author,
        "export_via": author,
        "space": space_ref,
        "lastUpdated": f"{day}T10:00:00.000000Z",
        "threadAccess": None,
        "n_turns": 1,
        "n_sources": len(urls),
        "metadata": {"title": title, "mode": "1"},
        "report_info": None,
        "exported_at": "2026-11-21T00:00:00Z",
    }
    (directory / "thread.json").write_text(json.dumps(doc, ensure_ascii=False, indent=1), "utf-8")
    if raw:
        entry = {
            "uuid": f"e-{uuid}",
            "backend_uuid": uuid,
            "context_uuid": f"ctx-{uuid}",
            "query_str": query or title,
            "text": steps_text(query or title, answer, urls),
            "created_us": created_us or 1_790_000_000_000_000,
            "updated_us": created_us or 1_790_000_000_000_000,
            "author_username": author,
            "search_mode": "SEARCH",
            "display_model": "pplx_pro",
            "query_source": query_source,
            "thread_url_slug": uuid,
        }
        plain = {"thread_metadata": doc["metadata"], "entries": [entry], "background_entries": []}
        (directory / "raw_entries.json").write_text(json.dumps(plain, ensure_ascii=False), "utf-8")
    if conversation:
        (directory / "conversation.md").write_text(conversation, "utf-8")
    return directory


def index_row(uuid: str, title: str, space_ref: JSON | None, day: str = "2026-11-01") -> JSON:
    return {
        "title": title,
        "entryUUID": uuid,
        "href": uuid,
        "mode": "SEARCH",
        "displayModel": "pplx_pro",
        "lastUpdated": f"{day}T10:00:00.000000Z",
        "status": "COMPLETED",
        "space": space_ref,
    }


def write_index(root: Path, account: str, rows: list[JSON]) -> Path:
    path = root / "index" / f"library_{account}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"account": account, "count": len(rows), "threads": rows}
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", "utf-8")
    return path


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root (relative path -> bytes)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def uid(n: int) -> str:
    return f"{n:08x}-0000-4000-8000-{n:012x}"
