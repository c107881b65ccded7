"""Logging to stderr (stdout is reserved for machine output) and an optional DEBUG log file.

While a progress display is live on the terminal, console log lines go through that
display's console (`live_console`), which prints them above the bar and redraws it: written
straight to stderr they would land in the middle of the bar's line and garble both.
The log file is owner-only (0600): it names threads, titles and paths.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

LOGGER_NAME = "pplx_export"
_HANDLER_MARK = "_pplx_export_handler"


class Printer(Protocol):
    """What a live display offers to print through (a rich Console)."""

    def print(self, *objects: Any, **kwargs: Any) -> None: ...


_live: list[Printer] = []


@contextlib.contextmanager
def live_console(console: Printer) -> Iterator[None]:
    """Route console log lines through `console` (a live rich display's) while it is up."""
    _live.append(console)
    try:
        yield
    finally:
        _live.remove(console)


class ConsoleHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """stderr, or the live display's console while one is up (see the module doc)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    def emit(self, record: logging.LogRecord) -> None:
        if not _live:
            super().emit(record)
            return
        try:
            # Not markup: messages carry titles and paths, where "[...]" is plain text.
            _live[-1].print(self.format(record), markup=False, highlight=False, soft_wrap=True)
        except Exception:
            self.handleError(record)


def open_private_log(path: Path) -> None:
    """Create `path` owner-only before a handler opens it (a handler would use the umask)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.close(fd)
    os.chmod(path, 0o600)  # an existing file keeps its mode through O_CREAT: tighten it


def setup_logging(verbose: int = 0, quiet: bool = False, log_file: Path | None = None) -> None:
    """Configure the package logger. Idempotent: earlier handlers of ours are replaced."""
    logger = logging.getLogger(LOGGER_NAME)
    for handler in list(logger.handlers):
        if getattr(handler, _HANDLER_MARK, False):
            logger.removeHandler(handler)
            handler.close()
    if quiet:
        console_level = logging.ERROR
    elif verbose >= 1:
        console_level = logging.DEBUG
    else:
        console_level = logging.INFO
    console = ConsoleHandler()
    console.setLevel(console_level)
    console.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    setattr(console, _HANDLER_MARK, True)
    logger.addHandler(console)
    level = console_level
    if log_file is not None:
        open_private_log(log_file)
        # The log file always records DEBUG, whatever the console shows.
        fh = logging.FileHandler(log_file, encoding="utf-8")
        fh.setLevel(logging.DEBUG)
        fh.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        setattr(fh, _HANDLER_MARK, True)
        logger.addHandler(fh)
        level = logging.DEBUG
    logger.setLevel(level)
    logger.propagate = True
    # httpx logs every request URL, query string included, at INFO: a signed download URL
    # carries its credentials there. Our client logs host+path itself.
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


LOG_MAX_BYTES = 1 << 20  # rotate a log file past 1 MiB ...
LOG_KEEP = 3  # ... keeping this many older copies (<name>.1 newest)


def rotate_log(path: Path, max_bytes: int = LOG_MAX_BYTES, keep: int = LOG_KEEP) -> bool:
    """Bound a log file that runs append to (the scheduled `sync.log`): past `max_bytes`,
    shift `<path>.N` up, copy the file to `<path>.1` and empty it in place. Copy and
    truncate, not rename: cron's `>> sync.log` holds the file open (O_APPEND) for this very
    run, and must keep writing into `sync.log`. True when it rotated."""
    try:
        if path.stat().st_size <= max_bytes:
            return False
        for n in range(keep - 1, 0, -1):
            older = path.with_name(f"{path.name}.{n}")
            if older.exists():
                os.replace(older, path.with_name(f"{path.name}.{n + 1}"))
        first = path.with_name(f"{path.name}.1")
        fd = os.open(first, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as dst, path.open("rb") as src:
            while chunk := src.read(1 << 16):
                dst.write(chunk)
        os.truncate(path, 0)
    except FileNotFoundError:
        return False
    except OSError as exc:
        sys.stderr.write(f"warning: could not rotate {path}: {exc}\n")
        return False
    return True
