"""Atomic file writes: a temp file in the same directory, then `os.replace`.

A killed process therefore leaves either the old file or the new one, never a torn one.
Files that cannot be regenerated (raw responses, state, downloaded assets, secrets) are
written with `durable=True`: the temp file is fsynced before the rename and the directory
after it, so the rename itself survives a power cut. Derived files skip the fsyncs.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from pathlib import Path

TEMP_PREFIX = ".pplx-tmp-"


def fsync_dir(directory: Path) -> None:
    # Directory fsync is not available on every platform (Windows); it is best effort there.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write_bytes(
    path: Path | str,
    data: bytes,
    *,
    durable: bool = False,
    mode: int | None = None,
    sync_dir: bool = True,
) -> os.stat_result:
    """Write `data` to `path` atomically. `mode` (e.g. 0o600) applies from the first byte.

    Returns the stat of the file as written (a rename keeps size and mtime), which spares
    the caller a stat. A first render writes a dozen files per thread, so this is lean in
    system calls: the temp file is named from the pid and a counter (no random names to
    try), created with its mode in the one `open`, written with `os.write` (no buffered
    file object), and its parent is created only when the `open` says it is missing.
    `sync_dir=False` leaves the directory fsync of a durable write to the caller, who writes
    several files in one directory and syncs it once after the last rename.
    """
    target = os.fspath(path)
    directory = os.path.dirname(target) or os.curdir
    fd, tmp = _create_temp(directory, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if durable:
            os.fsync(fd)
        st = os.fstat(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, target)
    except BaseException as exc:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = target  # a failed write() names no file: say which one
        raise
    if durable and sync_dir:
        fsync_dir(Path(directory))
    return st


# Temp names: the pid tells concurrent processes (and forked workers) apart, the counter
# the writes of one process (next() on it is atomic under the GIL).
_COUNTER = itertools.count()
_O_TEMP = (
    os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
)


def _create_temp(directory: str, mode: int | None) -> tuple[int, str]:
    """A new, empty temp file in `directory` (created with its parents if missing), open for
    writing, with `mode` exactly (else 0o666 less the umask) from its creation on."""
    tmp = f"{directory}{os.sep}{TEMP_PREFIX}{os.getpid()}-{next(_COUNTER)}"
    perm = 0o666 if mode is None else mode
    try:
        fd = os.open(tmp, _O_TEMP, perm)
    except FileNotFoundError:
        Path(directory).mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, _O_TEMP, perm)
    except FileExistsError:
        # Left by a killed process that had the same pid: a random name instead (tempfile is
        # imported only here: it brings shutil and random, which most runs never need).
        import tempfile

        fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=directory)
        os.fchmod(fd, perm & ~_UMASK)
    if mode is not None and mode & _UMASK:
        # The umask narrowed an explicit mode at creation: set it as asked (never wider
        # than asked, from the first byte).
        try:
            os.fchmod(fd, mode)
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
    return fd, tmp


def atomic_write_text(
    path: Path | str, text: str, *, durable: bool = False, mode: int | None = None
) -> os.stat_result:
    return atomic_write_bytes(path, text.encode("utf-8"), durable=durable, mode=mode)


def write_if_changed(
    path: Path, data: bytes | str, *, durable: bool = False, mode: int | None = None
) -> bool:
    """Atomically write `data` unless the file already holds exactly these bytes.

    Returns True when the file was written. Unchanged files keep their mtime, which is what
    makes a no-op re-render (and `git diff` of an archive) meaningful.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    path = Path(path)
    try:
        if path.stat().st_size == len(raw) and path.read_bytes() == raw:
            return False
    except OSError:
        pass
    atomic_write_bytes(path, raw, durable=durable, mode=mode)
    return True


def read_with_stat(path: str) -> tuple[bytes, tuple[int, int]]:
    """The whole file and the `(size, mtime_ns)` of what was read, from one open.

    os-level calls, not `open()`: a buffered file object costs a tty check, two seeks and
    two more fstats per file, which is measurable when re-render reads three per thread.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
    try:
        st = os.fstat(fd)
        data = os.read(fd, st.st_size + 1)
        if len(data) != st.st_size:
            # Grown since the fstat, or a short read: read to the end.
            chunks = [data]
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            data = b"".join(chunks)
        return data, (st.st_size, st.st_mtime_ns)
    finally:
        os.close(fd)


def umask_file_mode() -> int:
    """The mode `open()` gives a new file here (0o666 less the umask): what a file made with
    `tempfile.mkstemp` (always 0o600) must be set to before it becomes an archive file, so
    that it reads like its neighbours."""
    return 0o666 & ~_UMASK


def _read_umask() -> int:
    # os.umask can only be read by setting it; do it once at import, before any threads.
    current = os.umask(0)
    os.umask(current)
    return current


_UMASK = _read_umask()
