"""One listing of the archive per run, whatever the number of threads it exports.

Finding a thread's older directories and the debris of a killed export used to glob the
whole archive twice per exported thread; the run now lists it once (`scan.ThreadDirs`) and
keeps that listing current. Counted, not timed: every listing of the archive root.
"""

from __future__ import annotations

import os
import pathlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pplx_export.archive import scan
from pplx_export.archive.paths import TRASH_PREFIX, find_thread_dirs
from pplx_export.archive.scan import ThreadDirs
from pplx_export.archive.sweep import sweep_archive
from pplx_export.emulator import DEFAULT_EMAIL, run_emulator
from pplx_export.store.state_check import check_state_vs_dirs
from tests.e2e_support import E2E, FIXTURES, thread_dirs

SEARCH = sorted((FIXTURES / "maya").glob("*/*"))
ALL = sorted(FIXTURES.glob("*/*/*"))


class RootListings:
    """Counts the listings of one directory (os.scandir/os.walk/listdir, Path.glob/iterdir)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = ""
        self.calls: list[str] = []
        self.builds = 0
        real_scandir, real_walk, real_listdir = os.scandir, os.walk, os.listdir
        real_glob, real_iterdir = pathlib.Path.glob, pathlib.Path.iterdir
        real_build = ThreadDirs.build.__func__  # type: ignore[attr-defined]
        me = self

        def hit(kind: str, path: Any) -> None:
            if isinstance(path, int):  # a directory descriptor (shutil.rmtree)
                return
            if me.root and os.path.abspath(os.fspath(path)) == me.root:
                me.calls.append(kind)

        def scandir(path: Any = ".") -> Any:
            hit("scandir", path)
            return real_scandir(path)

        def walk(top: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
            hit("walk", top)
            return real_walk(top, *args, **kwargs)

        def listdir(path: Any = ".") -> list[Any]:
            hit("listdir", path)
            return real_listdir(path)

        def glob(self: pathlib.Path, pattern: str, *args: Any, **kwargs: Any) -> Any:
            hit(f"glob {pattern}", self)
            return real_glob(self, pattern, *args, **kwargs)

        def iterdir(self: pathlib.Path) -> Any:
            hit("iterdir", self)
            return real_iterdir(self)

        def build(cls: type[ThreadDirs], root: Path) -> ThreadDirs:
            me.builds += 1
            return real_build(cls, root)  # type: ignore[no-any-return]

        monkeypatch.setattr(os, "scandir", scandir)
        monkeypatch.setattr(os, "walk", walk)
        monkeypatch.setattr(os, "listdir", listdir)
        monkeypatch.setattr(pathlib.Path, "glob", glob)
        monkeypatch.setattr(pathlib.Path, "iterdir", iterdir)
        monkeypatch.setattr(scan.ThreadDirs, "build", classmethod(build))


def library(tmp_path: Path, dirs: list[Path]) -> Path:
    lib = tmp_path / "library"
    for d in dirs:
        shutil.copytree(d, lib / d.relative_to(FIXTURES))
    return lib


def batch_listings(tmp_path: Path, dirs: list[Path], monkeypatch: pytest.MonkeyPatch) -> Any:
    with run_emulator(library(tmp_path, dirs), page_size=100) as emu:
        env = E2E(emu, tmp_path)
        env.write_files(DEFAULT_EMAIL)
        assert env.cli("index").exit_code == 0
        assert env.cli("batch").exit_code == 0
        # An older directory of every thread (its date moved): each export merges one.
        for d in thread_dirs(env.out):
            d.rename(d.with_name("2020-01-01_" + d.name.split("_", 1)[1]))
        counter = RootListings(monkeypatch)
        counter.root = os.path.abspath(env.out)
        result = env.cli("batch", "--full", "--force")
        monkeypatch.undo()
        assert result.exit_code == 0, result.output
        state = env.state()
        assert len(state) == len(dirs) and check_state_vs_dirs(env.out, state).ok
        assert not any(p.name.startswith("2020-01-01_") for p in thread_dirs(env.out))
        return counter


def test_a_batch_lists_the_archive_once_whatever_its_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = batch_listings(tmp_path / "small", SEARCH[:2], monkeypatch)
    large = batch_listings(tmp_path / "large", ALL, monkeypatch)
    # The root is listed once per run: the sweep of debris, which lists the thread
    # directories too (no separate ThreadDirs.build, no glob per thread).
    assert small.calls == large.calls == ["scandir"]
    assert small.builds == large.builds == 0


def test_the_listing_follows_what_the_run_does(tmp_path: Path) -> None:
    uuid = "abcdef12-0000-4000-8000-000000000000"
    a = tmp_path / "alice" / "search" / "2042-01-01_x_abcdef12"
    trash = tmp_path / "alice" / "search" / f"{TRASH_PREFIX}2041-01-01_x_abcdef12"
    for d in (a, trash, tmp_path / "index" / "x_abcdef12", tmp_path / ".git" / "m" / "x_abcdef12"):
        d.mkdir(parents=True)
    (tmp_path / "alice" / "search" / ".hidden_abcdef12").mkdir()
    (a / "thread.json").write_text(f'{{"web_uuid": "{uuid}"}}')
    dirs = ThreadDirs.build(tmp_path)
    assert dirs.named_for(uuid) == sorted([a, trash])
    assert find_thread_dirs(tmp_path, uuid, dirs.named_for(uuid)) == find_thread_dirs(
        tmp_path, uuid
    )
    b = tmp_path / "bob" / "study" / "2042-02-02_y_abcdef12"
    dirs.add(b)
    dirs.discard(trash)
    assert dirs.named_for(uuid) == [a, b]
    assert dirs.named_for("other-uuid") == []


def test_the_sweep_lists_what_a_separate_listing_would(tmp_path: Path) -> None:
    """The batch's one walk both sweeps debris and lists the directories (symlinked account
    folders included, as the glob did); the trash it removes is not listed."""
    root = tmp_path / "archive"
    elsewhere = tmp_path / "elsewhere" / "search" / "2042-01-01_z_12345678"
    elsewhere.mkdir(parents=True)
    (root / "index").mkdir(parents=True)
    (root / "carol").symlink_to(tmp_path / "elsewhere")
    keep = root / "alice" / "search" / "2042-01-01_x_abcdef12"
    keep.mkdir(parents=True)
    (keep / ".pplx-tmp-torn").write_text("x")
    (elsewhere / ".pplx-tmp-torn").write_text("x")
    (root / "alice" / "search" / f"{TRASH_PREFIX}2041_x_abcdef12").mkdir()
    dirs = ThreadDirs(root)
    assert sweep_archive(root, dirs) == 3
    assert dirs == ThreadDirs.build(root)
    assert dirs.named_for("abcdef12-0") == [keep]
    assert dirs.named_for("12345678-0") == [root / "carol" / "search" / elsewhere.name]
    assert not list(keep.iterdir()) and not list(elsewhere.iterdir())
