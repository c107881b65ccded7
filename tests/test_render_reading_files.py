"""Issue 34 points 6 and 7 on the demo archive, in both flavours and both languages, read as a
person's tools read it: CommonMark (markdown-it-py) for links and images, Obsidian's
wikilinks and footnotes by their syntax.

* every relative link and embed resolves to a file of the thread;
* a Files list never names two different files alike (counted repeats);
* the chart the answer shows inline is embedded there, from the archive;
* obsidian: every `[^n]` has exactly one `[^n]: [title](url)` on its page, and each
  definition is used; github: no footnote syntax at all;
* every page's front matter names the page in `aliases` (note titles unique in a vault).

The checks are functions of a rendered page, so they can be run on any archive.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from urllib.parse import unquote

import pytest

from pplx_export.commands.setup.demo import run_demo
from pplx_export.models import Citation, Conversation, Turn
from pplx_export.parse.views import attach_views
from pplx_export.render import OBSIDIAN, render_thread
from pplx_export.render.labels import CATALOGS
from tests.reading_support import split_page, tokens
from tests.render_samples import T0

THREAD_PAGE = re.compile(r"(conversation|sources|report)\.md|turns/turn_\d{4,}\.md")
WIKILINK = re.compile(r"!?\[\[([^\]|\\]+)(?:\\?\|[^\]]*)?\]\]")
FOOTNOTE_REF = re.compile(r"\[\^([^\]\s]+)\](?!:)")
FOOTNOTE_DEF = re.compile(r"^\[\^([^\]\s]+)\]: (.*)$", re.MULTILINE)
WEB_LINK = re.compile(r"^\[.+\]\( ?(?:https?://\S+|<https?://[^>]+>) ?\)$")
SIZE = re.compile(r" · \d+(?:\.\d)? (?:B|KB|MB|GB|TB)\b")


@pytest.fixture(scope="module", params=[("en", "github"), ("zh", "obsidian"), ("en", "obsidian")])
def demo(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    lang, flavor = request.param
    root = tmp_path_factory.mktemp(f"demo-{lang}-{flavor}") / "archive"
    run_demo(root, lang=lang, flavor=flavor, quiet=True, progress=False)
    return root


def thread_pages(root: Path) -> Iterator[tuple[Path, str, str]]:
    for tdir in sorted(p.parent for p in root.rglob("thread.json")):
        for path in sorted(tdir.rglob("*.md")):
            rel = path.relative_to(tdir).as_posix()
            if THREAD_PAGE.fullmatch(rel):
                yield tdir, rel, path.read_text(encoding="utf-8")


def relative_targets(text: str) -> list[str]:
    """Every link and image target a reader can follow, Markdown (read by markdown-it-py)
    or wikilink, that stays inside the archive."""
    out: list[str] = []
    for tok in tokens(text):
        for child in tok.children or []:
            if child.type == "link_open":
                out.append(str(child.attrs.get("href", "")))
            elif child.type == "image":
                out.append(str(child.attrs.get("src", "")))
        if tok.type in ("html_block", "html_inline"):
            out += re.findall(r'(?:href|src)="([^"]+)"', tok.content)
    out += [m.group(1) for m in WIKILINK.finditer(text)]
    return [t for t in out if not re.match(r"[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]


def broken_links(tdir: Path, rel: str, text: str) -> list[str]:
    broken = []
    for target in relative_targets(text):
        path = PurePosixPath(rel).parent / unquote(target.split("#")[0])
        if not (tdir / path).exists():
            broken.append(target)
    return broken


def footnote_faults(text: str) -> list[str]:
    """What a reader of footnotes would trip on: a reference without exactly one definition,
    a definition nothing refers to, a definition that is not a link to the source."""
    body = FOOTNOTE_DEF.sub("", text)
    refs = Counter(m.group(1) for m in FOOTNOTE_REF.finditer(body))
    defs = Counter(m.group(1) for m in FOOTNOTE_DEF.finditer(text))
    faults = [f"[^{k}] defined {defs[k]} times" for k in refs if defs[k] != 1]
    faults += [f"[^{k}] never used" for k in defs if k not in refs]
    faults += [
        f"[^{m.group(1)}]: {m.group(2)}"
        for m in FOOTNOTE_DEF.finditer(text)
        if not WEB_LINK.match(m.group(2))
    ]
    return faults


def files_entries(text: str) -> list[str]:
    """The entries of the page's Files section (any language), as a reader sees each item:
    the link text and the facts after it, without the size (which tells nothing apart)."""
    names = {lb.files for lb in CATALOGS.values()}
    out: list[str] = []
    for heading in names:
        marker = f"\n## {heading}\n\n"
        if marker in text:
            section = text.split(marker, 1)[1].split("\n## ", 1)[0]
            for tok in tokens(section):
                if tok.type == "inline" and tok.level == 3:  # a list item's own paragraph
                    out.append(SIZE.sub("", seen_text(tok.content)))
    return out


def seen_text(inline_md: str) -> str:
    """The words a reader sees in an inline Markdown span: link and wikilink texts, not
    their targets (two links to different files can read the same)."""
    inline_md = re.sub(r"!?\[\[[^\]|]*\\?\|([^\]]*)\]\]", r"\1", inline_md)
    inline_md = re.sub(r"!?\[\[[^\]]*\]\]", "", inline_md)
    return "".join(
        child.content
        for tok in tokens(inline_md)
        for child in tok.children or []
        if child.type in ("text", "code_inline")
    )


def test_every_relative_link_and_embed_resolves(demo: Path) -> None:
    broken = []
    links = 0
    for tdir, rel, text in thread_pages(demo):
        links += len(relative_targets(text))
        broken += [(tdir.name, rel, t) for t in broken_links(tdir, rel, text)]
    assert links > 100
    assert not broken


def test_no_two_files_read_alike(demo: Path) -> None:
    lists = 0
    repeats = []
    for tdir, rel, text in thread_pages(demo):
        entries = files_entries(text)
        lists += bool(entries)
        repeats += [(tdir.name, rel, e) for e, n in Counter(entries).items() if n > 1]
    assert lists >= 4
    assert not repeats


def test_the_chart_inside_an_answer_is_embedded_from_the_archive(demo: Path) -> None:
    (tdir,) = [p.parent for p in demo.rglob("thread.json") if "Compare-static" in p.parent.name]
    turn = (tdir / "turns" / "turn_0001.md").read_text(encoding="utf-8")
    answer = turn.split("\n## ", 4)
    answer_md = next(part for part in answer if "Recommendation: Hugo" in part)
    assert "../assets/files/Build_times.png" in answer_md
    embed = re.search(r"!\[\[\.\./assets/files/Build_times\.png\]\]|!\[[^\]]*\]\(\.\./assets", turn)
    assert embed is not None
    assert (tdir / "assets" / "files" / "Build_times.png").is_file()


def test_footnotes_each_defined_once_per_page(demo: Path) -> None:
    obsidian = any("[[" in text for _, _, text in thread_pages(demo))
    notes = 0
    faults = []
    for tdir, rel, text in thread_pages(demo):
        if not obsidian:
            assert "[^" not in text, (tdir.name, rel)  # github: markers stay links
            continue
        notes += len(FOOTNOTE_REF.findall(FOOTNOTE_DEF.sub("", text)))
        faults += [(tdir.name, rel, f) for f in footnote_faults(text)]
    assert not faults
    if obsidian:
        assert notes > 20
        # No answer marker is left as a plain link in the obsidian flavour.
        for tdir, rel, text in thread_pages(demo):
            if rel != "sources.md":
                assert not re.search(r"\[\\\[\d+\\\]\]\(", text), (tdir.name, rel)


def test_every_page_names_its_note_in_aliases(demo: Path) -> None:
    for tdir, rel, text in thread_pages(demo):
        meta, _ = split_page(text)
        aliases = meta.get("aliases")
        assert isinstance(aliases, list) and aliases, (tdir.name, rel)
        assert aliases[0] == meta["title"], (tdir.name, rel)


# ------------------------------------------------ footnotes on hand-built pages (point 7)


def _two_turns() -> Conversation:
    """Two answers citing their own first source: on conversation.md both say `[1]`."""
    turns = []
    for n, (title, url) in enumerate(
        [("潮汐表", "https://tides.example.org/"), ("Moon phases", "https://moon.example.org/")],
        1,
    ):
        cite = Citation(name=title, url=url, snippet="s")
        answer = f"Answer {n} [1][2], in code `[1]`."
        turns.append(
            Turn(
                index=n,
                uuid=f"t{n}",
                query=f"question {n}",
                created_us=T0 + n,
                answer=answer,
                display_answer=answer,
                citations=[cite],
            )
        )
    conv = Conversation(web_uuid="w", title="Tides", mode="search", turns=turns)
    return attach_views(conv)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_obsidian_footnotes_are_unique_per_page_and_defined_once(lang: str) -> None:
    pages = render_thread(_two_turns(), lang, OBSIDIAN)
    whole, turn = pages["conversation.md"], pages["turns/turn_0001.md"]
    # conversation.md holds both answers: labels carry the turn; a turn file needs none.
    assert "Answer 1 [^1-1] [2], in code `[1]`." in whole  # [2] has no source: stays text
    assert "Answer 2 [^2-1] [2]" in whole
    assert "[^1-1]: [潮汐表]( https://tides.example.org/ )" in whole
    assert "Answer 1 [^1] [2]" in turn and "[^1]: [潮汐表]( https://tides.example.org/ )" in turn
    for page in (whole, turn):
        assert not footnote_faults(page)
        # A CommonMark reader without footnotes sees text, not a link to "[title](url)".
        hrefs = [
            c.attrs.get("href")
            for t in tokens(page)
            for c in t.children or []
            if c.type == "link_open"
        ]
        assert not any(str(h).startswith("%5B") for h in hrefs)


def test_github_keeps_citation_links() -> None:
    pages = render_thread(_two_turns(), "en")
    assert "[^" not in "".join(pages.values())
    assert "Answer 1 [\\[1\\]](https://tides.example.org/)[2]" in pages["conversation.md"]
