"""Every page starts with YAML front matter and a navigation line (issue 15 §7)."""

from __future__ import annotations

import re
from pathlib import Path

from pplx_export.models import Conversation, Space
from pplx_export.render.page import front_matter
from tests.reading_support import all_pages, rendered, split_page, thread_dirs, tokens

KEYS = ["title", "url", "uuid", "mode", "space", "created", "updated", "aliases", "tags"]
# Up from a thread directory (`⟨account⟩/⟨mode⟩/⟨dir⟩`) to the archive root.
ROOT = "../../../"


def test_front_matter_reads_as_yaml_even_for_awkward_titles() -> None:
    title = 'Quotes " and: colons # hash \\ backslash \u2028 separator — 中文'
    conv = Conversation(web_uuid="u", title=title, space=Space(title="My space: x", slug=""))
    meta, _ = split_page(front_matter(conv, title) + "\n\n# x\n")
    assert meta["title"] == " ".join(title.split())
    assert meta["space"] == "My space: x"
    assert meta["tags"] == ["perplexity", "mode/search", "space/My-space-x"]


def test_every_page_has_front_matter_and_working_navigation() -> None:
    pages = 0
    for tdir in thread_dirs():
        files = rendered(tdir)
        for rel, text in files.items():
            if not rel.endswith(".md"):
                continue
            meta, body = split_page(text)
            # Keys without a value are left out (no empty `space: ""`), the order kept.
            assert [k for k in KEYS if k in meta] == list(meta), (tdir.name, rel)
            assert all(meta.values()), (tdir.name, rel)
            assert meta["uuid"] and meta["mode"], (tdir.name, rel)
            # The navigation line follows the H1 and every relative link in it resolves to
            # a page of the thread (report.md only when the thread has a report).
            nav = body.split("\n\n")[1]
            assert nav.startswith("> "), (tdir.name, rel)
            for target in re.findall(r"\]\(([^)]+)\)", nav):
                if target.startswith("http"):
                    continue
                resolved = (Path(rel).parent / target).as_posix()
                resolved = re.sub(r"^(?!\.\./)[^/]+/\.\./", "", resolved)
                if resolved.startswith(ROOT):
                    # Up to the archive: its index, the space's page (test_render_front_door
                    # resolves them in a rendered archive).
                    assert resolved in (ROOT + "index.md",) or resolved.startswith(
                        ROOT + "spaces/"
                    ), (tdir.name, rel, target)
                    continue
                assert resolved in files or resolved == "report.md", (tdir.name, rel, target)
            pages += 1
    assert pages > 50


def test_turn_files_link_to_their_neighbours() -> None:
    sources_of = {name: text for name, rel, text in all_pages() if rel == "sources.md"}
    for name, rel, text in all_pages():
        m = re.fullmatch(r"turns/turn_(\d{4})\.md", rel)
        if not m:
            continue
        n = int(m.group(1))
        nav = split_page(text)[1].split("\n\n")[1]
        assert "(../conversation.md)" in nav, (name, rel)
        # The Sources link is there exactly when sources.md lists something.
        assert ("(../sources.md)" in nav) == ("\n## " in sources_of[name]), (name, rel)
        if n > 1:
            assert f"(turn_{n - 1:04d}.md)" in nav, (name, rel)


def test_front_matter_is_not_read_as_a_heading() -> None:
    for _name, _rel, text in all_pages():
        assert tokens(text)[0].type == "heading_open"
