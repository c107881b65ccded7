"""Merge a thread directory whose date moved into its canonical directory (protocol §6.1).

Order of operations makes a crash at any point harmless:

1. verify identity: both thread.json files carry exactly the same `web_uuid`;
2. copy every missing file durably, then re-read it and compare SHA-256 with the source;
   identical files are skipped, differing same-name files keep the target and are logged;
3. only when every check passed, rename the old directory to `.pplx-trash-⟨name⟩` (one
   atomic step: from now on nothing looks for it) and remove it.

A crash during 2 leaves both directories intact; the next run finds the old one again by
identity and finishes the merge (already copied files are skipped as identical). A crash
during 3 leaves a trash directory that `sweep_trash` removes.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from pplx_export.archive.paths import TRASH_PREFIX, read_web_uuid
from pplx_export.errors import ArchiveError
from pplx_export.util.atomic import TEMP_PREFIX, atomic_write_bytes, fsync_dir

log = logging.getLogger(__name__)


@dataclass
class MergeResult:
    src: Path
    dst: Path
    copied: list[str] = field(default_factory=list)
    identical: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    removed_src: bool = False


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _files(directory: Path) -> list[str]:
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames.sort()
        for name in sorted(filenames):
            if name.startswith(TEMP_PREFIX):
                continue  # a torn write of an earlier crash, never content
            out.append((Path(dirpath) / name).relative_to(directory).as_posix())
    return out


def merge_thread_dir(src: Path, dst: Path, web_uuid: str) -> MergeResult:
    """Merge `src` into `dst` (created if needed) and delete `src` when everything checks out."""
    if src.resolve() == dst.resolve():
        raise ArchiveError(f"cannot merge a directory into itself: {src}")
    if read_web_uuid(src) != web_uuid:
        raise ArchiveError(f"identity check failed, {src} is not thread {web_uuid}")
    if dst.exists() and (dst / "thread.json").exists() and read_web_uuid(dst) != web_uuid:
        raise ArchiveError(f"identity check failed, {dst} is not thread {web_uuid}")
    result = MergeResult(src=src, dst=dst)
    failures: list[str] = []
    for rel in _files(src):
        source = src / rel
        target = dst / rel
        digest = sha256_file(source)
        if target.exists():
            if sha256_file(target) == digest:
                result.identical.append(rel)
            else:
                # §6.1: the canonical directory wins; the old version goes with the old dir.
                log.warning("merge conflict in %s: keeping %s, dropping %s", rel, target, source)
                result.conflicts.append(rel)
            continue
        atomic_write_bytes(target, source.read_bytes(), durable=True)
        st = source.stat()
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
        if sha256_file(target) != digest:
            failures.append(rel)
            continue
        result.copied.append(rel)
    if failures:
        log.error(
            "merge of %s into %s: %d file(s) failed verification, old dir kept: %s",
            src,
            dst,
            len(failures),
            ", ".join(failures),
        )
        return result
    _sync_new_dirs(dst, result.copied)
    _retire(src)
    result.removed_src = True
    log.info(
        "merged %s into %s (%d copied, %d identical, %d conflicts)",
        src,
        dst,
        len(result.copied),
        len(result.identical),
        len(result.conflicts),
    )
    return result


def _sync_new_dirs(dst: Path, copied: list[str]) -> None:
    """fsync the parent of every directory the copies may have created (dst itself,
    assets/, assets/files/): each copy is durable in its directory, but a directory made
    for it exists only once its own entry is, and the old directory is about to go."""
    dirs = {dst}
    for rel in copied:
        parts = rel.split("/")[:-1]
        dirs.update(dst.joinpath(*parts[: n + 1]) for n in range(len(parts)))
    for parent in sorted({d.parent for d in dirs}, key=lambda p: len(p.parts), reverse=True):
        fsync_dir(parent)


def _retire(src: Path) -> None:
    """Delete a merged directory: rename (atomic, hides it from identity search), then rm."""
    trash = src.with_name(TRASH_PREFIX + src.name)
    os.replace(src, trash)
    fsync_dir(src.parent)
    shutil.rmtree(trash)


def sweep_trash(mode_dir: Path) -> int:
    """Remove trash directories a crash left behind in one `⟨account⟩/⟨mode⟩` folder."""
    removed = 0
    if not mode_dir.is_dir():
        return 0
    for d in mode_dir.iterdir():
        if d.name.startswith(TRASH_PREFIX) and d.is_dir():
            shutil.rmtree(d)
            removed += 1
    return removed
