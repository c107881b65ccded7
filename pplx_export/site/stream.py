"""The ask stream assembled as the browser does it (protocol §9.6).

The live site never sends a growing `text`. With `diff_blocks` among the request's
`supported_block_use_cases` each event's blocks are `{"intended_usage", "diff_block": {"field",
"patches"}}`: RFC 6902 operations against that block's field, state kept per (intended_usage,
field). Without diff blocks a `markdown_block` carries only its new chunk(s), the first at
`chunk_starting_offset` in the whole list. The final event (`message_mode: "FULL"`) carries the
whole entry and replaces whatever was assembled: it is the truth.

`StreamAssembler.feed(event)` after every event; `answer()` and `sources()` are what a browser
would show at that point. A patch that does not apply is skipped (logged), never fatal: the
FULL event or the thread fetch settles the answer anyway.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from pplx_export.util.jsonpatch import PatchError, apply_patch
from pplx_export.util.lenient import as_dict, as_list, as_str, dicts

log = logging.getLogger("pplx_export.ask")

JSON = dict[str, Any]
BlockKey = tuple[str, str]  # (intended_usage, field)


def place_chunks(old: list[Any], new: list[Any], offset: int) -> list[Any]:
    """`new` placed at `offset` in `old` (a gap left by a lost event is kept as "")."""
    chunks = list(old[:offset]) + [""] * max(0, offset - len(old))
    chunks.extend(new)
    chunks.extend(old[offset + len(new) :])
    return chunks


def markdown_text(block: Any) -> str:
    """What a markdown block shows: its chunks joined, else its `answer`."""
    markdown = as_dict(block)
    joined = "".join(c for c in as_list(markdown.get("chunks")) if isinstance(c, str))
    return joined or as_str(markdown.get("answer"))


@dataclass
class StreamAssembler:
    blocks: dict[BlockKey, Any] = field(default_factory=dict)
    full: bool = False  # a FULL event was seen: `blocks` is the whole entry's
    patches_skipped: int = 0

    def feed(self, event: JSON) -> None:
        if as_str(event.get("message_mode")).upper() == "FULL":
            self.blocks = {}
            self.full = True
        for block in dicts(event.get("blocks")):
            usage = as_str(block.get("intended_usage"))
            diff = block.get("diff_block")
            if isinstance(diff, dict):
                self._patch((usage, as_str(diff.get("field"))), as_list(diff.get("patches")))
                continue
            for name, value in block.items():
                if name.endswith("_block") and name != "diff_block":
                    self._merge((usage, name), value)

    def _patch(self, key: BlockKey, patches: list[Any]) -> None:
        try:
            self.blocks[key] = apply_patch(self.blocks.get(key), patches)
        except PatchError as exc:
            self.patches_skipped += 1
            log.debug("skipping a patch of %s/%s: %s", key[0], key[1], exc)

    def _merge(self, key: BlockKey, value: Any) -> None:
        old = self.blocks.get(key)
        if key[1] != "markdown_block" or not isinstance(value, dict):
            self.blocks[key] = value
            return
        chunks = value.get("chunks")
        offset = value.get("chunk_starting_offset")
        if not isinstance(chunks, list) or not isinstance(offset, int) or offset < 0:
            self.blocks[key] = value
            return
        merged = {**as_dict(old), **value}
        merged["chunks"] = place_chunks(as_list(as_dict(old).get("chunks")), chunks, offset)
        merged["chunk_starting_offset"] = 0
        self.blocks[key] = merged

    def answer(self) -> str:
        """The answer so far: the first `ask_text*` markdown block with any text."""
        for (usage, name), value in self.blocks.items():
            if usage.startswith("ask_text") and name == "markdown_block":
                text = markdown_text(value)
                if text:
                    return text
        return ""

    def sources(self) -> int:
        """How many web results the blocks hold so far (the largest `web_result_block`)."""
        counts = [
            len(as_list(as_dict(value).get("web_results")))
            for (_, name), value in self.blocks.items()
            if name == "web_result_block"
        ]
        return max(counts, default=0)
