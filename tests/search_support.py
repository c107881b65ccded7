"""Tiny hand-made threads for the search tests: the real plain shape (query, steps, FINAL
answer), enough for the real parser, with the words a test looks for."""

from __future__ import annotations

import json
import uuid as uuidlib
from pathlib import Path
from typing import Any


def write_search_thread(
    root: Path,
    key: str,
    title: str,
    turns: list[tuple[str, str, str]],
    *,
    account: str = "maya",
    mode: str = "search",
    date: str = "2031-05-04",
    space: dict[str, str] | None = None,
    sources: list[tuple[str, str]] = (),  # type: ignore[assignment]
) -> Path:
    """A thread whose turns are (query, answer, work text); returns its directory."""
    web_uuid = str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"search-test-{key}"))
    directory = root / account / mode / f"{date}_{key}_{web_uuid[:8]}"
    (directory).mkdir(parents=True)
    entries: list[dict[str, Any]] = []
    for i, (query, answer, work) in enumerate(turns):
        steps = [
            {"step_type": "INITIAL_QUERY", "content": {"query": query}, "uuid": ""},
            {"step_type": "SEARCH_WEB", "content": {"queries": [work]} if work else {}, "uuid": ""},
            {
                "step_type": "FINAL",
                "content": {
                    "answer": json.dumps(
                        {
                            "answer": answer,
                            "web_results": [
                                {"name": name, "url": url, "snippet": ""} for name, url in sources
                            ],
                        }
                    )
                },
                "uuid": "",
            },
        ]
        entries.append(
            {
                "uuid": f"{web_uuid[:8]}-entry-{i}",
                "backend_uuid": f"{web_uuid[:8]}-entry-{i}",
                "query_str": query,
                "text": json.dumps(steps),
                "created_us": 1_940_000_000_000_000 + i * 1_000_000,
                "updated_us": 1_940_000_000_000_000 + i * 1_000_000,
                "author_username": account,
                "mode": "copilot",
                "search_mode": "SEARCH",
                "status": "completed",
                "thread_url_slug": web_uuid,
            }
        )
    plain = {"thread_metadata": {"title": title}, "entries": entries, "background_entries": []}
    (directory / "raw_entries.json").write_text(json.dumps(plain, ensure_ascii=False))
    doc = {
        "web_uuid": web_uuid,
        "url": f"https://www.perplexity.ai/search/{web_uuid}",
        "title": title,
        "mode": mode,
        "author": account,
        "export_via": account,
        "space": space,
        "lastUpdated": f"{date}T10:00:00.000000Z",
    }
    (directory / "thread.json").write_text(json.dumps(doc, ensure_ascii=False))
    return directory
