"""End to end: `--flavor obsidian` and config `render_flavor` against the emulator.

An obsidian export holds no HTML fold and its wikilinks name files that exist; `re-render`
switches the archive to github and back, rewriting every thread each time (even with
--changed-only: the flavour is part of what "unchanged" means), and a second run of the
same flavour writes nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from pplx_export.store.render_state import load_state
from tests.e2e_support import E2E, rerender_json, signed_in, thread_dirs

WIKILINK = re.compile(r"!?\[\[([^\]|\\]+)(?:\\?\|[^\]]*)?\]\]")


@pytest.fixture
def e2e(tmp_path: Path) -> Iterator[E2E]:
    with signed_in(tmp_path) as env:
        yield env


def _pages(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.md") if "index" not in p.relative_to(root).parts[:1])


def test_obsidian_export_then_rerender_switches_flavours(e2e: E2E) -> None:
    result = e2e.cli("sync", "--flavor", "obsidian")
    assert result.exit_code == 0, result.output
    threads = thread_dirs(e2e.out)
    assert threads
    pages = _pages(e2e.out)
    links = 0
    for page in pages:
        text = page.read_text("utf-8")
        assert "<details>" not in text, page
        for m in WIKILINK.finditer(text):
            assert (page.parent / m.group(1)).resolve().is_file(), (page, m.group(0))
            links += 1
    assert links > len(threads)  # every page links its neighbours
    assert any("> [!note]- " in p.read_text("utf-8") for p in pages)

    # The same flavour again: nothing to write (the render state records the flavour).
    assert rerender_json(e2e, "--flavor", "obsidian")["written"] == 0
    assert {entry.get("flavor") for entry in _render_state(e2e).values()} == {"obsidian"}
    assert rerender_json(e2e, "--flavor", "obsidian", "--changed-only")["skipped"] == len(threads)

    # To github: every thread rewritten, though no input changed.
    doc = rerender_json(e2e, "--flavor", "github", "--changed-only")
    assert doc["written"] == len(threads), doc
    assert not any("[[" in p.read_text("utf-8") for t in threads for p in _pages(t))
    assert any("<details>" in p.read_text("utf-8") for t in threads for p in _pages(t))
    assert rerender_json(e2e, "--flavor", "github", "--changed-only")["skipped"] == len(threads)
    assert rerender_json(e2e)["written"] == 0  # github is the default

    # `export` of one thread in obsidian: that thread's pages only.
    computer = next(t for t in threads if t.parent.name == "computer")
    uuid = json.loads((computer / "thread.json").read_text("utf-8"))["web_uuid"]
    result = e2e.cli("export", uuid, "--force", "--flavor", "obsidian")
    assert result.exit_code == 0, result.output
    for t in threads:
        texts = [p.read_text("utf-8") for p in _pages(t)]
        assert any("[[" in x for x in texts) == (t == computer), t
        if t == computer:
            assert not any("<details>" in x for x in texts)
    # Its pages were rewritten (and its thread.json, unless within the same second), so
    # --changed-only renders it back to github.
    assert rerender_json(e2e, "--changed-only")["written"] == 1

    # And back, chosen by the config this time.
    e2e.config.write_text(
        e2e.config.read_text("utf-8").replace(
            "[network]", 'render_flavor = "obsidian"\n\n[network]'
        ),
        encoding="utf-8",
    )
    assert rerender_json(e2e, "--changed-only")["written"] == len(threads)
    assert rerender_json(e2e)["written"] == 0
    assert not any("<details>" in p.read_text("utf-8") for t in threads for p in _pages(t))
    verify = e2e.offline("verify")
    assert verify.exit_code == 0, verify.output


def test_spaces_and_relations_pages_follow_the_flavour(e2e: E2E) -> None:
    assert e2e.cli("sync", "--flavor", "obsidian").exit_code == 0
    for command in ("spaces", "relations"):
        args = [command, "--flavor", "obsidian"]
        result = e2e.cli(*args) if command == "spaces" else e2e.offline(*args)
        assert result.exit_code == 0, result.output
    pages = sorted((e2e.out / "spaces").glob("*.md")) + sorted((e2e.out / "relations").glob("*.md"))
    wikilinks = [(p, m) for p in pages for m in WIKILINK.finditer(p.read_text("utf-8"))]
    assert wikilinks
    for page, m in wikilinks:
        assert (page.parent / m.group(1)).resolve().is_file(), (page, m.group(0))
    # Back to github: the stamps notice the flavour and the pages are rewritten.
    assert e2e.cli("spaces").exit_code == 0
    assert e2e.offline("relations").exit_code == 0
    assert not any("[[" in p.read_text("utf-8") for p in pages)


def _render_state(env: E2E) -> dict[str, dict[str, str]]:
    return load_state(env.out)
