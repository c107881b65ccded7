"""Re-render with the real parser and renderer over the project's own fixture archive."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest

from pplx_export.commands.rerender.run import rerender
from tests.archive_fakes import DERIVED_STATE, snapshot

FIXTURES = Path(__file__).parent / "fixtures" / "archive"


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    root = tmp_path / "archive"
    shutil.copytree(FIXTURES, root)
    return root


def _boom(*args: object, **kwargs: object) -> object:
    raise AssertionError("re-render opened a socket")


def test_real_rerender_is_offline_deterministic_and_idempotent(
    archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(socket, "socket", _boom)
    other = tmp_path / "other"
    shutil.copytree(archive, other)
    s = rerender(archive)
    assert s.failed == 0 and s.total == len(list(FIXTURES.glob("*/*/*")))
    for d in archive.glob("*/*/*"):
        doc = json.loads((d / "thread.json").read_text())
        assert (d / "conversation.md").is_file() and (d / "sources.json").is_file()
        assert len(list((d / "turns").glob("turn_*.md"))) == doc["n_turns"]
        assert "read_write_token" not in (d / "raw_entries.json").read_text() or (
            '"read_write_token": "<redacted>"' in (d / "raw_entries.json").read_text()
        )
    before = snapshot(archive)
    s2 = rerender(archive)
    assert (s2.written, s2.files_written) == (0, 0)
    assert snapshot(archive) == before
    assert rerender(archive, changed_only=True).skipped == s.total
    rerender(other, jobs=3)
    a = {k: v[0] for k, v in snapshot(archive).items() if k not in DERIVED_STATE}
    b = {k: v[0] for k, v in snapshot(other).items() if k not in DERIVED_STATE}
    assert a == b


def test_zh_labels_rewrite_markdown_only(archive: Path) -> None:
    rerender(archive)
    s = rerender(archive, lang="zh")
    assert s.written == s.total
    d = next(archive.glob("*/*/*"))
    raw = (d / "raw_entries.json").read_bytes()
    rerender(archive, lang="en")
    assert (d / "raw_entries.json").read_bytes() == raw


def test_online_export_then_rerender_is_a_noop(tmp_path: Path) -> None:
    """Online export and re-render share one assembly path: re-render changes nothing."""
    from pplx_export.parse import parse_thread, row_from_thread_json
    from pplx_export.pipeline.assemble import export_conversation

    root = tmp_path / "fresh"
    for src in sorted(FIXTURES.glob("*/*/*")):
        doc = json.loads((src / "thread.json").read_text(encoding="utf-8"))
        plain = json.loads((src / "raw_entries.json").read_bytes())
        blocks_path = src / "raw_blocks.json"
        blocks = json.loads(blocks_path.read_bytes()) if blocks_path.exists() else None
        conv = parse_thread(
            plain,
            blocks,
            row_from_thread_json(doc, src.parent.name),
            web_uuid=doc["web_uuid"],
            url=doc.get("url") or "",
            export_via=doc.get("export_via") or "",
        )
        r = export_conversation(root, conv, account_folder=src.parent.parent.name)
        assert r.directory.relative_to(root).parts[:2] == src.relative_to(FIXTURES).parts[:2]
        assert json.loads((r.directory / "thread.json").read_text())["exported_at"]
    before = {k: v for k, v in snapshot(root).items() if k not in DERIVED_STATE}
    s = rerender(root)
    assert s.failed == 0 and s.written == 0, s
    after = {k: v for k, v in snapshot(root).items() if k not in DERIVED_STATE}
    assert after == before
