"""Faster render helpers give exactly what their plain definitions give."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from pplx_export.render.text import quote, squash

_NON_WORD = re.compile(r"[\W_]+")
_LAYOUT_TAG = re.compile(r"</?(?:details|summary|br)>")


def _squash_by_definition(text: str) -> str:
    return _NON_WORD.sub("", _LAYOUT_TAG.sub("", text)).casefold()


# Letters, digits, punctuation, layout-tag pieces and awkward Unicode (case folding that
# expands, combining marks, non-ASCII digits, lone surrogates).
_PIECES = st.sampled_from(
    [
        "a",
        "Z",
        "9",
        "_",
        "-",
        " ",
        "\n",
        "<",
        ">",
        "/",
        "details",
        "summary",
        "br",
        "é",
        "ß",
        "ẞ",
        "İ",
        "١",
        "²",
        "Ⅷ",
        "Ａ",
        "\u0300",
        "\u200d",
        "—",
        "→",
        "\ud800",
        "\x00",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES | st.text(max_size=4), max_size=30).map("".join))
def test_squash_matches_its_definition(text: str) -> None:
    assert squash(text) == _squash_by_definition(text)


def test_squash_every_code_point() -> None:
    for cp in range(0x110000):
        ch = chr(cp)
        assert squash(f"x{ch}<br>Y") == _squash_by_definition(f"x{ch}<br>Y"), hex(cp)


def test_squash_examples() -> None:
    assert squash("**Done** <details><summary>Straße</summary>") == "donestrasse"
    assert squash("— → ·") == ""


def _quote_by_definition(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.split("\n"))


_LINE_PIECES = st.sampled_from(["\n", " ", ">", "> ", "a", "\r", "\u2028", "\x85", "\x0b", "$"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINE_PIECES | st.text(max_size=3), max_size=20).map("".join))
def test_quote_matches_its_definition(text: str) -> None:
    assert quote(text) == _quote_by_definition(text)


def test_quote_examples() -> None:
    assert quote("") == ">"
    assert quote("a\n\n b\n") == "> a\n>\n>  b\n>"
