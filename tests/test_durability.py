"""Durability that tests can see: which writes are fsynced, and crash points of an export.

The random SIGKILL test (test_e2e_crash.py) shows that reruns repair whatever a kill left;
these tests pin the mechanisms deterministically, so removing an fsync, the directory fsync
after a rename, or marking a thread done before its files are written fails a test every time.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pplx_export.emulator import DEFAULT_EMAIL, run_emulator
from pplx_export.store import batch_state as state_module
from pplx_export.store.batch_state import BatchState
from pplx_export.store.state_check import check_state_vs_dirs
from tests.e2e_support import (
    E2E,
    FIXTURES,
    leftover_temp_files,
    redacted,
    served_raw,
    thread_dirs,
    thread_uuid,
)

pytestmark = pytest.mark.skipif(
    not os.path.isdir("/proc/self/fd"), reason="maps file descriptors to paths via /proc"
)


class Journal:
    """fsync and rename events, in order, with the paths they touched."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def fsynced(self, fd: int) -> None:
        self.events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"), ""))

    def renamed(self, src: Any, dst: Any) -> None:
        self.events.append(("replace", os.path.abspath(src), os.path.abspath(dst)))

    def durable(self, final: str) -> bool:
        """Was the file renamed to `final` fsynced before the rename, and its directory after?"""
        for i, (kind, src, dst) in enumerate(self.events):
            if kind != "replace" or dst != final:
                continue
            before = any(k == "fsync" and p == src for k, p, _ in self.events[:i])
            after = any(
                k == "fsync" and p == os.path.dirname(final) for k, p, _ in self.events[i + 1 :]
            )
            if before and after:
                return True
        return False


@pytest.fixture
def journal(monkeypatch: pytest.MonkeyPatch) -> Iterator[Journal]:
    record = Journal()
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        record.fsynced(fd)
        real_fsync(fd)

    def replace(src: Any, dst: Any) -> None:
        record.renamed(src, dst)
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    yield record


def test_raw_state_index_and_downloads_are_fsynced_with_their_directory(
    tmp_path: Path, journal: Journal
) -> None:
    with run_emulator(FIXTURES, page_size=100) as emu:
        env = E2E(emu, tmp_path)
        env.write_files(DEFAULT_EMAIL)
        assert env.cli("sync").exit_code == 0
    out = env.out.resolve()
    must = [out / "index" / f"library_{env.account}.json"]
    for directory in thread_dirs(out):
        must += [p for p in directory.glob("raw_*.json")]
        # Downloads; `*.code.md` / `*.diff.md` are inline assets rendered from raw_blocks.
        must += [
            p
            for p in (directory / "assets" / "files").glob("*")
            if p.is_file() and not p.name.endswith((".code.md", ".diff.md"))
        ]
    assert any("assets" in p.parts for p in must)  # downloads are among them
    not_durable = [str(p.relative_to(out)) for p in must if not journal.durable(str(p))]
    assert not_durable == []
    # Derived files skip the fsync (they can be rebuilt from the raw files).
    conversation = next(iter(thread_dirs(out))) / "conversation.md"
    assert not journal.durable(str(conversation))
    # The state store syncs itself (SQLite's own fsyncs): WAL, and FULL on every connection.
    state = BatchState.load(out)
    db = state._store()
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    state.close()


def test_a_thread_is_marked_done_only_once_its_files_are_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[str] = []
    real_record = BatchState._record

    def record(self: BatchState, uuid: str, rec: dict[str, Any]) -> None:
        root = self.path.parent.parent
        if rec.get("status") == "ok":
            directory = root / rec["dir"]
            for name in ("thread.json", "raw_entries.json", "conversation.md"):
                assert (directory / name).is_file(), (uuid, name)
            checked.append(uuid)
        real_record(self, uuid, rec)

    monkeypatch.setattr(state_module.BatchState, "_record", record)
    with run_emulator(FIXTURES, page_size=100) as emu:
        env = E2E(emu, tmp_path)
        env.write_files(DEFAULT_EMAIL)
        assert env.cli("sync").exit_code == 0
    assert sorted(checked) == sorted(u for u, r in env.state().items() if r["status"] == "ok")


class Crash(BaseException):
    """A process death at a chosen write: nothing in the tool may catch it."""


SMALL = [  # a computer thread (plain + blocks + assets) and a search thread
    "tomas/computer/2031-06-02_Audit-the-nginx-config-on-my-home-server_cb11e506",
    "maya/search/2031-05-04_How-do-Rust-lifetimes-work_24a76805",
]


@pytest.fixture
def small_library(tmp_path: Path) -> Path:
    library = tmp_path / "library"
    for rel in SMALL:
        shutil.copytree(FIXTURES / rel, library / rel)
    return library


@pytest.mark.parametrize(
    ("point", "nth"),
    [
        ("raw_entries.json", 2),  # the second thread's raw file: the first one is done
        ("raw_blocks.json", 1),
        ("conversation.md", 1),
        ("thread.json", 2),
        ("state commit", 1),  # the first thread is on disk, not yet marked done
        ("state commit", 2),  # the second thread: its commit not made
    ],
)
def test_a_crash_at_each_step_of_an_export_is_repaired_by_the_rerun(
    tmp_path: Path, small_library: Path, monkeypatch: pytest.MonkeyPatch, point: str, nth: int
) -> None:
    real_replace = os.replace
    seen = {"n": 0}

    def replace(src: Any, dst: Any) -> None:
        if os.path.basename(dst) == point:
            seen["n"] += 1
            if seen["n"] == nth:
                raise Crash(point)
        real_replace(src, dst)

    real_record = BatchState._record

    def record(self: BatchState, uuid: str, rec: dict[str, Any]) -> None:
        # The state store commits in SQLite, not by a rename: die just before the commit.
        if point == "state commit":
            seen["n"] += 1
            if seen["n"] == nth:
                raise Crash(point)
        real_record(self, uuid, rec)

    with run_emulator(small_library, page_size=100) as emu:
        env = E2E(emu, tmp_path)
        env.write_files(DEFAULT_EMAIL)
        assert env.cli("index").exit_code == 0
        monkeypatch.setattr(os, "replace", replace)
        monkeypatch.setattr(BatchState, "_record", record)
        with pytest.raises(Crash):
            env.cli("batch")
        monkeypatch.setattr(os, "replace", real_replace)
        monkeypatch.setattr(BatchState, "_record", real_record)
        assert seen["n"] == nth
        result = env.cli("batch")
        assert result.exit_code == 0, result.output
        state = env.state()
        assert len(state) == len(SMALL)
        assert {r["status"] for r in state.values()} == {"ok"}
        assert check_state_vs_dirs(env.out, state).ok
        assert leftover_temp_files(env.out) == []
        for directory in thread_dirs(env.out):
            uuid = thread_uuid(directory)
            disk = (directory / "raw_entries.json").read_text("utf-8")
            assert redacted(json.loads(disk)) == redacted(served_raw(emu, uuid, schematized=False))
