"""Is a text already on the page? The check behind every "shown once" decision."""

from __future__ import annotations

import re

from pplx_export.render.text import SQUASH_SURE, squash, squashed_on_page


class Shown:
    """Is a text already on the page? Compared on letters and digits only; short texts must
    appear verbatim as whole words, so "ok" is not hidden by "broken"."""

    def __init__(self, md: str) -> None:
        self.md = md
        self._squashed: str | None = None

    @property
    def squashed(self) -> str:
        # Squashing the whole page is most of a check's cost, and most checks never need it
        # (see the verbatim test below): done on first need.
        if self._squashed is None:
            self._squashed = squash(self.md)
        return self._squashed

    def __contains__(self, text: str) -> bool:
        sq = squash(text)
        if not sq:
            return True
        if len(sq) >= SQUASH_SURE:
            # Most checks find the text verbatim; the squashed page is made on first need.
            return squashed_on_page(text, sq, self.md) or sq in self.squashed
        word = text.strip()
        if word not in self.md:  # a plain substring test first: the regex scans the page
            return False
        pattern = r"(?<!\w)" + re.escape(word) + r"(?!\w)"
        return re.search(pattern, self.md) is not None
