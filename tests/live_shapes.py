# ruff: noqa: E501  (invented fixture text: long literal strings are data)
"""Raw entries in the shapes the live site sends (protocol.md §9), written for this project.

Each builder returns a plain thread response (and, where the shape calls for one, the
schematized response) as the thread endpoint would serve it. All content is invented; the
shapes follow §9.1 (where the answer and sources live), §9.2 (time fields) and §9.7 (the
block vocabulary).
"""

from __future__ import annotations

import copy
import json
from typing import Any

J = dict[str, Any]

THREAD = "5ecea9c5-401f-470a-b03f-c5a0d12b0ce9"
CONTEXT = "0b8e1f6a-2c3d-4e5f-8a9b-0c1d2e3f4a5b"

KETTLE = [
    {
        "name": "Descaling a kettle with citric acid",
        "url": "https://example.org/descale-kettle",
        "snippet": "Two tablespoons of citric acid in half a litre of water, boiled and left for twenty minutes.",
    },
    {
        "name": "Hard water and limescale",
        "url": "https://example.com/limescale",
        "snippet": "Limescale is calcium carbonate left behind when hard water is heated.",
    },
]
KETTLE_ANSWER = (
    "Boil a solution of **citric acid** (about two tablespoons in half a litre of water) and "
    "let it stand for twenty minutes [1]. Limescale is calcium carbonate, which the acid "
    "dissolves [2]. Rinse twice before the next brew."
)
LOAF = [
    {
        "name": "Why bread goes stale",
        "url": "https://example.org/stale-bread",
        "snippet": "Starch retrogradation, not drying, makes a loaf stale.",
    },
    {
        "name": "Freezing bread",
        "url": "https://example.net/freeze-bread",
        "snippet": "Sliced and frozen, a loaf keeps for three months.",
    },
]
LOAF_ANSWER = (
    "## Keeping a loaf fresh\n\nStaling is starch **retrogradation** [1], which the fridge "
    "speeds up. Keep the loaf cut side down in a bread bin for two days, then slice and "
    "freeze what is left [2]."
)


def entry(uuid: str, query: str, **fields: Any) -> J:
    """The keys every captured entry carries; no µs fields (no capture has them, §9.2)."""
    base: J = {
        "uuid": uuid,
        "backend_uuid": uuid,
        "frontend_uuid": uuid,
        "context_uuid": CONTEXT,
        "query_str": query,
        "thread_url_slug": THREAD,
        "author_username": "maya",
        "status": "completed",
    }
    base.update(fields)
    return base


def page(*entries: J, **top: Any) -> J:
    doc: J = {
        "thread_metadata": {"title": top.pop("title", "Live shapes"), "mode": "1"},
        "entries": list(entries),
        "background_entries": [],
        "has_next_page": False,
        "next_cursor": "",
    }
    doc.update(top)
    return doc


def markdown_block(answer: str, usage: str = "ask_text_0_markdown", *, chunks: bool = False) -> J:
    md: J = {"progress": "DONE", "chunk_starting_offset": 0, "inline_token_annotations": []}
    if chunks:  # the answer only in its chunks
        md["chunks"] = [answer[: len(answer) // 2], answer[len(answer) // 2 :]]
        md["answer"] = ""
    else:
        md["chunks"] = [answer]
        md["answer"] = answer
    return {"intended_usage": usage, "markdown_block": md}


def web_results_block(results: list[J]) -> J:
    return {
        "intended_usage": "web_results",
        "web_result_block": {"progress": "DONE", "web_results": copy.deepcopy(results)},
    }


def step_list(answer: str, results: list[J], query: str) -> str:
    """`text` as a step list (§3.5), answer in the FINAL step."""
    return json.dumps(
        [
            {"step_type": "INITIAL_QUERY", "content": {"query": query}, "uuid": "s1"},
            {
                "step_type": "SEARCH_WEB",
                "content": {"goal_id": "0", "queries": [{"engine": "web", "query": query}]},
                "uuid": "s2",
            },
            {
                "step_type": "FINAL",
                "content": {"answer": json.dumps({"answer": answer, "web_results": results})},
                "uuid": "s3",
            },
        ]
    )


# ------------------------------------------------------------------ §9.1 form by form


def object_text() -> J:
    """Form 2 (2024): `text` is an object; only a naive `updated_datetime`; `mode: concise`."""
    return page(
        entry(
            "e0000001-0000-4000-8000-000000000001",
            "How do I descale a kettle?",
            text=json.dumps(
                {
                    "answer": KETTLE_ANSWER,
                    "web_results": KETTLE,
                    "chunks": [KETTLE_ANSWER],
                    "extra_web_results": [],
                }
            ),
            mode="concise",
            display_model="turbo",
            updated_datetime="2024-03-14T09:12:44.123456",
        ),
        entry(
            "e0000001-0000-4000-8000-000000000002",
            "And with vinegar?",
            text=json.dumps(
                {
                    "answer": "White vinegar works too, diluted one to one [1]; it smells, so rinse three times.",
                    "web_results": KETTLE[:1],
                }
            ),
            mode="concise",
            display_model="turbo",
            updated_datetime="2024-03-14T09:15:02.000001",
        ),
        title="Descaling a kettle",
    )


def blocks_only() -> tuple[J, J]:
    """Form 3: plain entries without `text`; the answer in markdown blocks (one with only
    `chunks`), sources in the `web_results` block of the schematized twin."""
    first = entry(
        "e0000002-0000-4000-8000-000000000001",
        "How should I store bread?",
        entry_created_datetime="2025-06-02T08:00:00.250000+00:00",
        entry_updated_datetime="2025-06-02T08:00:09.000000+00:00",
        updated_datetime="2025-06-02T08:00:09.000000",
        display_model="pplx_pro",
        mode="copilot",
    )
    second = entry(
        "e0000002-0000-4000-8000-000000000002",
        "Does the fridge help?",
        entry_created_datetime="2025-06-02T08:03:00+00:00",
        updated_datetime="2025-06-02T08:03:07.500000",
        display_model="pplx_pro",
        mode="copilot",
    )
    plain = page(first, second, title="Storing bread")
    blocks = copy.deepcopy(plain)
    blocks["entries"][0]["blocks"] = [
        markdown_block(LOAF_ANSWER),
        web_results_block(LOAF),
    ]
    blocks["entries"][1]["blocks"] = [
        markdown_block("No: the fridge speeds staling up [1].", "ask_text", chunks=True),
        web_results_block(LOAF[:1]),
    ]
    return plain, blocks


def plain_markdown_text() -> J:
    """Form 4: `text` is the answer itself."""
    return page(
        entry(
            "e0000003-0000-4000-8000-000000000001",
            "What is a haiku?",
            text="A haiku is a three-line poem of **5, 7 and 5** syllables.",
            updated_datetime="2023-11-20T17:45:00.000000",
        ),
        title="Haiku",
    )


def pro_search() -> J:
    """Form 1 with the §9.7 blocks on the same plain entry: `pro_search_steps` (the same
    steps as `text`), a `plan` block repeating the `plan` field, `related_queries`, a
    `media_items` block and a `sources_answer_mode` block."""
    query = "How do heat pumps defrost?"
    answer = (
        "They run the cycle **in reverse** for a few minutes [1], warming the outdoor coil [2]."
    )
    results = [
        {
            "name": "Heat pump defrost cycles",
            "url": "https://example.org/defrost",
            "snippet": "A reversing valve sends hot refrigerant to the outdoor coil.",
        },
        {
            "name": "Outdoor coil icing",
            "url": "https://example.com/icing",
            "snippet": "Frost forms below about 5 °C in humid air.",
        },
    ]
    goals = [{"id": "0", "description": "Explain the defrost cycle", "final": False}]
    steps_block = {
        "intended_usage": "pro_search_steps",
        "plan_block": {
            "goals": goals,
            "final": True,
            "steps": [
                {
                    "uuid": "p1",
                    "step_type": "INITIAL_QUERY",
                    "initial_query_content": {"query": query},
                },
                {
                    "uuid": "p2",
                    "step_type": "SEARCH_WEB",
                    "search_web_content": {
                        "goal_id": "0",
                        "queries": [{"engine": "web", "query": "heat pump defrost cycle"}],
                    },
                },
                {
                    "uuid": "p3",
                    "step_type": "SEARCH_RESULTS",
                    "web_results_content": {"goal_id": "0", "web_results": results},
                },
                {"uuid": "p4", "step_type": "TERMINATE", "terminate_content": {}},
            ],
        },
    }
    return page(
        entry(
            "e0000004-0000-4000-8000-000000000001",
            query,
            text=step_list(answer, results, query),
            plan=json.dumps({"goals": goals, "final": True}),
            related_queries=[
                "How long does a defrost cycle last?",
                "Do heat pumps work at -20 °C?",
            ],
            entry_created_datetime="2026-05-29T12:25:10.000000+00:00",
            updated_datetime="2026-05-29T12:25:17.955282",
            display_model="pplx_pro",
            mode="copilot",
            blocks=[
                {"intended_usage": "plan", "plan_block": {"progress": "DONE", "goals": goals}},
                steps_block,
                markdown_block(answer),
                web_results_block(results),
                {
                    "intended_usage": "media_items",
                    "media_block": {
                        "media_items": [
                            {
                                "medium": "image",
                                "name": "Frosted outdoor unit",
                                "image": "https://images.example.org/frost.jpg",
                                "url": "https://example.org/defrost",
                            },
                            {
                                "medium": "video",
                                "name": "Defrost cycle explained",
                                "url": "https://video.example.com/defrost",
                            },
                        ]
                    },
                },
                {
                    "intended_usage": "sources_answer_mode",
                    "sources_mode_block": {
                        "rows": [
                            {
                                "citation": 3,
                                "web_result": {
                                    "name": "Reversing valves",
                                    "url": "https://example.net/reversing-valve",
                                    "snippet": "The valve that swaps the coils' roles.",
                                },
                            }
                        ]
                    },
                },
            ],
        ),
        title="Heat pump defrost",
    )


def unknown_shape() -> J:
    """An answer and sources where no known form puts them: the parser must say so."""
    return page(
        entry(
            "e0000005-0000-4000-8000-000000000001",
            "Which tea keeps longest?",
            text=json.dumps(
                {
                    "response": {
                        "answer_markdown": "Compressed **pu-erh** keeps for decades when it is dry.",
                        "cited_pages": {
                            "web_results": [
                                {"name": "Aged tea", "url": "https://example.org/pu-erh"}
                            ]
                        },
                    }
                }
            ),
            updated_datetime="2025-01-09T10:00:00.000000",
        ),
        title="Tea storage",
    )


def newest_window_first(plain: J, size: int) -> list[J]:
    """The thread's pages as a server that pages newest window first sends them (§9.2):
    page one holds the last `size` entries."""
    entries = plain["entries"]
    windows = [entries[max(0, end - size) : end] for end in range(len(entries), 0, -size)]
    pages = []
    for n, window in enumerate(windows):
        doc = copy.deepcopy(plain)
        doc["entries"] = copy.deepcopy(window)
        doc["has_next_page"] = n + 1 < len(windows)
        doc["next_cursor"] = f"c{n + 1}" if n + 1 < len(windows) else ""
        pages.append(doc)
    return pages


def threads() -> dict[str, tuple[J, J | None]]:
    """Every shape above by name: (plain, schematized or None)."""
    return {
        "object-text": (object_text(), None),
        "blocks-only": blocks_only(),
        "markdown-text": (plain_markdown_text(), None),
        "pro-search": (pro_search(), None),
        "unknown-shape": (unknown_shape(), None),
    }
