"""What every renderer needs besides the node it renders: labels and thread-level lookups."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pplx_export.models import Conversation, SubAgent
from pplx_export.render.files import NO_FILES, Files
from pplx_export.render.labels import Labels
from pplx_export.render.text import GITHUB

# Nested workflows deeper than this render a placeholder. Real payloads nest two or three
# levels; the limit exists to stop pathological input, not to trim content.
MAX_DEPTH = 8


# Not frozen: a frozen dataclass pays object.__setattr__ per field on every copy, and the
# renderer makes one per nested block. Treat it as immutable all the same (use the with_*
# copies); only `memo`, shared by every copy, is meant to be written.
@dataclass(slots=True)
class Ctx:
    labels: Labels
    conv: Conversation
    # The display answer of the turn being rendered: workflow answer items equal to it are
    # not repeated inside the work process.
    answer: str = ""
    locked_reason: str = ""
    # What a workflow text equal to `answer` shows instead (a one-line pointer to where the
    # answer is: the turn's Answer section, a run's conclusion below its steps).
    pointer: str = ""
    # Results several renderers repeat for one thread (plan goals by entry uuid, answer
    # Markdown), computed once per render_thread call and shared by every copy of this
    # context. Pure functions of `conv`.
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)
    # The render flavour (text.GITHUB or text.OBSIDIAN): the syntax of folds, links between
    # the archive's files and image embeds. Pass it to `details`, `link` and `image`.
    flavor: str = GITHUB
    # The thread's files as the archive holds them (render never reads the disk), and the
    # page being rendered (relative to the thread directory), which links are relative to.
    files: Files = NO_FILES
    page: str = "conversation.md"
    # The thread's space page relative to the archive root (`spaces/<file>.md`, "" = none
    # known): the caller names it, as `spaces` does, so every page can link up to it.
    space_page: str = ""

    @property
    def sub_map(self) -> dict[str, SubAgent]:
        return self.conv.sub_agents

    def _copy(self, answer: str, locked_reason: str, pointer: str, page: str) -> Ctx:
        """This context with the per-block fields given (the with_* copies)."""
        # Direct construction: dataclasses.replace costs ten times as much, per nested block.
        return Ctx(
            self.labels,
            self.conv,
            answer,
            locked_reason,
            pointer,
            self.memo,
            self.flavor,
            self.files,
            page,
            self.space_page,
        )

    def with_answer(self, answer: str, pointer: str = "") -> Ctx:
        return self._copy(answer, self.locked_reason, pointer, self.page)

    def with_locked_reason(self, locked_reason: str) -> Ctx:
        return self._copy(self.answer, locked_reason, self.pointer, self.page)

    def with_turn(self, answer: str, locked_reason: str) -> Ctx:
        return self._copy(answer, locked_reason, self.labels.to_answer, self.page)

    def with_page(self, page: str) -> Ctx:
        return self._copy(self.answer, self.locked_reason, self.pointer, page)
