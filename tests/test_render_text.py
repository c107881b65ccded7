"""Text helpers: escaping, fences, links, timestamps."""

from __future__ import annotations

from pplx_export.render.text import (
    cell,
    fence_for,
    fenced,
    finish,
    link,
    model_links,
    quote,
    step_time,
    summary_text,
    time_range,
    ts,
)


def test_ts_formats_utc_and_rejects_non_ints() -> None:
    assert ts(2082240000000000) == "2035-12-26 00:00 UTC"
    assert ts(None) == ""
    assert ts("2082240000000000") == ""
    assert ts(True) == ""


def test_step_time_and_range() -> None:
    assert step_time("2035-12-26T00:00:12.123+00:00") == "2035-12-26 00:00:12"
    assert step_time("") == ""
    assert time_range("2035-12-26T00:00:12", "2035-12-26T00:00:13") == (
        " — 2035-12-26 00:00:12 → 2035-12-26 00:00:13"
    )
    assert time_range("2035-12-26T00:00:12", "2035-12-26T00:00:12.9") == ""
    assert time_range("", "2035-12-26T00:00:12") == ""
    assert time_range("2035-12-26T00:00:12", "") == " — 2035-12-26 00:00:12 → ?"


def test_quote_keeps_blank_lines_inside_the_quote() -> None:
    assert quote("a\n\nb") == "> a\n>\n> b"


def test_fence_for_is_longer_than_any_backtick_run() -> None:
    assert fence_for("plain") == "```"
    assert fence_for("x ``` y") == "````"
    assert fence_for("````\n`````") == "``````"


def test_fenced_tool_output_with_fences_cannot_close_early() -> None:
    body = "```python\nprint(1)\n```\n````\nraw\n````"
    out = fenced(body)
    fence = out.split("\n", 1)[0]
    assert fence == "`````"
    assert out.endswith("\n`````")
    assert body in out
    assert fenced("x\n\n\n", "py") == "```py\nx\n```"


def test_link_escapes_brackets_and_odd_urls() -> None:
    assert link("a [b] c", "https://x.org/a") == "[a \\[b\\] c](https://x.org/a)"
    assert link("", "https://x.org/a b") == "[https://x.org/a b](<https://x.org/a b>)"
    assert link("two\nlines", "https://x.org/(p)") == "[two lines](<https://x.org/(p)>)"


def test_model_links_become_bold_labels() -> None:
    md = "see [GPT](pplx://action/model_info?id=g&provider=o) and [site](https://x.org)"
    assert model_links(md) == "see **GPT** and [site](https://x.org)"


def test_table_cell_escapes_pipes_newlines_and_backslashes() -> None:
    assert cell("a|b") == "a\\|b"
    assert cell("one\ntwo\r\nthree") == "one<br>two<br>three"
    assert cell("x\\|y") == "x\\\\\\|y"
    long = "z" * 5000
    assert cell(long) == long  # never truncated


def test_summary_text_defuses_tags_only() -> None:
    assert summary_text("a <b>x</b> 1 < 2") == "a &lt;b>x&lt;/b> 1 < 2"
    assert summary_text("multi\nline") == "multi line"


def test_finish_ends_with_exactly_one_newline() -> None:
    assert finish("x\n\n\n") == "x\n"
    assert finish("x") == "x\n"
    assert finish("a\r\nb\rc") == "a\nb\nc\n"
