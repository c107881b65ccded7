"""The obsidian render flavour: folds as callouts, archive links as wikilinks, image embeds;
and every thread the project ships rendered in it (fixture archive and emulator sample)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path, PurePosixPath

import pytest
from markdown_it import MarkdownIt

from pplx_export import config as config_mod
from pplx_export.errors import ConfigError
from pplx_export.render import render_thread
from pplx_export.render.text import (
    FLAVORS,
    GITHUB,
    OBSIDIAN,
    cell,
    details,
    image,
    is_internal,
    link,
    squash,
    wikilink,
)
from tests.reading_support import MD, load, rendered, thread_dirs
from tools.screenshots import obsidian_to_commonmark

# A wikilink or embed: target, then an optional `|text` (a `\|` in a table cell).
WIKILINK = re.compile(r"!?\[\[([^\]|\\]+)(?:\\?\|([^\]]*))?\]\]")
# A Markdown link or image whose destination is a relative path (no scheme, no anchor).
MD_FILE_LINK = re.compile(r"\]\(<?(?![a-zA-Z][\w+.-]*:|#)([^)>\s]+)>?\)")


# ------------------------------------------------------------------ folds


def test_github_fold_is_html_details() -> None:
    assert details("Sources (2)", "- a\n- b", GITHUB) == (
        "<details>\n<summary>Sources (2)</summary>\n\n- a\n- b\n\n</details>"
    )


def test_obsidian_fold_is_a_folded_callout_with_every_body_line_quoted() -> None:
    assert details("Output", "line 1\n\nline 2", OBSIDIAN) == (
        "> [!note]- Output\n> line 1\n>\n> line 2"
    )
    assert details("Empty", "\n\n", OBSIDIAN) == "> [!note]- Empty"


def test_nested_obsidian_folds_nest_the_quote_markers() -> None:
    inner = details("Step 1", "inner text", OBSIDIAN)
    outer = details("Sub-agent", f"intro\n\n{inner}\n\nafter", OBSIDIAN)
    assert outer == (
        "> [!note]- Sub-agent\n> intro\n>\n> > [!note]- Step 1\n> > inner text\n>\n> after"
    )
    deeper = details("Run", outer, OBSIDIAN)
    assert deeper.splitlines()[4] == "> > > [!note]- Step 1"
    # A CommonMark reader sees three nested quotes and not one HTML block.
    tokens = MD.parse(deeper)
    assert max(t.level for t in tokens if t.type == "blockquote_open") == 2
    assert not [t for t in tokens if t.type in ("html_block", "html_inline")]


def test_code_inside_a_callout_stays_code() -> None:
    body = "```\n$ ls\n  indented\n\n```"
    tokens = MD.parse(details("Output", body, OBSIDIAN))
    fence = [t for t in tokens if t.type == "fence"]
    assert fence and fence[0].content == "$ ls\n  indented\n\n"


def test_both_flavours_squash_to_the_same_letters() -> None:
    # "Already shown?" checks compare squashed text: the flavour must not change them.
    inner = "intro\n\n" + "Step 1 text"
    for body in (inner, f"a\n\n{inner}\n\nb"):
        assert squash(details("Sub", body, GITHUB)) == squash(details("Sub", body, OBSIDIAN))


# ------------------------------------------------------------------ links and images


def test_obsidian_links_to_archive_files_are_wikilinks_relative_to_the_page() -> None:
    # Without `./` Obsidian reads the path from the vault root (or by name, anywhere).
    assert link("Turn 2 →", "turns/turn_0002.md", OBSIDIAN) == ("[[./turns/turn_0002.md|Turn 2 →]]")
    assert link("Conversation", "../conversation.md", OBSIDIAN) == (
        "[[../conversation.md|Conversation]]"
    )
    assert link("", "sources.md", OBSIDIAN) == "[[./sources.md|sources.md]]"


def test_web_links_anchors_and_folders_stay_markdown_links() -> None:
    for url in ("https://example.org/a_b", "http://x.test/", "#turn-1", "../t/", "mailto:a@b"):
        assert link("x", url, OBSIDIAN) == link("x", url, GITHUB)
        assert not is_internal(url) or url.endswith("/")
    assert link("Web", "https://example.org", OBSIDIAN) == "[Web](https://example.org)"


def test_link_text_a_wikilink_cannot_carry_falls_back_to_a_markdown_link() -> None:
    # `|` would split the text, `]` could end the link early: Obsidian resolves a Markdown
    # link to a relative path as well.
    assert wikilink("a.md", "left | right") is None
    assert wikilink("a.md", "see [1]") is None
    assert wikilink("a#b.md", "x") is None
    assert link("left | right", "../t/conversation.md", OBSIDIAN) == (
        "[left | right](../t/conversation.md)"
    )
    assert link("see [1] ]]", "turns/turn_0001.md", OBSIDIAN) == (
        "[see \\[1\\] \\]\\]](turns/turn_0001.md)"
    )
    # Other characters (Markdown emphasis, backslashes, CJK) ride along unchanged.
    assert link("**x** \\ 文", "a.md", OBSIDIAN) == "[[./a.md|**x** \\ 文]]"
    assert link("two\nlines", "a.md", OBSIDIAN) == "[[./a.md|two lines]]"


def test_a_wikilink_in_a_table_cell_escapes_its_pipe() -> None:
    # Obsidian's own form inside tables; the table keeps its columns.
    assert cell(link("Tides", "../t/conversation.md", OBSIDIAN)) == (
        "[[../t/conversation.md\\|Tides]]"
    )
    row = MD.parse("| a | b |\n|---|---|\n| " + cell(link("T", "x.md", OBSIDIAN)) + " | 2 |")
    assert len([t for t in row if t.type == "td_open"]) == 2


def test_images_embed_archive_files_in_obsidian() -> None:
    assert image("chart", "assets/files/chart.png", OBSIDIAN) == "![[./assets/files/chart.png]]"
    assert image("chart", "assets/files/chart.png", GITHUB) == "![chart](assets/files/chart.png)"
    assert image("w", "https://example.org/i.png", OBSIDIAN) == "![w](https://example.org/i.png)"


def test_github_links_are_unchanged_by_the_flavour_argument() -> None:
    assert link("Turn 1", "turns/turn_0001.md") == "[Turn 1](turns/turn_0001.md)"
    assert link("Turn 1", "turns/turn_0001.md", GITHUB) == "[Turn 1](turns/turn_0001.md)"


# ------------------------------------------------------------------ config


def test_config_and_renderer_know_the_same_flavours() -> None:
    assert config_mod.FLAVORS == FLAVORS


def test_render_flavor_config_key(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('render_flavor = "obsidian"\n', encoding="utf-8")
    cfg = config_mod.load_config(path)
    assert cfg.flavor() == "obsidian"
    assert cfg.flavor("github") == "github"  # the flag wins
    path.write_text("", encoding="utf-8")
    assert config_mod.load_config(path).flavor() == "github"
    path.write_text('render_flavor = "notion"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="render_flavor must be one of github, obsidian"):
        config_mod.load_config(path)


# ------------------------------------------------------------------ every shipped thread


@cache
def obsidian(tdir: Path) -> dict[str, str]:
    return render_thread(load(tdir), flavor=OBSIDIAN)


def test_obsidian_pages_have_no_html_fold_and_every_wikilink_resolves() -> None:
    checked = 0
    for tdir in thread_dirs():
        files = obsidian(tdir)
        # report.md is written beside the pages when the report body is known.
        known = set(files) | ({"report.md"} if load(tdir).report is not None else set())
        for rel, text in files.items():
            if not rel.endswith(".md"):
                continue
            assert "<details>" not in text and "<summary>" not in text, (tdir.name, rel)
            here = PurePosixPath(rel).parent
            for m in WIKILINK.finditer(text):
                target = m.group(1)
                assert target.startswith(("./", "../")), (tdir.name, rel, target)
                resolved = _normal(here / target)
                if resolved.startswith("../../../"):
                    # Up to the archive root: test_render_front_door resolves these.
                    assert resolved == "../../../index.md" or resolved.startswith(
                        "../../../spaces/"
                    ), (tdir.name, rel, target)
                    checked += 1
                    continue
                assert resolved in known or (tdir / resolved).exists(), (tdir.name, rel, target)
                checked += 1
            # No link to an archive file is left in Markdown syntax unless a wikilink
            # could not carry its text.
            for m in MD_FILE_LINK.finditer(text):
                label_end = m.start()
                label_start = text.rfind("[", 0, label_end)
                assert re.search(r"[\[\]|]", text[label_start:label_end]) or m.group(1).endswith(
                    "/"
                ), (tdir.name, rel, m.group(0))
    assert checked > 50


def test_obsidian_render_is_deterministic_and_shows_what_github_shows() -> None:
    for tdir in thread_dirs():
        conv = load(tdir)
        first = render_thread(conv, flavor=OBSIDIAN)
        assert render_thread(load(tdir), flavor=OBSIDIAN) == first
        github = render_thread(conv, flavor=GITHUB)
        assert first.keys() == github.keys()
        for rel in first:
            # Same content: only the markup of folds and links differs.
            assert _letters(first[rel]) == _letters(github[rel]), (tdir.name, rel)


def test_obsidian_pages_read_as_the_github_pages() -> None:
    # With callouts read as folds, wikilinks as links and footnotes as linked markers (what
    # Obsidian shows), every page of every shipped thread is the same HTML as its github
    # twin: same structure, nesting and content, only the syntax differs.
    html = MarkdownIt("commonmark", {"html": True}).enable("table")
    pages = 0
    for tdir in thread_dirs():
        github, obsidian_files = rendered(tdir), obsidian(tdir)
        for rel, text in obsidian_files.items():
            if rel.endswith(".md"):
                seen = html.render(obsidian_to_commonmark(text)).replace('href="./', 'href="')
                want = html.render(github[rel])
                assert _cited(seen) == _cited(want), (tdir.name, rel)
                pages += 1
    assert pages > 50


def _normal(path: PurePosixPath) -> str:
    parts: list[str] = []
    for part in path.parts:
        if part == ".." and (not parts or parts[-1] == ".."):
            parts.append(part)  # above the thread directory: kept, as `../`
        elif part == "..":
            parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts)


_LINK_MARKUP = re.compile(r"\[\[[^\]|]*\\?\||\]\]|\]\([^)]*\)|\[!note\]-|\[!warning\]|<[/a-z]+>")


# Citation markup that differs by flavour and by nothing else: github's reference
# definitions (`[\[n\]]: url`) and obsidian's footnote definitions (`[^n]: [title](url)`,
# the title repeating the citation list's); a footnote reads as its number.
_CITE_DEFS = re.compile(r"^(?:\[\\\[\d+\\\]\]|\[\^[^\]\s]+\]): .*$", re.MULTILINE)
_FOOTNOTE = re.compile(r"\[\^(?:\d+-)?(\d+)\]")
# Adjacent citation markers: a turn file's reference links are a space apart (so no two read
# as one link), footnotes need none, a number without a source is a space from a footnote.
_CITE_GAP = re.compile(r"(\[\d+\](?:</a>)?) (?=<a |\[\d+\])")
# conversation.md's inline citation link (`[\[n\]](url)`): its number, as a footnote reads.
_INLINE_CITE = re.compile(r"\[\\\[(\d+)\\\]\]\([^)]*\)")


def _cited(html: str) -> str:
    return _CITE_GAP.sub(r"\1", html)


def _letters(text: str) -> str:
    text = _FOOTNOTE.sub(r"[\1]", _INLINE_CITE.sub(r"[\1]", _CITE_DEFS.sub("", text)))
    return squash(_LINK_MARKUP.sub("", text))


def test_obsidian_interruptions_are_warning_callouts() -> None:
    seen = 0
    for tdir in thread_dirs():
        github, obsidian_files = rendered(tdir), obsidian(tdir)
        for line in github["conversation.md"].split("\n"):
            if line.startswith("> ") and line[2:3] in ("⏸", "⛔"):
                # The same note, as a callout Obsidian shows as a warning.
                assert f"> [!warning] {line[2:]}" in obsidian_files["conversation.md"], line
                seen += 1
    assert seen >= 2
