"""Is a piece of content already on the page? The check behind every "shown once" decision.

Decided on content atoms, the notion the fidelity check uses: every line of a content text
(a thought, a query, a URL, a todo entry, a table cell ...), compared on letters and digits
only. A candidate is shown when each of its atoms is: labels, quoting and Markdown between
atoms on the page cannot hide a repeat (a bare render of the candidate compared as one
string could not see a todo list whose entries carry an "(in progress)" mark, for one).

The atoms of a candidate come from its model (`item_atoms`, `step_atoms`), never from a
render of it, so a check costs a squash of a few short lines and, mostly, a set lookup
against the page's squashed lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache

from pplx_export.models import Step, WfItem, WfPayload
from pplx_export.parse.views import (
    CONTENT,
    QUERIES,
    SOURCES,
    TABLE,
    TEXT,
    TODO_LIST,
    USER_QUESTIONS,
    USER_RESPONSE,
    WORKFLOW,
)
from pplx_export.render.text import (
    LAYOUT_TAGS,
    SQUASH_SURE,
    TAG_HEADS,
    TAG_TAILS,
    squash,
    squash_lines,
    squashed_on_page,
)

# `[Label](pplx://…)` reads as `**Label**` on the page (text.model_links): the link target
# is not content (the fidelity check drops it the same way).
_PPLX_LINK = re.compile(r"\]\(pplx://[^)]*\)")
_LONGEST_TAG = max(len(t) for t in LAYOUT_TAGS)


@lru_cache(maxsize=8192)
def atom(line: str) -> str:
    """One line of content as compared: letters and digits only, app-only links dropped.
    Cached: the same lines are checked against every copy of a run and every turn."""
    if "pplx://" in line:
        line = _PPLX_LINK.sub("]", line)
    return squash(line)


def _word_on_page(word: str, md: str) -> bool:
    """`word` occurs in `md` with no word character on either side: the regex
    `(?<!\\w)word(?!\\w)` without compiling one per word (`str.isalnum` or `_` is `\\w`)."""
    at = md.find(word)
    end = len(md)
    while at >= 0:
        after = at + len(word)
        before_ok = at == 0 or not (md[at - 1].isalnum() or md[at - 1] == "_")
        if before_ok and (after == end or not (md[after].isalnum() or md[after] == "_")):
            return True
        at = md.find(word, at + 1)
    return False


class Shown:
    """The content atoms of a page: `covers(texts)` is true when every line of every text
    is on it. Atoms of SQUASH_SURE characters or more are looked up among the page's
    squashed lines, then in the whole squashed page (an atom the page splits or prefixes
    with a label); shorter ones must appear verbatim as whole words, so "ok" is not hidden
    by "broken"."""

    def __init__(self, md: str) -> None:
        self.md = md
        self._lines: frozenset[str] | None = None
        self._flat = ""

    def _index(self) -> frozenset[str]:
        # Built on first need: one squash pass over the page, kept line by line.
        if self._lines is None:
            lines = squash_lines(self.md)
            self._lines = frozenset(lines)
            self._flat = "".join(lines)
        return self._lines

    def has(self, line: str) -> bool:
        word = line.strip()
        if not word:
            return True
        # Once the page's squashed lines are indexed, a whole line found there is one hash
        # lookup; the substring scans below cost a pass over the page each (council pages
        # check every line of every model's answer).
        if self._lines is not None:
            sq = atom(line)
            if not sq or (len(sq) >= SQUASH_SURE and sq in self._lines):
                return True
        # The line itself on the page as a whole word (C substring scans) settles most
        # checks with no squashing at all: longer than any layout tag and not cut at one, it
        # passes both rules below (an app-only link is rewritten on the page: not here).
        if (
            len(word) > _LONGEST_TAG
            and "pplx://" not in word
            and not word.startswith(TAG_TAILS)
            and not word.endswith(TAG_HEADS)
            and _word_on_page(word, self.md)
        ):
            return True
        sq = atom(line)
        if not sq:
            return True
        if len(sq) >= SQUASH_SURE:
            # The squashed page is made on the first atom not found verbatim.
            if squashed_on_page(word, sq, self.md):
                return True
            return sq in self._index() or sq in self._flat
        return _word_on_page(word, self.md)

    def covers(self, texts: Iterable[str]) -> bool:
        """Every line of every text is on the page (nothing to show counts as shown)."""
        return all(self.has(line) for text in texts for line in text.split("\n"))

    def __contains__(self, text: str) -> bool:
        return self.covers((text,))


def _payload_atoms(wp: WfPayload, seen: set[int]) -> Iterator[str]:
    if id(wp) in seen:
        return
    seen.add(id(wp))
    yield wp.headline
    yield wp.prompt
    for step in wp.steps:
        yield step.title
        for item in step.items:
            yield from _item_atoms(item, seen)


def _item_atoms(item: WfItem, seen: set[int]) -> Iterator[str]:
    kind = item.kind
    if kind in (TEXT, SOURCES):
        yield item.text.text
        for s in item.sources:
            yield s.name
            yield s.url
    elif kind == QUERIES:
        yield from item.queries
    elif kind == TODO_LIST:
        todo = item.todo
        yield todo.title
        yield from (e.description for e in todo.entries)
        # A change with its action and new status (as listed): a later snapshot of the
        # same list differs there, not in its entries.
        for c in todo.changes:
            yield f"{c.action.removeprefix('TODO_DIFF_').lower()} {c.description} {c.new_status}"
    elif kind == TABLE:
        yield from item.table.columns
        for row in item.table.rows:
            yield from row
    elif kind == USER_QUESTIONS:
        up = item.questions
        yield up.title
        yield from up.questions
        for f in up.fields:
            yield f.name
            for opt in f.options:
                yield opt.title
                yield opt.description
    elif kind == USER_RESPONSE:
        for r in item.replies:
            yield r.question
            yield r.answer
    elif kind == CONTENT:
        yield from item.entities
    elif kind == WORKFLOW:
        if item.workflow is not None:
            yield from _payload_atoms(item.workflow, seen)
    else:
        yield kind  # an unknown item shows only its kind


def item_atoms(item: WfItem) -> list[str]:
    """The content texts of a workflow item (nested payloads included)."""
    return list(_item_atoms(item, set()))


def _step_atoms(step: Step) -> Iterator[str]:
    kind, b = step.step_type, step.body
    if kind in ("INITIAL_QUERY", "FINAL", ""):
        return
    if kind in ("ASI_TOOL_INPUT", "ASI_TOOL_OUTPUT"):
        seen: set[int] = set()
        for item in b.items:
            yield from _item_atoms(item, seen)
    elif kind == "THOUGHT":
        yield b.text
    elif kind == "COUNCIL_RESEARCH":
        yield b.research_query
        for state in b.models:
            yield state.mock_thought
            yield state.answer
            for s in state.steps:
                yield from _step_atoms(s)
    else:
        # Every other kind: its typed fields (a kind that has none shows only its name).
        texts = [b.text, *b.queries, *b.urls, *b.names, b.title, b.file_name, b.url]
        texts += [b.script, b.stdout, b.stderr, b.caption]
        for link in [*b.links, *(src for _, src in b.numbered)]:
            texts += [link.name, link.url]
        texts += [img.url for img in b.images]
        texts = [t for t in texts if t.strip()]
        yield from texts if texts else [kind]


def step_atoms(steps: Sequence[Step]) -> list[str]:
    """The content texts of plain steps (council models' own steps included)."""
    return [t for step in steps for t in _step_atoms(step)]
