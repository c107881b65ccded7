"""LaTeX delimiter normalisation `\\(..\\)` / `\\[..\\]` -> `$` / `$$` (protocol.md §6.10).

Code is protected: fenced blocks (any run of 3+ backticks opens one, a run at least as long
closes it, an unclosed fence runs to the end) and inline code spans stay verbatim.
"""

from __future__ import annotations

import re

from pplx_export.util.spans import outside

_FENCE = re.compile(r"`{3,}")
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_EMPTY_CITATION = re.compile(r"\\\[\\\]")
_DISPLAY = re.compile(r"\\\[(.+?)\\\]", re.DOTALL)
_INLINE = re.compile(r"\\\((.+?)\\\)", re.DOTALL)
_MIXED_OPEN = re.compile(r"\\\(([^$\n]+?)\$(?!\$)")
_MIXED_CLOSE = re.compile(r"\$([^$\n]+?)\\\)")
_MIXED_FULLWIDTH = re.compile(r"\\\(([^$\n]+?)\\）")


def _prose(text: str) -> str:
    text = _EMPTY_CITATION.sub("", text)
    text = _DISPLAY.sub(lambda m: "$$\n" + m.group(1).strip() + "\n$$", text)
    text = _INLINE.sub(lambda m: "$" + m.group(1).strip() + "$", text)
    text = _MIXED_OPEN.sub(lambda m: "$" + m.group(1) + "$", text)
    text = _MIXED_CLOSE.sub(lambda m: "$" + m.group(1) + "$", text)
    return _MIXED_FULLWIDTH.sub(lambda m: "$" + m.group(1) + "$", text)


def _prose_with_spans(text: str) -> str:
    return outside(text, _INLINE_CODE, _prose)


def split_code(text: str) -> list[tuple[bool, str]]:
    """(is_code, segment) pieces; concatenating the segments gives back `text`."""
    parts: list[tuple[bool, str]] = []
    pos = 0
    while True:
        opener = _FENCE.search(text, pos)
        if opener is None:
            parts.append((False, text[pos:]))
            return parts
        parts.append((False, text[pos : opener.start()]))
        width = len(opener.group(0))
        end = len(text)
        scan = opener.end()
        while True:
            closer = _FENCE.search(text, scan)
            if closer is None:
                break
            if len(closer.group(0)) >= width:
                end = closer.end()
                break
            scan = closer.end()
        parts.append((True, text[opener.start() : end]))
        if end >= len(text):
            return parts
        pos = end


def norm(md: str) -> str:
    """Normalise LaTeX delimiters outside code."""
    if "\\" not in md:
        return md
    return "".join(seg if code else _prose_with_spans(seg) for code, seg in split_code(md))
