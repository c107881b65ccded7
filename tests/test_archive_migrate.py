from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from pplx_export.archive import migrate
from pplx_export.archive.migrate import merge_thread_dir, sweep_trash
from pplx_export.archive.paths import TRASH_PREFIX, find_thread_dirs
from pplx_export.archive.writer import write_thread
from pplx_export.errors import ArchiveError
from pplx_export.pipeline.assemble import render_files
from tests.archive_fakes import FAKE_ENGINE, make_thread

UUID = "5eed0001-0000-4000-8000-00000000a001"


def _dir(root: Path, name: str, uuid: str = UUID, files: dict[str, bytes] | None = None) -> Path:
    d = root / "alice" / "search" / name
    d.mkdir(parents=True)
    (d / "thread.json").write_text(json.dumps({"web_uuid": uuid}))
    for rel, data in (files or {}).items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_bytes(data)
    return d


def test_merge_union_identical_and_conflict(tmp_path: Path) -> None:
    old = _dir(
        tmp_path,
        "2030-01-01_t_5eed0001",
        files={
            "assets/files/a.png": b"\x89PNGold-only",
            "same.md": b"same",
            "conflict.md": b"old version",
        },
    )
    new = _dir(
        tmp_path,
        "2030-02-01_t_5eed0001",
        files={
            "same.md": b"same",
            "conflict.md": b"new version",
        },
    )
    os.utime(old / "assets/files/a.png", ns=(1_000_000_000, 1_000_000_000))
    result = merge_thread_dir(old, new, UUID)
    assert result.removed_src and not old.exists()
    assert (new / "assets/files/a.png").read_bytes() == b"\x89PNGold-only"
    assert (new / "assets/files/a.png").stat().st_mtime_ns == 1_000_000_000
    assert (new / "conflict.md").read_bytes() == b"new version"  # the target wins
    assert result.copied == ["assets/files/a.png"]
    assert result.conflicts == ["conflict.md"]
    assert "same.md" in result.identical
    assert not list(old.parent.glob(TRASH_PREFIX + "*"))


def test_merge_refuses_other_identity(tmp_path: Path) -> None:
    old = _dir(tmp_path, "2030-01-01_t_5eed0001", uuid="5eed0001-other")
    new = _dir(tmp_path, "2030-02-01_t_5eed0001")
    with pytest.raises(ArchiveError):
        merge_thread_dir(old, new, UUID)
    with pytest.raises(ArchiveError):
        merge_thread_dir(new, old, UUID)
    assert old.exists() and new.exists()


def test_verification_failure_keeps_old_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = _dir(tmp_path, "2030-01-01_t_5eed0001", files={"x.bin": b"payload"})
    new = tmp_path / "alice" / "search" / "2030-02-01_t_5eed0001"
    real = migrate.sha256_file

    def flaky(path: Path) -> str:
        # A copy that does not read back identical (disk error) must keep the source.
        if path.parent == new and path.name == "x.bin":
            return hashlib.sha256(b"corrupted").hexdigest()
        return real(path)

    monkeypatch.setattr(migrate, "sha256_file", flaky)
    result = merge_thread_dir(old, new, UUID)
    assert not result.removed_src
    assert (old / "x.bin").read_bytes() == b"payload"


def test_crash_between_copy_and_delete_is_finished_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = make_thread(tmp_path, web_uuid=UUID, title="moving", last_updated="2030-01-01T00:00:00Z")
    (old / "assets/files").mkdir(parents=True)
    (old / "assets/files/keep.png").write_bytes(b"\x89PNG downloaded once")
    conv = FAKE_ENGINE.parse(
        json.loads((old / "raw_entries.json").read_text()),
        None,
        {"title": "moving", "lastUpdated": "2030-03-01T00:00:00Z", "authorUsername": "alice"},
        web_uuid=UUID,
    )
    files = render_files(FAKE_ENGINE, conv, "en", None)

    def crash(src: Path) -> None:
        raise KeyboardInterrupt  # the process dies after copying, before the delete

    monkeypatch.setattr(migrate, "_retire", crash)
    with pytest.raises(KeyboardInterrupt):
        write_thread(tmp_path, conv, files, account_folder="alice", source="online")
    monkeypatch.undo()
    new = tmp_path / "alice" / "search" / "2030-03-01_moving_5eed0001"
    assert old.exists() and new.exists()
    assert (old / "assets/files/keep.png").exists()
    assert (new / "assets/files/keep.png").exists()

    result = write_thread(tmp_path, conv, files, account_folder="alice", source="online")
    assert result.directory == new and result.merged_from == [old]
    assert not old.exists()
    assert (new / "assets/files/keep.png").read_bytes() == b"\x89PNG downloaded once"
    assert find_thread_dirs(tmp_path, UUID) == [new]


def test_sweep_trash_after_crash_during_delete(tmp_path: Path) -> None:
    mode_dir = tmp_path / "alice" / "search"
    trash = mode_dir / (TRASH_PREFIX + "2030-01-01_t_5eed0001")
    (trash / "turns").mkdir(parents=True)
    (trash / "turns" / "turn_0001.md").write_text("x")
    (trash / "thread.json").write_text(json.dumps({"web_uuid": UUID}))
    assert find_thread_dirs(tmp_path, UUID) == []  # a trash dir is never an identity match
    assert sweep_trash(mode_dir) == 1
    assert not trash.exists()
