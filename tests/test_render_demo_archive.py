"""The demo archive as a person reads it (issue 15): every Markdown file of a real export
(`pplx-export demo`: emulator, client, parser, renderer, writer, offline), read with a
CommonMark reader (markdown-it-py, tables on) and PyYAML.

Checks: front matter parses; no empty heading; no heading inside an answer at or above the
turn heading's level; every `[n]` marker in an answer is a link; every file under
`assets/files/` is linked (or embedded) from some page; every relative link resolves.
"""

from __future__ import annotations

import json
import re
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from urllib.parse import unquote

import pytest
from markdown_it.token import Token

from pplx_export.commands.setup.demo import run_demo
from pplx_export.render.labels import CATALOGS
from tests.reading_support import split_page, tokens

MARKER = re.compile(r"\[\d{1,3}\]")
THREAD_PAGE = re.compile(r"(conversation|sources|report)\.md|turns/turn_\d{4,}\.md")


@pytest.fixture(scope="module", params=["en", "zh"])
def demo(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """The demo archive, rendered with English and with Chinese labels."""
    root = tmp_path_factory.mktemp(f"demo-{request.param}") / "archive"
    run_demo(root, lang=request.param, quiet=True, progress=False)
    return root


def thread_dirs(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.rglob("thread.json"))


def pages(root: Path) -> Iterator[tuple[Path, str, str]]:
    """(thread dir, path relative to it, text) of every page the renderer wrote."""
    for tdir in thread_dirs(root):
        for path in sorted(tdir.rglob("*.md")):
            rel = path.relative_to(tdir).as_posix()
            if THREAD_PAGE.fullmatch(rel):
                yield tdir, rel, path.read_text(encoding="utf-8")


def inline_children(toks: list[Token]) -> Iterator[tuple[int, Token]]:
    """(index of the block token, child) for every inline child, in document order."""
    for i, tok in enumerate(toks):
        for child in tok.children or []:
            yield i, child


def headings(toks: list[Token]) -> list[tuple[int, int, str]]:
    """(token index, level, text) of every heading."""
    out = []
    for i, tok in enumerate(toks):
        if tok.type == "heading_open":
            out.append((i, int(tok.tag[1]), toks[i + 1].content.strip()))
    return out


def link_targets(toks: list[Token]) -> list[str]:
    out = []
    for _, child in inline_children(toks):
        if child.type == "link_open":
            out.append(str(child.attrs.get("href", "")))
        elif child.type == "image":
            out.append(str(child.attrs.get("src", "")))
    # Links inside raw HTML (<details> bodies are Markdown; a <summary> is HTML).
    for tok in toks:
        if tok.type in ("html_block", "html_inline"):
            out += re.findall(r'(?:href|src)="([^"]+)"', tok.content)
    return out


def answer_spans(rel: str, toks: list[Token]) -> list[tuple[int, int, int]]:
    """(first token, end token, turn heading level) of each answer on the page: from an
    Answer heading to the next heading of the page's own outline."""
    answer_names = {lb.answer for lb in CATALOGS.values()}
    turn_level = 1 if rel.startswith("turns/") else 2
    section_level = turn_level + 1
    hs = headings(toks)
    spans = []
    for n, (i, level, text) in enumerate(hs):
        if level == section_level and text in answer_names:
            end = len(toks)
            for j, lvl, _ in hs[n + 1 :]:
                if lvl <= section_level:
                    end = j
                    break
            spans.append((i + 3, end, turn_level))
    return spans


def test_front_matter_parses_as_yaml(demo: Path) -> None:
    seen = 0
    for tdir, rel, text in pages(demo):
        meta, _ = split_page(text)
        assert meta.get("uuid") and meta.get("title"), (tdir.name, rel)
        seen += 1
    assert seen > 40


def test_no_empty_heading(demo: Path) -> None:
    empty = []
    for tdir, rel, text in pages(demo):
        for _, level, content in headings(tokens(text)):
            # A heading that is only its label and number ("Step 3") says nothing either.
            if not content or (re.fullmatch(r"\S+ \d+", content) and level >= 3):
                empty.append((tdir.name, rel, level, content))
    assert not empty


def test_no_heading_inside_an_answer_at_or_above_the_turn_level(demo: Path) -> None:
    bad = []
    answers = 0
    for tdir, rel, text in pages(demo):
        toks = tokens(text)
        for start, end, turn_level in answer_spans(rel, toks):
            answers += 1
            for i in range(start, end):
                tok = toks[i]
                if tok.type == "heading_open" and int(tok.tag[1]) <= turn_level + 1:
                    bad.append((tdir.name, rel, toks[i + 1].content))
    assert answers > 20
    assert not bad


def imported(tdir: Path, text: str) -> bool:
    """Text of a turn only Perplexity's data export holds: it has no sources, so its
    markers stay text (said in a note under the answer)."""
    try:
        raw = json.loads((tdir / "raw_official_export.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return False
    return any(text.strip() in entry["answer"] for entry in raw["entries"])


def test_every_citation_marker_in_an_answer_is_a_link(demo: Path) -> None:
    loose = []
    markers = 0
    for tdir, rel, text in pages(demo):
        toks = tokens(text)
        for start, end, _ in answer_spans(rel, toks):
            for tok in toks[start:end]:
                depth = 0
                for child in tok.children or []:
                    if child.type == "link_open":
                        depth += 1
                    elif child.type == "link_close":
                        depth -= 1
                    elif child.type == "text":
                        found = MARKER.findall(child.content)
                        markers += len(found)
                        if depth == 0 and found and not imported(tdir, child.content):
                            loose.append((tdir.name, rel, child.content))
    assert markers > 5, "the demo's answers carry citation markers"
    assert not loose


def _resolve(rel: str, target: str) -> str | None:
    """`target` (a link on the page at `rel`) relative to the thread directory; None for
    links that leave the thread (URLs, anchors)."""
    if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
        return None
    path = PurePosixPath(rel).parent / unquote(target.split("#")[0])
    parts: list[str] = []
    for part in path.parts:
        if part == "..":
            if not parts:
                return "../"  # outside the thread
            parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts)


def test_every_asset_file_is_linked_and_every_relative_link_resolves(demo: Path) -> None:
    linked: dict[Path, set[str]] = {}
    broken = []
    for tdir, rel, text in pages(demo):
        for target in link_targets(tokens(text)):
            resolved = _resolve(rel, target)
            if resolved is None or resolved.startswith("../"):
                continue
            linked.setdefault(tdir, set()).add(resolved)
            if not (tdir / resolved).exists():
                broken.append((tdir.name, rel, target))
    assert not broken
    files = 0
    unlinked = []
    for tdir in thread_dirs(demo):
        folder = tdir / "assets" / "files"
        for path in sorted(folder.glob("*")) if folder.is_dir() else []:
            files += 1
            rel = path.relative_to(tdir).as_posix()
            if rel not in linked.get(tdir, set()):
                unlinked.append((tdir.name, rel))
    assert files >= 5, "the demo ships charts, documents, code files and report versions"
    assert not unlinked


def test_downloaded_files_have_the_mode_of_the_other_files(demo: Path) -> None:
    """A downloaded asset body (a temp file renamed into place) reads like its neighbours:
    the same permission bits as conversation.md, not owner-only."""
    odd = []
    files = 0
    for tdir in thread_dirs(demo):
        page_mode = stat.S_IMODE((tdir / "conversation.md").stat().st_mode)
        folder = tdir / "assets" / "files"
        for path in sorted(folder.glob("*")) if folder.is_dir() else []:
            files += 1
            mode = stat.S_IMODE(path.stat().st_mode)
            if mode != page_mode:
                odd.append((tdir.name, path.name, oct(mode), oct(page_mode)))
    assert files >= 5
    assert not odd
