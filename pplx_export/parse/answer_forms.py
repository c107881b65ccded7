"""Where an entry's answer and sources live (protocol.md §9.1), tried in the order the live
site's history calls for, first non-empty answer wins:

1. `text` = a step list: the answer of the last FINAL step that has one (§5.2; 2025-2026);
2. `text` = an object `{answer, web_results, chunks, …}` (2023-2024 entries);
3. the blocks: `ask_text_N_markdown` / `ask_text` markdown blocks, with the `web_results`
   block as sources (schematized responses, plain entries without `text`);
4. `text` = the answer itself, plain Markdown;
5. the plan's long goal descriptions (§5.2's last fallback).

The blocks are the plain entry's own and those of its schematized twin (the entry of the
same uuid in the schematized response), when the thread has one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pplx_export.models import MediaItem, Step
from pplx_export.parse.answers import PLAN_MIN, final_answers, final_step_answer
from pplx_export.util.lenient import as_dict, as_list, as_str, decode_json, dicts, first_str

MARKDOWN_USAGE = re.compile(r"^ask_text(?:_\d+_markdown)?$")
# Broken JSON (a step list cut short), not an answer: `{…` or `[` followed by `{`, `[`, `"`, `]`.
_JSONISH = re.compile(r"^\s*(?:\{|\[\s*[\[{\"\]])")


def looks_like_json(text: str) -> bool:
    return _JSONISH.match(text) is not None


@dataclass
class Found:
    answer: str = ""
    form: str = ""  # steps | object | blocks | text | plan ("" when none gave an answer)
    # The raw sources the form carries, in the order its `[n]` markers count (None: the form
    # has no list of its own, the step channels of §5.3 decide).
    sources: list[Any] | None = None
    extra_sources: list[Any] = field(default_factory=list)  # cited, not numbered


def entry_blocks(entry: dict[str, Any], twin: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The plain entry's blocks, then its schematized twin's."""
    return dicts(entry.get("blocks")) + (dicts(twin.get("blocks")) if twin else [])


def markdown_answer(blocks: list[dict[str, Any]]) -> str:
    """The first non-empty markdown block's `answer`, else its joined `chunks`; numbered
    `ask_text_N_markdown` blocks before the bare `ask_text` one."""
    ranked = sorted(
        (b for b in blocks if MARKDOWN_USAGE.match(as_str(b.get("intended_usage")))),
        key=lambda b: as_str(b.get("intended_usage")) == "ask_text",
    )
    for block in ranked:
        md = as_dict(block.get("markdown_block"))
        answer = as_str(md.get("answer"))
        if not answer.strip():
            answer = "".join(as_str(c) for c in as_list(md.get("chunks")))
        if answer.strip():
            return answer
    return ""


def block_web_results(blocks: list[dict[str, Any]]) -> list[Any]:
    """The `web_results` block's results (the first block that has any)."""
    for block in blocks:
        if as_str(block.get("intended_usage")) != "web_results":
            continue
        results = as_list(as_dict(block.get("web_result_block")).get("web_results"))
        if results:
            return results
    return []


def sources_mode_rows(blocks: list[dict[str, Any]]) -> list[Any]:
    """`sources_answer_mode` rows (`sources_mode_block.rows[{web_result, citation}]`, §9.7)."""
    out: list[Any] = []
    for block in blocks:
        if as_str(block.get("intended_usage")) == "sources_answer_mode":
            for row in dicts(as_dict(block.get("sources_mode_block")).get("rows")):
                out.append(row.get("web_result"))
    return out


def media_items(blocks: list[dict[str, Any]]) -> list[MediaItem]:
    """Images and videos of `media_items` blocks, and those shown inside the answer (an
    `inline_entity_block` with a `media_block`: a generated chart between two of the
    answer's Markdown blocks), each once, inline ones first. The block's inner shape is
    reported, not seen (§9.7): any list of dicts inside `media_block` is read. As in the
    site's image results, an image item's `image` is the picture and its `url` the page it
    is on; a video's `url` is its page."""
    out: list[MediaItem] = []
    for n, block in enumerate(blocks):
        inline = as_dict(as_dict(block.get("inline_entity_block")).get("media_block"))
        if inline:
            anchor = _next_markdown_line(blocks[n + 1 :])
            _add_media(out, inline, anchor, True)
    for block in blocks:
        if as_str(block.get("intended_usage")) == "media_items":
            _add_media(out, as_dict(block.get("media_block")), "", False)
    return out


def _add_media(
    out: list[MediaItem], media_block: dict[str, Any], anchor: str, inline: bool
) -> None:
    for value in media_block.values():
        for item in dicts(value):
            media = _media_item(item, anchor, inline)
            if media is not None and all(m.url != media.url for m in out):
                out.append(media)


def _next_markdown_line(blocks: list[dict[str, Any]]) -> str:
    """The first non-blank line of the next numbered answer block (`ask_text_N_markdown`):
    the answer text an inline item stands before; "" when none follows."""
    for block in blocks:
        usage = as_str(block.get("intended_usage"))
        if not (usage.startswith("ask_text_") and usage.endswith("_markdown")):
            continue
        md = as_dict(block.get("markdown_block"))
        text = "".join(as_str(c) for c in as_list(md.get("chunks")))
        text = text or as_str(md.get("answer"))
        return next((line.strip() for line in text.split("\n") if line.strip()), "")
    return ""


def _media_item(item: dict[str, Any], anchor: str = "", inline: bool = False) -> MediaItem | None:
    kind = first_str(item, "medium", "media_type", "type", "kind")
    page = first_str(item, "url", "link", "source_url", "page_url")
    if kind.lower() == "image":
        url = first_str(item, "image", "image_url", "src") or page
    else:
        url = page or first_str(item, "video_url", "image", "image_url", "src")
    if not url:
        return None
    return MediaItem(
        url=url,
        kind=kind,
        # A generated chart has no name: its caption says what it shows.
        title=first_str(item, "name") or first_str(item, "title") or first_str(item, "caption"),
        source=page if page and page != url else "",
        anchor=anchor,
        inline=inline,
    )


def pro_search_steps(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The raw steps of the `pro_search_steps` block (§9.7), each as a plain step: the
    content under its `<type>_content` key becomes `content`."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        if as_str(block.get("intended_usage")) != "pro_search_steps":
            continue
        for step in dicts(as_dict(block.get("plan_block")).get("steps")):
            out.append(
                {
                    "step_type": step.get("step_type"),
                    "uuid": step.get("uuid"),
                    "content": step_content(step),
                }
            )
    return out


def step_content(step: dict[str, Any]) -> dict[str, Any]:
    """A block step's content: its `content`, else its one `…_content` dict."""
    if isinstance(step.get("content"), dict):
        return as_dict(step.get("content"))
    for key, value in step.items():
        if key.endswith("_content") and isinstance(value, dict):
            return value
    return {}


def plan_answer(entry: dict[str, Any]) -> str:
    """§5.2's last fallback: the longest plan goal description over PLAN_MIN characters."""
    plan = as_dict(decode_json(entry.get("plan")))
    descriptions = [
        as_str(goal.get("description"))
        for goal in dicts(plan.get("goals"))
        if len(as_str(goal.get("description"))) > PLAN_MIN
    ]
    return max(descriptions, key=len) if descriptions else ""


def find_answer(
    entry: dict[str, Any],
    decoded_text: Any,
    steps: list[Step],
    finals: list[tuple[Step, Any]],
    blocks: list[dict[str, Any]],
) -> Found:
    """The first form of §9.1 that gives a non-empty answer (`decoded_text`: the entry's
    `text`, JSON-decoded once by the caller)."""
    answer = final_step_answer(finals)
    if answer:
        return Found(answer, "steps")
    if isinstance(decoded_text, dict):
        answer = as_str(decoded_text.get("answer"))
        if answer.strip():
            return Found(
                answer,
                "object",
                sources=as_list(decoded_text.get("web_results")),
                extra_sources=as_list(decoded_text.get("extra_web_results")),
            )
    answer = markdown_answer(blocks)
    if answer:
        return Found(answer, "blocks", sources=block_web_results(blocks))
    text = entry.get("text")
    if isinstance(decoded_text, str):
        text = decoded_text  # a JSON string holding the Markdown
    is_text = isinstance(text, str) and text.strip() and not isinstance(decoded_text, list | dict)
    if is_text and (decoded_text is not None or not looks_like_json(str(text))):
        return Found(str(text), "text")
    answer = plan_answer(entry)
    return Found(answer, "plan" if answer else "")


def extract_answer(
    entry: dict[str, Any], steps: list[Step], twin: dict[str, Any] | None = None
) -> str:
    """The answer of one raw entry whose `text` gave `steps` (the ask stream's events and
    the thread it re-fetches read it this way too)."""
    text = entry.get("text")
    decoded = decode_json(text) if not steps else None
    return find_answer(
        entry, decoded, steps, final_answers(steps), entry_blocks(entry, twin)
    ).answer
