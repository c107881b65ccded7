"""LaTeX delimiter normalisation with code protection (protocol §6.10)."""

from __future__ import annotations

from pplx_export.render.latex import norm, split_code


def test_inline_and_display_math() -> None:
    assert norm(r"area \( \pi r^2 \) ok") == "area $\\pi r^2$ ok"
    assert norm("\\[\n  E = mc^2\n\\]") == "$$\nE = mc^2\n$$"


def test_empty_citation_placeholder_is_dropped() -> None:
    assert norm(r"fact\[\] here") == "fact here"


def test_mixed_residues() -> None:
    assert norm(r"\(a+b$ end") == "$a+b$ end"
    assert norm(r"$a+b\) end") == "$a+b$ end"
    assert norm("\\(a+b\\） end") == "$a+b$ end"


def test_code_fences_and_inline_code_are_protected() -> None:
    md = "x \\(a\\)\n```\n\\(keep\\)\n```\ny `\\(keep\\)` \\(b\\)"
    assert norm(md) == "x $a$\n```\n\\(keep\\)\n```\ny `\\(keep\\)` $b$"


def test_longer_fence_needs_as_long_a_closer() -> None:
    md = "````\n```\n\\(keep\\)\n````\n\\(z\\)"
    assert norm(md) == "````\n```\n\\(keep\\)\n````\n$z$"


def test_unclosed_fence_protects_the_rest() -> None:
    md = "\\(a\\)\n```\n\\(keep\\)"
    assert norm(md) == "$a$\n```\n\\(keep\\)"


def test_split_code_round_trips() -> None:
    md = "a ``` b ```` c ``` d"
    assert "".join(seg for _, seg in split_code(md)) == md


def test_text_without_backslashes_is_unchanged() -> None:
    md = "price $5 and `code`"
    assert norm(md) is md
