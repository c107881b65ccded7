"""Faster render helpers give exactly what their plain definitions give."""

from __future__ import annotations

import json
import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pplx_export.render.shown import Shown
from pplx_export.render.text import (
    join_blocks,
    link,
    model_links,
    one_line,
    outside_fences,
    quote,
    squash,
    squash_lines,
    squashed_on_page,
)
from pplx_export.util.lenient import decode_json

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
        "·",
        "…",
        "\ud800",
        "\x00",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES | st.text(max_size=4), max_size=30).map("".join))
def test_squash_matches_its_definition(text: str) -> None:
    assert squash(text) == _squash_by_definition(text)


@pytest.mark.slow
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


_FENCE_BY_DEFINITION = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _outside_fences_by_definition(lines: list[str]) -> list[tuple[int, str]]:
    # Line by line: a fence line opens a block, or closes the open one when it has the
    # block's character and is at least as long.
    out: list[tuple[int, str]] = []
    fence = ""
    for n, line in enumerate(lines):
        m = _FENCE_BY_DEFINITION.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = ""
        elif m:
            fence = m.group(1)
        else:
            out.append((n, line))
    return out


_FENCE_PIECES = st.sampled_from(
    ["```", "````", "~~~", "~~~~", "``", "   ", "    ", "a", "# h", "`", "~", "python"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_FENCE_PIECES, max_size=3).map("".join), max_size=12))
def test_outside_fences_matches_its_definition(lines: list[str]) -> None:
    assert list(outside_fences(lines)) == _outside_fences_by_definition(lines)


def test_outside_fences_examples() -> None:
    # Only a longer or equal fence of the same character closes one.
    lines = ["a", "````", "b", "~~~", "```", "c", "````", "d", "~~~", "e", "~~~~", "f"]
    assert list(outside_fences(lines)) == [(0, "a"), (7, "d"), (11, "f")]
    assert list(outside_fences(["x", "~~~~", "y", "~~~"])) == [(0, "x")]  # unclosed: code


_LINK_TEXT_SPECIAL = re.compile(r"([\[\]\\])")
_MODEL_LINK = re.compile(r"\[([^\]]+)\]\(pplx://action/[^)]+\)")


def _link_by_definition(name: str, url: str) -> str:
    text = _LINK_TEXT_SPECIAL.sub(r"\\\1", one_line(name or url))
    url = url.strip()
    if any(c in url for c in " ()<>"):
        url = "<" + url.replace("<", "%3C").replace(">", "%3E") + ">"
    return f"[{text}]({url})"


_MD_PIECES = st.sampled_from(
    [
        "[",
        "]",
        "\\",
        "a",
        " ",
        "(",
        ")",
        "<",
        ">",
        "\n",
        "\x1c",
        "\x85",
        "\xa0",
        "\u3000",
        "pplx://action/",
        "(pplx://action/model_info?x)",
        "[Model]",
        "\t",
    ]
)
_MD = st.lists(_MD_PIECES | st.text(max_size=3), max_size=12).map("".join)


@settings(max_examples=300, deadline=None)
@given(_MD, _MD)
def test_link_matches_its_definition(name: str, url: str) -> None:
    assert link(name, url) == _link_by_definition(name, url)


@settings(max_examples=300, deadline=None)
@given(_MD)
def test_model_links_matches_its_definition(md: str) -> None:
    assert model_links(md) == _MODEL_LINK.sub(r"**\1**", md)


@settings(max_examples=300, deadline=None)
@given(st.lists(_MD, max_size=5))
def test_join_blocks_matches_its_definition(blocks: list[str]) -> None:
    expected = "\n\n".join(b.strip("\n") for b in blocks if b and b.strip())
    assert join_blocks(blocks) == expected


def test_link_and_model_link_examples() -> None:
    assert link("a [b] \\c", "https://x/(y)") == "[a \\[b\\] \\\\c](<https://x/(y)>)"
    assert model_links("see [GPT](pplx://action/model_info?id=1)") == "see **GPT**"
    assert join_blocks(["\nA\n", " \x1c ", "", "B"]) == "A\n\nB"


def _shown_by_definition(md: str, text: str) -> bool:
    """The "already on the page?" rule as first written, line by line (each line of a text
    is one content atom): squash both sides every time."""
    for line in text.split("\n"):
        sq = squash(re.sub(r"\]\(pplx://[^)]*\)", "]", line))
        if not sq:
            continue
        if len(sq) >= 8:
            if sq not in squash(md):
                return False
            continue
        word = line.strip()
        if re.search(r"(?<!\w)" + re.escape(word) + r"(?!\w)", md) is None:
            return False
    return True


_PAGE_PIECES = st.sampled_from(
    [
        "<details>",
        "</details>",
        "<summary>",
        "</summary>",
        "<br>",
        "<",
        ">",
        "details",
        "summary",
        " ",
        "\n",
        "**",
        "Straße",
        "STRASSE",
        "Σ",
        "ς",
        "abcdefgh",
        "ABCDEFGH",
        "tool output 12",
        "- ",
        "é",
        "\u0301",
    ]
)
_PAGE = st.lists(_PAGE_PIECES | st.text(max_size=3), max_size=25).map("".join)


@settings(max_examples=int(os.environ.get("PPLX_SHOWN_EXAMPLES", "500")), deadline=None)
@given(_PAGE, st.data())
def test_shown_matches_its_definition(md: str, data: st.DataObject) -> None:
    # Texts cut from the page itself (the verbatim fast path) and made up ones.
    start = data.draw(st.integers(0, len(md)))
    end = data.draw(st.integers(start, len(md)))
    for text in (md[start:end], data.draw(_PAGE)):
        assert (text in Shown(md)) == _shown_by_definition(md, text), (md, text)


@settings(max_examples=int(os.environ.get("PPLX_SHOWN_EXAMPLES", "500")), deadline=None)
@given(_PAGE)
def test_squash_lines_is_squash_of_each_line(md: str) -> None:
    assert squash_lines(md) == [squash(line) for line in md.split("\n")]


@settings(max_examples=int(os.environ.get("PPLX_SHOWN_EXAMPLES", "500")), deadline=None)
@given(_PAGE, st.data())
def test_squashed_on_page_is_sufficient(page: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(page)))
    end = data.draw(st.integers(start, len(page)))
    text = page[start:end]
    if squashed_on_page(text, squash(text), page):
        assert squash(text) in squash(page), (page, text)


def test_squash_own_marks_are_non_word() -> None:
    from pplx_export.render.text import _OWN_MARKS

    assert all(_NON_WORD.fullmatch(mark) for mark in _OWN_MARKS)
    assert squash("Step 2 · **Run** — 12:00 → 12:05 …é") == "step2run12001205é"


def _decode_json_by_definition(value: str) -> object:
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return None


_JSON_PIECES = st.sampled_from(
    [
        '{"a": 1}',
        "[1, 2]",
        '"s"',
        "1",
        "1.5",
        "-0",
        "1e400",
        "NaN",
        "true",
        "null",
        " ",
        "\n",
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        '"',
        "\\",
        "\\u00e9",
        "x",
        "[[[[",
        "]]]]",
        '{"a":',
    ]
)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None)
@given(
    st.lists(_JSON_PIECES | st.text(max_size=3), max_size=8).map("".join)
    | st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=3),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner),
        max_leaves=10,
    ).map(json.dumps)
)
def test_decode_json_matches_json_loads(value: str) -> None:
    got, want = decode_json(value), _decode_json_by_definition(value)
    assert json.dumps(got) == json.dumps(want), value  # NaN-safe comparison
    assert decode_json("[" * 100_000) is None  # too deep: None, not a crash
