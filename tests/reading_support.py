"""Every thread the project ships (fixture archive and emulator sample), rendered, and a
CommonMark reader for checks on what a person sees (links, headings)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import yaml  # type: ignore[import-untyped]
from markdown_it import MarkdownIt
from markdown_it.token import Token

from pplx_export.models import Conversation
from pplx_export.parse import parse_thread, row_from_thread_json
from pplx_export.render import render_thread

HERE = Path(__file__).parent
ROOTS = (HERE / "fixtures" / "archive", HERE.parent / "pplx_export" / "emulator" / "sample")


def thread_dirs() -> list[Path]:
    return sorted(p.parent for root in ROOTS for p in root.rglob("raw_entries.json"))


def load(tdir: Path) -> Conversation:
    plain = json.loads((tdir / "raw_entries.json").read_text(encoding="utf-8"))
    blocks_path = tdir / "raw_blocks.json"
    blocks = json.loads(blocks_path.read_text(encoding="utf-8")) if blocks_path.exists() else None
    meta_path = tdir / "thread.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.exists() else {}
    return parse_thread(
        plain,
        blocks,
        row_from_thread_json(meta),
        web_uuid=str(meta.get("web_uuid") or ""),
        url=str(meta.get("url") or ""),
        export_via=str(meta.get("export_via") or ""),
    )


@cache
def rendered(tdir: Path) -> dict[str, str]:
    return render_thread(load(tdir))


def all_pages() -> Iterator[tuple[str, str, str]]:
    """(thread dir name, relative path, text) of every Markdown page."""
    for tdir in thread_dirs():
        for rel, text in rendered(tdir).items():
            if rel.endswith(".md"):
                yield tdir.name, rel, text


MD = MarkdownIt("commonmark").enable("table")


def split_page(text: str) -> tuple[dict[str, object], str]:
    """(front matter read as YAML, the Markdown after it) of a page that starts with one."""
    assert text.startswith("---\n"), text[:80]
    end = text.index("\n---\n", 3)
    meta = yaml.safe_load(text[4:end])
    assert isinstance(meta, dict)
    return meta, text[end + 5 :]


def tokens(text: str) -> list[Token]:
    """CommonMark tokens of a page (its front matter, if any, left out as a reader does)."""
    if text.startswith("---\n"):
        text = split_page(text)[1]
    return MD.parse(text)
