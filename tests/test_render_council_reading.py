"""A council turn read as a person's tools read it (issue 34, "council you can follow").

The turn file is parsed as CommonMark (+ GFM tables) and checked for structure, in both
flavours and both languages, on every council thread the project ships (the fixture archive,
the emulator sample that `pplx-export demo` exports) and on the shared corpus when present:

* each model's search is a run of labelled rounds, each with its own query list and its own
  source list (never one merged list);
* every `[n]` link in a model's answer points at the n-th source of that model's own list;
* each model's step-log entries lie inside that model's fold;
* a table of the models' conclusions has one row per model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from markdown_it.token import Token

from pplx_export.models import Conversation, WfPayload
from pplx_export.parse.views import QUERIES, SOURCES
from pplx_export.render import OBSIDIAN, render_thread
from pplx_export.render.council import council_payloads
from pplx_export.render.labels import labels_for
from pplx_export.render.text import GITHUB
from tests.reading_support import load, thread_dirs, tokens

CORPUS = Path(__file__).resolve().parents[2] / "shared/corpus/archive"


def _council_dirs() -> list[Path]:
    dirs = [d for d in thread_dirs() if "/council/" in d.as_posix()]
    if CORPUS.is_dir():
        dirs += sorted(p.parent for p in CORPUS.rglob("*/council/*/raw_entries.json"))
    return dirs


@dataclass
class Fold:
    summary: str
    base: int  # the nesting level of the fold's own blocks
    toks: list[Token] = field(default_factory=list)  # every token inside, nested folds too
    top: list[Token] = field(default_factory=list)  # the tokens not inside a nested fold


def _folds(toks: list[Token], flavor: str) -> tuple[list[Fold], list[Token]]:
    """(every fold of the page: <details> or an obsidian callout; the tokens outside)."""
    out: list[Fold] = []
    outside: list[Token] = []
    stack: list[Fold] = []
    quotes: list[bool] = []  # obsidian: for each open blockquote, is it a callout
    for i, t in enumerate(toks):
        if flavor == GITHUB and t.type == "html_block" and "<details>" in t.content:
            m = re.search(r"<summary>(.*)</summary>", t.content)
            stack.append(Fold(m.group(1) if m else "", t.level))
            out.append(stack[-1])
            continue
        if flavor == GITHUB and t.type == "html_block" and "</details>" in t.content:
            stack.pop()
            continue
        if flavor == OBSIDIAN and t.type == "blockquote_open":
            nxt = toks[i + 2] if i + 2 < len(toks) else None
            callout = nxt is not None and nxt.type == "inline" and "[!note]-" in nxt.content
            quotes.append(callout)
            if callout and nxt is not None:
                stack.append(Fold(nxt.content.split("\n", 1)[0], t.level + 1))
                out.append(stack[-1])
                continue
        if flavor == OBSIDIAN and t.type == "blockquote_close" and quotes.pop():
            stack.pop()
            continue
        for fold in stack:
            fold.toks.append(t)
        if stack:
            stack[-1].top.append(t)
        else:
            outside.append(t)
    return out, outside


def _text(toks: list[Token]) -> str:
    return "\n".join(t.content for t in toks if t.type == "inline")


def _links(inline: Token) -> list[tuple[str, str]]:
    """(text, href) of the links of an inline token."""
    out, href, text = [], "", ""
    for c in inline.children or []:
        if c.type == "link_open":
            href, text = str(c.attrs.get("href", "")), ""
        elif c.type in ("text", "code_inline") and href:
            text += c.content
        elif c.type == "link_close":
            out.append((text, href))
            href = ""
    return out


@dataclass
class Round:
    queries: list[str] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)


def _expected_rounds(wp: WfPayload) -> list[Round]:
    """The model's query -> sources cycles, read from its payload (a round ends where a
    query follows sources)."""
    rounds: list[Round] = []
    for step in wp.steps:
        cur = Round()
        for item in step.items:
            if item.kind == QUERIES and item.queries:
                if cur.urls:
                    rounds.append(cur)
                    cur = Round()
                cur.queries += item.queries
            elif item.kind == SOURCES:
                cur.urls += [s.url for s in item.sources if s.url]
        if cur.queries or cur.urls:
            rounds.append(cur)
    return rounds


def _model_fold(folds: list[Fold], model: str) -> Fold:
    found = [f for f in folds if f"`{model}`" in _text(f.top)[:300]]
    assert len(found) == 1, model
    return found[0]


def _rounds_read(fold: Fold, round_label: str) -> list[Round]:
    """The rounds as the page shows them: a paragraph labelled "Round k", then its query
    list and its source list, up to the next paragraph of the fold."""
    prefix = "**" + round_label.split("{n}")[0]
    rounds: list[Round] = []
    kind = ""
    for t in fold.top:
        if t.type == "inline" and t.level == fold.base + 1:
            if t.content.startswith(prefix):
                rounds.append(Round())
                kind = "label"
            else:
                kind = ""
        elif not kind:
            continue
        elif t.type in ("bullet_list_open", "ordered_list_open") and t.level == fold.base:
            # A second query list or a list after the sources: not one round's any more.
            assert kind in ("label", "bullet_list_open") and kind != t.type, t.type
            kind = t.type
        elif t.type == "inline" and t.level == fold.base + 3 and kind == "bullet_list_open":
            rounds[-1].queries.append(t.content.strip("`"))
        elif t.type == "inline" and t.level == fold.base + 3 and kind == "ordered_list_open":
            rounds[-1].urls += [href for _, href in _links(t)][:1]
    return rounds


def _numbered(fold: Fold, answer_label: str) -> dict[int, str]:
    """n -> URL of the fold's numbered source lists (their `start` counts), above the
    model's answer (whose own ordered lists are not sources)."""
    out: dict[int, str] = {}
    n = 0
    in_ol = False
    for t in fold.top:
        if t.type == "inline" and t.content == answer_label:
            break
        if t.type == "ordered_list_open" and t.level == fold.base:
            in_ol, n = True, int(t.attrs.get("start", 1) or 1)
        elif t.type == "ordered_list_close" and t.level == fold.base:
            in_ol = False
        elif in_ol and t.type == "inline" and t.level == fold.base + 3:
            links = _links(t)
            if links:
                out[n] = links[0][1]
            n += 1
    return out


_MARKER_TEXT = re.compile(r"^\[?(\d{1,3})\]?$")


def _check(conv: Conversation, page: str, lang: str, flavor: str) -> None:
    lb = labels_for(lang)
    folds, outside = _folds(tokens(page), flavor)
    turn = conv.turns[0]
    assert turn.workflow is not None
    payloads = [
        wp
        for step in turn.workflow.steps
        if step.tool_name == "council_research"
        for wp in council_payloads(step)
    ]
    assert payloads
    # One table of the models' conclusions, outside the folds: a row per model.
    label = [i for i, t in enumerate(outside) if t.content == f"**{lb.council_compare}{lb.colon}**"]
    assert len(label) == 1
    table = outside[label[0] + 2 :]
    assert table[0].type == "table_open"
    end = next(i for i, t in enumerate(table) if t.type == "table_close")
    rows = [t for t in table[:end] if t.type == "tr_open"]
    assert len(rows) == 1 + len(payloads)  # the header and one row per model
    names = _text(table[:end])
    assert all(conv.sub_agents[wp.model].headline in names for wp in payloads)
    for wp in payloads:
        fold = _model_fold(folds, wp.model)
        # Each round its own labelled block, its queries with the sources they found.
        assert _rounds_read(fold, lb.round_) == _expected_rounds(wp), wp.model
        # Each [n] link of the model's answer points at the n-th of the model's sources.
        numbered = _numbered(fold, f"**{lb.model_answer}{lb.colon}**")
        answer = conv.sub_agents[wp.model].answer
        expected = sum(
            1 for m in re.finditer(r"\[(\d{1,3})\]", answer) if int(m.group(1)) in numbered
        )
        markers = 0
        for t in fold.toks:
            if t.type != "inline":
                continue
            for text, href in _links(t):
                m = _MARKER_TEXT.match(text)
                if m:
                    assert href == numbered[int(m.group(1))], (wp.model, text)
                    markers += 1
        assert markers == expected, wp.model
    # The step log's entries for a model lie in that model's fold.
    for step in turn.steps:
        for state in step.body.models:
            fold = _model_fold(folds, state.model)
            inside = _text(fold.toks)
            for s in state.steps:
                for q in s.body.queries:
                    assert q in inside, (state.model, q)
    assert f"## {lb.step_log}" not in _text(outside) or not any(
        s.step_type == "COUNCIL_RESEARCH" and s.body.models for s in turn.steps
    )


@pytest.mark.parametrize("flavor", [GITHUB, OBSIDIAN])
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("tdir", _council_dirs(), ids=lambda p: p.name)
def test_a_council_turn_reads_as_rounds_links_folds_and_a_table(
    tdir: Path, lang: str, flavor: str
) -> None:
    conv = load(tdir)
    page = render_thread(conv, lang, flavor)["turns/turn_0001.md"]
    _check(conv, page, lang, flavor)


def test_the_corpus_and_the_demo_have_a_council_thread() -> None:
    names = [d.as_posix() for d in _council_dirs()]
    assert any("/emulator/sample/" in n for n in names)
    if CORPUS.is_dir():
        assert any(n.startswith(CORPUS.as_posix()) for n in names)
