"""Golden Markdown per fixture thread. Update with `PPLX_UPDATE_GOLDEN=1 pytest`.

Fixtures: the hand-built samples (render_samples.SAMPLES) and every thread directory under
tests/fixtures/archive (raw_entries.json [+ raw_blocks.json, thread.json]) parsed by
pplx_export.parse. Goldens live in tests/golden/<fixture>/<lang>/<file>.golden: the suffix
keeps `ruff format` (which formats Python blocks inside *.md files) from rewriting them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from pplx_export.models import Conversation
from pplx_export.parse import parse_thread
from pplx_export.render import OBSIDIAN, render_thread
from tests import live_shapes
from tests.render_samples import SAMPLES

HERE = Path(__file__).parent
GOLDEN = HERE / "golden"
ARCHIVE = HERE / "fixtures" / "archive"
UPDATE = os.environ.get("PPLX_UPDATE_GOLDEN") == "1"
SUFFIX = ".golden"


def _archive_loader(tdir: Path) -> Callable[[], Conversation]:
    def load() -> Conversation:
        from pplx_export.parse import parse_thread, row_from_thread_json

        plain = json.loads((tdir / "raw_entries.json").read_text(encoding="utf-8"))
        blocks_path = tdir / "raw_blocks.json"
        blocks = (
            json.loads(blocks_path.read_text(encoding="utf-8")) if blocks_path.exists() else None
        )
        meta_path = tdir / "thread.json"
        meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.exists() else {}
        row = row_from_thread_json(meta)
        return parse_thread(
            plain,
            blocks,
            row,
            web_uuid=str(meta.get("web_uuid") or ""),
            url=str(meta.get("url") or ""),
            export_via=str(meta.get("export_via") or ""),
        )

    return load


def _fixtures() -> dict[str, Callable[[], Conversation]]:
    found: dict[str, Callable[[], Conversation]] = {f"sample-{k}": v for k, v in SAMPLES.items()}
    if ARCHIVE.is_dir():
        for raw in sorted(ARCHIVE.rglob("raw_entries.json")):
            found[raw.parent.name] = _archive_loader(raw.parent)
    for name, (plain, blocks) in live_shapes.threads().items():
        found[f"live-{name}"] = partial(
            parse_thread, plain, blocks, None, web_uuid=live_shapes.THREAD
        )
    return found


FIXTURES = _fixtures()


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_golden(name: str, lang: str) -> None:
    _check(name, lang, render_thread(FIXTURES[name](), lang))


@pytest.mark.parametrize("name", sorted(n for n in FIXTURES if n.startswith("sample-")))
def test_golden_obsidian(name: str) -> None:
    # The hand-built samples in the obsidian flavour (callouts, wikilinks), in
    # tests/golden/<sample>/en-obsidian/.
    _check(name, "en-obsidian", render_thread(FIXTURES[name](), "en", OBSIDIAN))


def _check(name: str, lang: str, files: dict[str, str]) -> None:
    target = GOLDEN / name / lang
    if UPDATE:
        if target.exists():
            for old in sorted(target.rglob("*"), reverse=True):
                old.unlink() if old.is_file() else old.rmdir()
        for rel, text in files.items():
            path = target / (rel + SUFFIX)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8"))
        return
    if not target.is_dir():
        pytest.skip(f"no golden for {name}/{lang}; create it with PPLX_UPDATE_GOLDEN=1")
    stored = {
        p.relative_to(target).as_posix().removesuffix(SUFFIX): p.read_bytes().decode("utf-8")
        for p in target.rglob("*")
        if p.is_file()
    }
    assert sorted(stored) == sorted(files), "file set changed (PPLX_UPDATE_GOLDEN=1 to accept)"
    for rel, text in files.items():
        assert text == stored[rel], f"{name}/{lang}/{rel} differs (PPLX_UPDATE_GOLDEN=1 to accept)"
