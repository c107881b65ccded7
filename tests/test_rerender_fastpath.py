"""The full re-render's shortcuts (benchmarks/RESULTS.md) never hide a change.

Derived files are recognised as unchanged from the render_state stamp (sha256 of the new
bytes + on-disk size and mtime) without being read; these tests edit, delete and add files
behind its back and check that a plain full re-render still restores every byte.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pplx_export.commands.rerender.run import rerender
from pplx_export.store.render_state import load_state
from tests.archive_fakes import snapshot

FIXTURES = Path(__file__).parent / "fixtures" / "archive"


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    root = tmp_path / "archive"
    shutil.copytree(FIXTURES, root)
    first = rerender(root)
    assert first.failed == 0
    return root


def _a_thread(root: Path) -> Path:
    return next(d for d in sorted(root.glob("tomas/computer/*")) if (d / "turns").is_dir())


def test_state_records_an_outputs_stamp(archive: Path) -> None:
    threads = load_state(archive)
    assert threads and all(len(entry.get("outputs", "")) == 64 for entry in threads.values())


def test_second_full_run_writes_nothing_and_keeps_mtimes(archive: Path) -> None:
    before = snapshot(archive)
    s = rerender(archive)
    assert (s.written, s.files_written, s.unchanged) == (0, 0, s.total)
    assert snapshot(archive) == before


def test_same_size_edit_of_a_derived_file_is_restored(archive: Path) -> None:
    d = _a_thread(archive)
    path = d / "conversation.md"
    good = path.read_bytes()
    path.write_bytes(good[:-2] + b"X\n")  # same size, new mtime
    s = rerender(archive)
    assert s.files_written == 1
    assert path.read_bytes() == good


def test_deleted_turn_file_is_recreated_and_extra_one_removed(archive: Path) -> None:
    d = _a_thread(archive)
    turn = d / "turns" / "turn_0001.md"
    good = turn.read_bytes()
    turn.unlink()
    (d / "turns" / "turn_0099.md").write_text("stale\n")
    s = rerender(archive)
    assert (s.files_written, s.files_removed) == (1, 1)
    assert turn.read_bytes() == good
    assert not (d / "turns" / "turn_0099.md").exists()


def test_hand_edit_of_thread_json_is_seen(archive: Path) -> None:
    d = _a_thread(archive)
    path = d / "thread.json"
    doc = json.loads(path.read_text())
    doc["title"] = "edited by hand"
    doc["my_note"] = "kept"
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=1))
    rerender(archive)
    after = json.loads(path.read_text())
    assert after["my_note"] == "kept"  # unknown keys survive
    assert after["title"] != "edited by hand"  # derived keys come from the raw files


def test_stale_stamp_falls_back_to_comparing_bytes(archive: Path) -> None:
    # A copied archive (new mtimes everywhere) matches no stamp; nothing may be rewritten.
    copy = archive.parent / "copy"
    shutil.copytree(archive, copy, copy_function=shutil.copy)  # mtimes not preserved
    s = rerender(copy)
    assert (s.written, s.files_written) == (0, 0)
    for d in copy.glob("*/*/*"):
        os.utime(d / "sources.md", ns=(1, 1))  # same bytes, other mtime
    assert rerender(copy).files_written == 0


def test_changed_only_noop_does_not_import_the_renderer(archive: Path) -> None:
    code = (
        "import sys; from pathlib import Path\n"
        "from pplx_export.commands.rerender.run import rerender\n"
        f"s = rerender(Path({str(archive)!r}), changed_only=True)\n"
        "assert s.skipped == s.total > 0, s\n"
        "assert 'pplx_export.render' not in sys.modules\n"
    )
    repo = Path(__file__).resolve().parent.parent
    subprocess.run([sys.executable, "-c", code], check=True, cwd=repo)


def test_token_written_into_a_recorded_raw_file_is_still_redacted(archive: Path) -> None:
    # The recorded digest of a raw file stands in only while its size and mtime match the
    # record; a token added afterwards (same size, new mtime) is still found and redacted.
    d = _a_thread(archive)
    path = d / "raw_entries.json"
    text = path.read_text(encoding="utf-8")
    redacted = '"read_write_token": "<redacted>"'
    assert redacted in text
    before = path.stat()
    path.write_text(text.replace(redacted, '"read_write_token": "live-token"', 1), encoding="utf-8")
    # Same size; a later mtime even on a coarse clock.
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    assert path.stat().st_size == before.st_size
    s = rerender(archive)
    assert s.redacted_tokens == 1
    assert "live-token" not in path.read_text(encoding="utf-8")
    state = load_state(archive)
    rel = d.relative_to(archive).as_posix()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert state[rel]["files"]["raw_entries.json"][2] == digest


def test_a_first_render_hashes_each_raw_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A raw file holding a write token is rewritten redacted: only its new bytes are hashed
    (the digest recorded), never the bytes it had; a raw file without one, once."""
    root = tmp_path / "archive"
    shutil.copytree(FIXTURES, root)
    # The fixture's deep-research thread: a raw_entries.json with live write tokens (as the
    # earlier tool left them) and a raw_blocks.json without one.
    (d,) = root.glob("maya/deep-research/2031-05-10_*")
    path = d / "raw_entries.json"
    old = path.read_bytes()
    assert b'"read_write_token":"0000' in old
    hashed: list[bytes] = []
    real = hashlib.sha256

    def sha256(data: bytes = b"", **kw: bool) -> hashlib._Hash:
        hashed.append(bytes(data))
        return real(data, **kw)

    monkeypatch.setattr(hashlib, "sha256", sha256)
    s = rerender(root, jobs=1)
    assert s.failed == 0 and s.redacted_tokens >= 1
    new = path.read_bytes()
    assert old not in hashed and hashed.count(new) == 1
    blocks = (d / "raw_blocks.json").read_bytes()
    assert hashed.count(blocks) == 1
    digest = real(new).hexdigest()
    assert (
        load_state(root)[d.relative_to(root).as_posix()]["files"]["raw_entries.json"][2] == digest
    )


def test_a_first_render_syncs_each_thread_directory_once_after_one_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An earlier tool's archive (write tokens in raw files): per thread at most one run of
    data syncs (the redacted raw files) and then one directory sync (issue 35)."""
    from tests.fsync_support import record_fsyncs

    root = (tmp_path / "archive").resolve()
    shutil.copytree(FIXTURES, root)
    calls = record_fsyncs(monkeypatch)
    assert rerender(root, jobs=1).failed == 0
    dirs = {str(p.parent) for p in root.glob("*/*/*/raw_entries.json")}
    per_dir: dict[str, list[tuple[int, str]]] = {}
    for i, (kind, path, _) in enumerate(calls.events):
        if kind != "fsync":
            continue
        owner = path if path in dirs else os.path.dirname(path)
        if owner in dirs:
            per_dir.setdefault(owner, []).append((i, "dir" if path == owner else "file"))
    assert per_dir  # the fixture threads hold write tokens: their raw files are rewritten
    for owner, syncs in per_dir.items():
        kinds = [k for _, k in syncs]
        assert kinds.count("dir") <= 1 and kinds[-1] == "dir", (owner, kinds)
        first, last = syncs[0][0], syncs[-1][0]
        # One batch: no other thread's sync between this thread's first and last.
        assert all(
            calls.events[j][1] in (owner,) or os.path.dirname(calls.events[j][1]) == owner
            for j in range(first, last + 1)
            if calls.events[j][0] == "fsync"
        ), owner
