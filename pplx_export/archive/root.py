"""Can this archive root be written? Checked before a command sends its first request.

A run that would fail at its first write (a read-only file system, a path under a file, a
parent directory that does not exist, no permission) fails up front with one line naming
the absolute path and the reason, instead of a traceback after minutes of downloads. The
probe creates and removes a temporary file; a root that does not exist yet is not created
here (its parent is probed instead), so a run that fails later leaves nothing behind.
"""

from __future__ import annotations

import os
from pathlib import Path

from pplx_export.errors import UsageError

PROBE_PREFIX = ".pplx-write-probe-"


class ArchiveUnwritable(UsageError):
    """`--out` / `archive_root` cannot be written (exit 2, a usage or config problem)."""


def ensure_writable(root: Path) -> None:
    """Raise ArchiveUnwritable unless files can be created in `root` (or, when it does not
    exist yet, in its parent directory)."""
    root = Path(root).absolute()
    target = root
    if not root.exists():
        parent = root.parent
        if not parent.exists():
            _fail(root, f"parent directory {parent} does not exist")
        target = parent
    if not target.is_dir():
        _fail(root, "not a directory" if target == root else f"{target} is not a directory")
    try:
        _probe(target)
    except OSError as exc:
        _fail(root, exc.strerror or type(exc).__name__)


def _probe(directory: Path) -> None:
    """Create and remove an empty file in `directory`; OSError when that fails.

    Named from the pid, as util/atomic names its temp files, rather than by tempfile: every
    writing command probes, and tempfile (which brings shutil and random) is a measurable
    share of the start-up of a no-op `re-render --changed-only`."""
    probe = os.path.join(directory, f"{PROBE_PREFIX}{os.getpid()}")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # left by a killed run that had the same pid: a random name
        import tempfile

        fd, probe = tempfile.mkstemp(prefix=PROBE_PREFIX, dir=directory)
    os.close(fd)
    os.unlink(probe)


def _fail(root: Path, reason: str) -> None:
    raise ArchiveUnwritable(f"cannot write to archive {root}: {reason}")


def require_archive(root: Path) -> None:
    """UsageError unless `root` holds an archive (its `index/` directory): an offline report
    on a wrong path must say so, not show a table of zeros."""
    root = Path(root).absolute()
    if not (root / "index").is_dir():
        raise UsageError(f"no archive at {root} (pass --out, or set archive_root in the config)")
