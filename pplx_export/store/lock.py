"""One writer per archive: an advisory lock on `index/.lock`.

cron's `sync` and a hand-started `batch` or `re-render` on the same archive would otherwise
interleave state saves (the last writer wins, records are lost) and the crash sweeps of one
run could remove the other's temp files mid-write. The lock is `flock` on POSIX, released by
the kernel when the process dies, so a killed run never leaves a stale lock behind. Where
`fcntl` does not exist (Windows) the run goes on unlocked, with a debug line.

An archive root that does not exist yet is not created here (a run that fails to sign in
must not leave an archive behind); the first run of a new archive is simply unlocked.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from pplx_export.errors import ArchiveBusy, ArchiveError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

LOCK_NAME = ".lock"


@contextlib.contextmanager
def archive_lock(root: Path, held: set[str] | None = None) -> Iterator[None]:
    """Hold the archive's lock for the block; ArchiveBusy (exit 5) when another run holds it.

    `held` makes the lock re-entrant within one command (e.g. `sync` = index + batch): the
    caller passes the same set to nested calls and only the outermost one locks.
    """
    key = str(Path(root).resolve())
    if held is not None and key in held:
        yield
        return
    if fcntl is None:
        log.debug("no fcntl here: %s is not locked", root)
        yield
        return
    index = Path(root) / "index"
    path = index / LOCK_NAME
    try:
        # A brand-new archive is locked too: two first runs must not both start writing.
        index.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise ArchiveError(
            f"cannot write to archive {Path(root).resolve()}: {exc.strerror}"
        ) from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ArchiveBusy(
                f"another pplx-export run is writing to {root} (lock {path}); wait for it to finish"
            ) from None
        if held is not None:
            held.add(key)
        try:
            yield
        finally:
            if held is not None:
                held.discard(key)
    finally:
        os.close(fd)


@contextlib.contextmanager
def archive_read_lock(root: Path) -> Iterator[None]:
    """For a reader that must not see a run's work half done (`verify`): wait while a run
    holds the archive's lock, then hold it shared for the block (no run starts meanwhile).

    Opens the lock file read-only and never creates it: a read-only archive (a backup, a
    snapshot) is read unlocked, as is one whose lock file does not exist (no run ever
    wrote it, so none is running)."""
    if fcntl is None:
        yield
        return
    try:
        fd = os.open(Path(root) / "index" / LOCK_NAME, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning("another pplx-export run is writing to %s; waiting for it to finish", root)
            fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)
