"""Atomic file writes: a temp file in the same directory, then `os.replace`.

A killed process therefore leaves either the old file or the new one, never a torn one.
Files that cannot be regenerated (raw responses, state, downloaded assets, secrets) are
written with `durable=True`: the temp file is fsynced before the rename and the directory
after it, so the rename itself survives a power cut. Derived files skip the fsyncs.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
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
    path: Path, data: bytes, *, durable: bool = False, mode: int | None = None
) -> None:
    """Write `data` to `path` atomically. `mode` (e.g. 0o600) applies from the first byte."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=path.parent)
    try:
        # mkstemp creates the file 0600 already; widen only when asked, never narrow later.
        if mode is not None:
            os.fchmod(fd, mode)
        else:
            os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = str(path)  # a failed write() names no file: say which one
        raise
    if durable:
        fsync_dir(path.parent)


def atomic_write_text(
    path: Path, text: str, *, durable: bool = False, mode: int | None = None
) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), durable=durable, mode=mode)


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


def _read_umask() -> int:
    # os.umask can only be read by setting it; do it once at import, before any threads.
    current = os.umask(0)
    os.umask(current)
    return current


_UMASK = _read_umask()
