"""Finding a turn in one click (issue 34, point 1), read as a person's tools read the pages.

A long thread's conversation.md has a turn list under its header and every turn heading
links to the turn's own page; every thread page links up to the archive's `index.md` and
its space's page, and `re-render` and `spaces` keep that index: every thread, newest first,
under a heading per month, each link resolving on disk.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote

import pytest
from click.testing import CliRunner
from markdown_it.token import Token

from pplx_export.cli.export import main
from pplx_export.commands.setup.demo import run_demo
from pplx_export.models import Conversation
from pplx_export.parse import parse_thread, row_from_thread_json
from pplx_export.render import OBSIDIAN, render_thread
from pplx_export.render.archive_index import PAGE_FROM, IndexThread, render_archive_index
from pplx_export.render.labels import CATALOGS
from tests.reading_support import split_page, tokens

FIXTURES = Path(__file__).parent / "fixtures" / "archive"
NGINX = "tomas/computer/2031-06-02_Audit-the-nginx-config-on-my-home-server_cb11e506"
TURN_FILE = re.compile(r"turns/turn_(\d{4})\.md")
WIKI = re.compile(r"\[\[([^|\]]+)(?:\|[^\]]*)?\]\]")


def _long_thread(n: int) -> Conversation:
    """The nginx fixture thread with its turns repeated until it has `n`."""
    tdir = FIXTURES / NGINX
    docs = {}
    for name in ("raw_entries.json", "raw_blocks.json"):
        doc: dict[str, Any] = json.loads((tdir / name).read_text("utf-8"))
        base = doc["entries"]
        out = []
        for i in range(n):
            entry = copy.deepcopy(base[i % len(base)])
            if i >= len(base):
                entry["uuid"] = f"{entry['uuid'][:-4]}{i:04d}"
                entry["created_us"] = int(entry.get("created_us") or 0) + i * 60_000_000
            out.append(entry)
        doc["entries"] = out
        docs[name] = doc
    meta = json.loads((tdir / "thread.json").read_text("utf-8"))
    return parse_thread(
        docs["raw_entries.json"],
        docs["raw_blocks.json"],
        row_from_thread_json(meta),
        web_uuid=meta["web_uuid"],
        url=meta["url"],
    )


def _hrefs(tok: Token) -> list[str]:
    return [str(c.attrs.get("href", "")) for c in tok.children or [] if c.type == "link_open"]


def _targets(text: str) -> list[str]:
    """Every link target of a page: Markdown links (CommonMark) and Obsidian wikilinks."""
    out = [h for tok in tokens(text) for h in _hrefs(tok)]
    return out + [m.group(1) for m in WIKI.finditer(text)]


@pytest.mark.parametrize(("lang", "flavor"), [("en", "github"), ("zh", "github"), ("en", OBSIDIAN)])
def test_a_60_turn_thread_lists_and_links_every_turn(lang: str, flavor: str) -> None:
    files = render_thread(_long_thread(63), lang, flavor)
    lb = CATALOGS[lang]
    toks = tokens(files["conversation.md"])
    # The turn list: the first bullet list, before the first turn heading, one item a turn,
    # each linking its turn file (date and first words of the query after the link).
    first_heading = next(
        i for i, t in enumerate(toks) if t.type == "heading_open" and t.tag == "h2"
    )
    first_list = next(i for i, t in enumerate(toks) if t.type == "bullet_list_open")
    assert first_list < first_heading
    items = []
    for tok in toks[first_list:]:
        if tok.type == "bullet_list_close":
            break
        if tok.type == "inline":
            items.append(tok)
    assert len(items) == 63
    for n, item in enumerate(items, 1):
        text = item.content
        assert f"turns/turn_{n:04d}.md" in text, text
        assert f"{lb.turn} {n} · 2031-06-02" in text, text
    assert "Audit the nginx config on my home server" in items[0].content
    # Every turn heading is a link to that turn's file, which the thread has.
    heads = [
        toks[i + 1]
        for i, t in enumerate(toks)
        if t.type == "heading_open" and t.tag == "h2" and lb.turn in toks[i + 1].content
    ]
    assert len(heads) == 63
    for n, head in enumerate(heads, 1):
        target = f"turns/turn_{n:04d}.md"
        assert target in head.content, head.content
        assert target in files
    if flavor == "github":
        assert all(_hrefs(h) == [f"turns/turn_{n:04d}.md"] for n, h in enumerate(heads, 1))


def test_a_short_thread_has_no_turn_list() -> None:
    files = render_thread(_long_thread(3))
    body = split_page(files["conversation.md"])[1]
    header = body.split("\n## ", 1)[0]
    assert "- [Turn" not in header and header.count("\n> ") == 1  # one header line


def test_archive_index_pages_by_year_for_a_big_archive() -> None:
    threads = [
        IndexThread(f"a/search/{2030 + i % 3}-01-0{1 + i % 9}_t_{i:08x}", f"T{i}", "search",
                    "a", "", f"{2030 + i % 3}-01-0{1 + i % 9}", f"{2030 + i % 3}-01-0{1 + i % 9}")
        for i in range(PAGE_FROM + 1)
    ]  # fmt: skip
    files = render_archive_index(threads)
    assert set(files) == {"index.md", "index-2030.md", "index-2031.md", "index-2032.md"}
    front = files["index.md"]
    # Newest year first, each with its count; every thread on exactly one year page.
    assert (
        front.index("index-2032.md") < front.index("index-2031.md") < front.index("index-2030.md")
    )
    rows = sum(f.count("/conversation.md)") for name, f in files.items() if name != "index.md")
    assert rows == PAGE_FROM + 1
    small = render_archive_index(threads[:10])
    assert set(small) == {"index.md"} and small["index.md"].count("/conversation.md)") == 10


def _resolve(base: PurePosixPath, target: str) -> PurePosixPath | None:
    if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
        return None
    parts: list[str] = []
    for part in (base / unquote(target.split("#")[0])).parts:
        if part == "..":
            assert parts, (base, target)  # never above the archive root
            parts.pop()
        elif part != ".":
            parts.append(part)
    return PurePosixPath(*parts)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("front-door") / "archive"
    run_demo(root, quiet=True, progress=False)
    return root


def test_the_demo_archive_has_a_front_door_and_every_page_links_up_to_it(demo: Path) -> None:
    threads = sorted(p.parent.relative_to(demo).as_posix() for p in demo.rglob("thread.json"))
    index = (demo / "index.md").read_text("utf-8")
    listed = [unquote(t) for t in _targets(index) if t.endswith("/conversation.md")]
    # Every thread once (its newest directory), newest first.
    assert sorted(t.removesuffix("/conversation.md") for t in listed) == threads
    dates = re.findall(r"^\| (\d{4}-\d{2}-\d{2}) \|", index, re.MULTILINE)
    assert dates == sorted(dates, reverse=True) and len(dates) == len(threads)
    for target in _targets(index):
        resolved = _resolve(PurePosixPath("."), target)
        assert resolved is None or (demo / resolved).exists(), target
    up = spaces = 0
    for rel in threads:
        for page in sorted((demo / rel).rglob("*.md")):
            page_rel = PurePosixPath(page.relative_to(demo).as_posix())
            if "assets" in page_rel.parts:
                continue
            for target in _targets(page.read_text("utf-8")):
                resolved = _resolve(page_rel.parent, target)
                if resolved is None:
                    continue
                assert (demo / resolved).exists(), (page_rel, target)
                up += resolved == PurePosixPath("index.md")
                spaces += resolved.parts[0] == "spaces"
    assert up >= len(threads) * 3  # conversation, sources and every turn page
    assert spaces > 0  # the threads in a space link its page


def test_rerender_writes_the_index_and_keeps_it(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    shutil.copytree(FIXTURES, root)
    result = CliRunner().invoke(main, ["re-render", "--out", str(root), "-q", "--jobs", "1"])
    assert result.exit_code == 0, result.output
    index = (root / "index.md").read_text("utf-8")
    threads = sorted(p.parent.relative_to(root).as_posix() for p in root.rglob("thread.json"))
    listed = [unquote(t) for t in _targets(index) if t.endswith("/conversation.md")]
    assert sorted(t.removesuffix("/conversation.md") for t in listed) == threads
    # re-render writes the space pages the thread pages link, and the index links them.
    assert "spaces/index.md" in _targets(index) and (root / "spaces" / "index.md").is_file()
    # A thread removed by hand leaves the index on the next full run (it renders nothing:
    # every other thread is as it was); a no-op `--changed-only` run leaves it as it is.
    shutil.rmtree(root / NGINX)
    quick = ["re-render", "--out", str(root), "-q", "--jobs", "1", "--changed-only"]
    assert CliRunner().invoke(main, quick).exit_code == 0
    assert NGINX in (root / "index.md").read_text("utf-8")
    result = CliRunner().invoke(main, ["re-render", "--out", str(root), "-q", "--jobs", "1"])
    assert result.exit_code == 0, result.output
    assert NGINX not in (root / "index.md").read_text("utf-8")


BASIL = "maya/search/2031-06-25_Best-way-to-store-fresh-basil_d47b01e7"


def test_a_hand_archived_rewritten_answer_is_linked_and_searched(tmp_path: Path) -> None:
    from pplx_export.search import query, schema

    root = tmp_path / "archive"
    shutil.copytree(FIXTURES, root)
    run = ["re-render", "--out", str(root), "-q", "--jobs", "1"]
    assert CliRunner().invoke(main, run).exit_code == 0
    conv_md = root / BASIL / "conversation.md"
    assert "(the original is not archived)" in conv_md.read_text("utf-8")
    # The user saves the original, as the rewrite note's warning tells them to.
    saved = root / BASIL / "rewritten_answer_variant.md"
    saved.write_text("Keep basil like cut flowers: stems in water, zanzibarite.\n", "utf-8")
    assert CliRunner().invoke(main, run).exit_code == 0
    for page in (conv_md, root / BASIL / "turns" / "turn_0001.md"):
        text = page.read_text("utf-8")
        assert "not archived" not in text and "archived by hand" in text, page
        targets = [unquote(t) for t in _targets(text) if t.endswith("rewritten_answer_variant.md")]
        assert targets, page
        assert all((page.parent / t).resolve() == saved.resolve() for t in targets)
    assert saved.is_file()  # a re-render never removes it
    conn = schema.connect_ro(schema.db_path(root))
    try:
        hits = query.search(conn, "zanzibarite").hits
    finally:
        conn.close()
    assert [(h.uuid[:8], h.field, h.turn) for h in hits] == [("d47b01e7", "answer", 1)]
