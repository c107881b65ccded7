"""Clean up what a killed run left behind: torn temp files and unfinished thread directories.

Every write goes through a temp file (archive/atomic.py) and every thread directory gets its
thread.json last, so after a SIGKILL the only debris is recognisable by name: `.pplx-tmp-*`
files, `.pplx-trash-*` directories of a merge killed mid-delete, and thread directories
without a thread.json. The exporter sweeps them before it writes; the archive lock
(store/lock.py) guarantees no other run is mid-write while it does.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from pplx_export.archive.paths import RESERVED_TOP, TRASH_PREFIX, uuid8
from pplx_export.util.atomic import TEMP_PREFIX

if TYPE_CHECKING:
    from pplx_export.archive.scan import ThreadDirs

log = logging.getLogger(__name__)


def sweep_temp_files(directory: Path, *, recursive: bool = True) -> int:
    """Remove the torn writes a killed run left in `directory`; return how many.

    Atomic writes and downloads go through `.pplx-tmp-*` files (downloads end in `.part`)
    that a SIGKILL leaves behind. One process exports a thread at a time (the batch state is
    not shared between concurrent runs either), so any such file here is garbage.
    """
    removed = 0
    for dirpath, _dirnames, filenames in os.walk(directory):
        for name in filenames:
            if name.startswith(TEMP_PREFIX):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(dirpath, name))
                    removed += 1
        if not recursive:
            break
    if removed:
        log.info("removed %d leftover temp file(s) in %s", removed, directory)
    return removed


def sweep_archive(root: Path, dirs: ThreadDirs | None = None) -> int:
    """One walk of the whole archive, once per run: torn temp files anywhere and trash
    directories of killed merges, including in threads this run will not touch (the
    per-thread sweeps only see the threads they export). Returns how many were removed.

    With `dirs`, the same walk lists the thread directories into it (the run's one listing
    of the archive, `scan.ThreadDirs`); like the glob it stands for, it follows symlinked
    account and mode folders (symlinks deeper down are not followed, as by `os.walk`)."""
    removed = 0
    stack: list[tuple[str, tuple[str, ...]]] = [(os.fspath(root), ())]
    while stack:
        path, rel = stack.pop()
        try:
            with os.scandir(path) as it:
                entries = list(it)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        for entry in entries:
            if entry.name.startswith(TEMP_PREFIX) and not entry.is_dir():
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
                    removed += 1
                continue
            if not entry.is_dir():
                continue
            if entry.name.startswith(TRASH_PREFIX):
                shutil.rmtree(entry.path, ignore_errors=True)  # not walked into: going away
                removed += 1
                continue
            if dirs is not None and len(rel) == 2:
                dirs.take(rel[0], rel[1], entry.name)
            if len(rel) < 2 or not entry.is_symlink():
                stack.append((entry.path, (*rel, entry.name)))
    if removed:
        log.info("removed %d leftover temp file(s) and trash director(ies) in %s", removed, root)
    return removed


def _only_temp_files(directory: Path) -> bool:
    return all(name.startswith(TEMP_PREFIX) for _, _, names in os.walk(directory) for name in names)


def _raw_names_thread(directory: Path, web_uuid: str) -> bool:
    """Does the directory's raw_entries.json belong to `web_uuid` (its thread_url_slug)?"""
    try:
        doc = json.loads((directory / "raw_entries.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    entries = doc.get("entries") if isinstance(doc, dict) else None
    return isinstance(entries, list) and any(
        isinstance(e, dict) and web_uuid in str(e.get("thread_url_slug") or "") for e in entries
    )


def sweep_unfinished_dirs(
    root: Path, web_uuid: str, keep: Path, dirs: ThreadDirs | None = None
) -> int:
    """Remove directories of this thread that an export killed before thread.json left behind.

    A directory gets its thread.json last, so one without it is an export that never
    finished; when the thread's lastUpdated (its date part) changed before the rerun, the
    rerun writes a new directory and `find_thread_dirs` (which trusts thread.json only)
    never sees the old one again. Only directories that hold nothing but temp files, or raw
    files of this very thread, are removed: the fresh export in `keep` supersedes them.
    Trash directories of a merge killed mid-delete (`.pplx-trash-*_<uuid8>`) go too.
    `dirs`: the run's listing of the archive (kept current here), instead of a glob.
    """
    removed = 0
    if dirs is not None:
        candidates = dirs.named_for(web_uuid)
    else:
        candidates = sorted(Path(root).glob(f"*/*/*_{uuid8(web_uuid)}"))
    for d in candidates:
        rel = d.relative_to(root).parts
        if rel[0] in RESERVED_TOP or not d.is_dir():
            continue
        if d.name.startswith(TRASH_PREFIX) and not any(p.startswith(".") for p in rel[:-1]):
            # A merged directory renamed away and killed mid-rmtree (archive/migrate.py):
            # garbage whoever owned it. The same glob finds it, so no extra scan.
            shutil.rmtree(d)
            removed += 1
            if dirs is not None:
                dirs.discard(d)
            continue
        if any(p.startswith(".") for p in rel):
            continue
        if d.resolve() == keep.resolve() or (d / "thread.json").exists():
            continue
        if not (_only_temp_files(d) or _raw_names_thread(d, web_uuid)):
            continue
        trash = d.with_name(TRASH_PREFIX + d.name)
        os.replace(d, trash)  # atomic: hidden from every scan from here on
        if dirs is not None:
            dirs.discard(d)
        shutil.rmtree(trash)
        removed += 1
        log.info("removed the unfinished export directory %s", d)
    return removed
