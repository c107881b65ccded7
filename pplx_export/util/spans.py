"""Rewriting a text around the spans a pattern protects."""

from __future__ import annotations

import re
from collections.abc import Callable


def outside(text: str, keep: re.Pattern[str], rewrite: Callable[[str], str]) -> str:
    """`text` with `rewrite` applied to each stretch between the matches of `keep`; the
    matches themselves stay verbatim (code spans in prose, placeholders in shaped text)."""
    out: list[str] = []
    pos = 0
    for m in keep.finditer(text):
        out.append(rewrite(text[pos : m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(rewrite(text[pos:]))
    return "".join(out)
