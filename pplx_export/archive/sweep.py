"""Clean up what a killed run left behind: torn temp files and unfinished thread directories.

Every write goes through a temp file (archive/atomic.py) and every thread directory gets its
thread.json last, so after a SIGKILL the only debris is recognisable by name: `.pplx-tmp-*`
files, `.pplx-trash-*` directories of a merge killed mid-delete, and thread directories
without a thread.json. The exporter sweeps them before it writes; the archive lock
(archive/lock.py) guarantees no other run is mid-write while it does.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
from pathlib import Path

from pplx_export.archive.paths import RESERVED_TOP, TRASH_PREFIX, uuid8
from pplx_export.util.atomic import TEMP_PREFIX

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


def sweep_archive(root: Path) -> int:
    """One walk of the whole archive, once per run: torn temp files anywhere and trash
    directories of killed merges, including in threads this run will not touch (the
    per-thread sweeps only see the threads they export). Returns how many were removed."""
    removed = 0
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            if name.startswith(TEMP_PREFIX):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(dirpath, name))
                    removed += 1
        for name in [d for d in dirnames if d.startswith(TRASH_PREFIX)]:
            dirnames.remove(name)  # do not walk into what is being removed
            shutil.rmtree(os.path.join(dirpath, name), ignore_errors=True)
            removed += 1
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


def sweep_unfinished_dirs(root: Path, web_uuid: str, keep: Path) -> int:
    """Remove directories of this thread that an export killed before thread.json left behind.

    A directory gets its thread.json last, so one without it is an export that never
    finished; when the thread's lastUpdated (its date part) changed before the rerun, the
    rerun writes a new directory and `find_thread_dirs` (which trusts thread.json only)
    never sees the old one again. Only directories that hold nothing but temp files, or raw
    files of this very thread, are removed: the fresh export in `keep` supersedes them.
    Trash directories of a merge killed mid-delete (`.pplx-trash-*_<uuid8>`) go too.
    """
    removed = 0
    for d in sorted(Path(root).glob(f"*/*/*_{uuid8(web_uuid)}")):
        rel = d.relative_to(root).parts
        if rel[0] in RESERVED_TOP or not d.is_dir():
            continue
        if d.name.startswith(TRASH_PREFIX) and not any(p.startswith(".") for p in rel[:-1]):
            # A merged directory renamed away and killed mid-rmtree (archive/migrate.py):
            # garbage whoever owned it. The same glob finds it, so no extra scan.
            shutil.rmtree(d)
            removed += 1
            continue
        if any(p.startswith(".") for p in rel):
            continue
        if d.resolve() == keep.resolve() or (d / "thread.json").exists():
            continue
        if not (_only_temp_files(d) or _raw_names_thread(d, web_uuid)):
            continue
        trash = d.with_name(TRASH_PREFIX + d.name)
        os.replace(d, trash)  # atomic: hidden from every scan from here on
        shutil.rmtree(trash)
        removed += 1
        log.info("removed the unfinished export directory %s", d)
    return removed
