"""Citation markers: `[n]` in an answer resolves to the turn's n-th source (issue 15 §3)."""

from __future__ import annotations

import re

from pplx_export.models import Citation, Turn
from pplx_export.parse.citations import answer_sources
from pplx_export.render.cite import link_markers, numbered
from tests.reading_support import all_pages, tokens

A = Citation("A", "https://a.example/")
B = Citation("B", "https://b.example/")
C = Citation("C", "https://c.example/")
CITES = [(1, A), (2, B)]


def test_inline_markers_link_to_their_source() -> None:
    out = link_markers("Fact[1][2]. Other [9].", CITES, inline=True)
    assert out == "Fact[\\[1\\]](https://a.example/)[\\[2\\]](https://b.example/). Other [9]."


def test_reference_markers_stay_in_place_and_apart() -> None:
    # `[\[1\]][\[2\]]` would read as one link (text 1, target 2): a space keeps them two.
    assert link_markers("Fact[1][2].", CITES, inline=False) == "Fact[\\[1\\]] [\\[2\\]]."


def test_code_links_and_definitions_are_left_alone() -> None:
    md = "\n".join(
        [
            "Use `xs[1]` here [1].",
            "```",
            "ys[2] = 0 [1]",
            "```",
            "[1](https://x.example/) and [label][2] and \\[1] [1]: x",
        ]
    )
    out = link_markers(md, CITES, inline=True)
    lines = out.split("\n")
    assert lines[0] == "Use `xs[1]` here [\\[1\\]](https://a.example/)."
    assert lines[1:4] == ["```", "ys[2] = 0 [1]", "```"]
    assert lines[4] == "[1](https://x.example/) and [label][2] and \\[1] [1]: x"


def test_numbers_follow_the_answers_own_list() -> None:
    # Place 2 of the answer's list has no URL: it keeps its number, and the turn's other
    # citations are numbered after the list.
    turn = Turn(index=1, citations=[C, A], answer_sources=[A, Citation("", ""), B])
    assert numbered(turn) == [(1, A), (3, B), (4, C)]
    # Without the answer's own list the turn's citations are numbered in order.
    assert numbered(Turn(index=1, citations=[C, A])) == [(1, C), (2, A)]


def test_answer_sources_read_the_last_final_with_web_results() -> None:
    entry = {"sources": [{"url": "https://s.example/"}]}
    finals = [(None, {"web_results": [{"url": "https://w.example/"}, {"name": "no url"}]})]
    got = answer_sources(entry, finals)  # type: ignore[arg-type]
    assert [c.url for c in got] == ["https://w.example/", ""]
    assert [c.url for c in answer_sources(entry, [])] == ["https://s.example/"]


def _answer_markers(text: str) -> tuple[int, list[int]]:
    """(linked count, unlinked numbers) of the `[n]` markers in a turn file's Answer
    section, read as CommonMark over the whole page (the link definitions are at its end;
    code does not count)."""
    linked = 0
    unlinked: list[int] = []
    toks = tokens(text)
    in_answer = False
    for i, tok in enumerate(toks):
        if tok.type == "heading_open" and tok.tag == "h2":
            title = toks[i + 1].content
            if title in ("Answer", "Citations of this turn"):
                in_answer = title == "Answer"
            continue
        if not in_answer:
            continue
        depth = 0
        for child in tok.children or []:
            if child.type == "link_open":
                depth += 1
            elif child.type == "link_close":
                depth -= 1
            elif child.type == "text":
                found = [int(n) for n in re.findall(r"\[(\d{1,3})\]", child.content)]
                if depth:
                    linked += len(found)
                else:
                    unlinked += found
    return linked, unlinked


def test_every_answer_marker_resolves_to_a_link() -> None:
    linked_total = 0
    for name, rel, text in all_pages():
        if rel.startswith("turns/"):
            linked, unlinked = _answer_markers(text)
            # Only a number the turn has no source for stays text (one fixture answer
            # cites [3] of two sources).
            listed = {int(n) for n in re.findall(r"^- \\\[(\d+)\\\] ", text, re.MULTILINE)}
            assert not listed.intersection(unlinked), (name, rel, unlinked)
            linked_total += linked
    assert linked_total > 10  # the fixtures do cite


def test_sources_md_numbers_match_the_turn_files() -> None:
    for name, rel, text in all_pages():
        if rel != "sources.md":
            continue
        for section in text.split("\n## ")[1:]:
            head, _, body = section.partition("\n\n")
            # A turn's sources come from its turn file; those of the background runs no
            # turn claims, last, from conversation.md.
            turn_rel = re.search(r"\((turns/turn_\d{4}\.md|conversation\.md)\)", head)
            assert turn_rel, (name, head)
            turn_text = dict((r, t) for n, r, t in all_pages() if n == name)[turn_rel.group(1)]
            for line in body.strip().split("\n"):
                if line.startswith("### ") or not line:
                    continue  # where the sources came from: the answer, the work process
                if line.startswith("- \\["):
                    assert line in turn_text, (name, line)  # numbered as the answer's list
                else:
                    # A source of the work process: the same link is on the turn page.
                    assert line.removeprefix("- ") in turn_text, (name, line)


def test_the_sources_of_runs_no_turn_claims_are_listed_and_counted() -> None:
    # conversation.md shows the background runs no turn claims, with their sources: the
    # thread's sources.md lists those too, and the header counts them.
    listed = 0
    heading = re.compile(r"^## \[[^\]]*\]\(conversation\.md\)$", re.MULTILINE)
    for name, rel, text in all_pages():
        found = heading.search(text) if rel == "sources.md" else None
        if found is None:
            continue
        pages = {r: t for n, r, t in all_pages() if n == name}
        section = text[found.end() :]
        lines = [line[2:] for line in section.strip().split("\n") if line.startswith("- ")]
        assert lines and all(line in pages["conversation.md"] for line in lines), name
        for line in lines:
            assert not any(line in t for r, t in pages.items() if r.startswith("turns/"))
        items = [line for line in text.split("\n") if line.startswith("- ")]
        urls = set(re.findall(r"\]\((https?://[^)\s]+)\)", "\n".join(items)))
        head = pages["conversation.md"].split("\n## ", 1)[0]
        assert f"Sources: {len(urls)}" in head, (name, len(urls))
        listed += len(lines)
    assert listed >= 1
