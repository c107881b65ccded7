"""Re-render with the real parser and renderer over the project's own fixture archive."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest
from archive_fakes import snapshot

from pplx_export.archive.render_state import STATE_NAME
from pplx_export.sync.rerender import rerender

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
    a = {k: v[0] for k, v in snapshot(archive).items() if k != STATE_NAME}
    b = {k: v[0] for k, v in snapshot(other).items() if k != STATE_NAME}
    assert a == b


def test_zh_labels_rewrite_markdown_only(archive: Path) -> None:
    rerender(archive)
    s = rerender(archive, lang="zh")
    assert s.written == s.total
    d = next(archive.glob("*/*/*"))
    raw = (d / "raw_entries.json").read_bytes()
    rerender(archive, lang="en")
    assert (d / "raw_entries.json").read_bytes() == raw
