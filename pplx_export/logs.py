"""Logging to stderr (stdout is reserved for machine output) and an optional DEBUG log file."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

LOGGER_NAME = "pplx_export"
_HANDLER_MARK = "_pplx_export_handler"


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
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(console_level)
    console.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    setattr(console, _HANDLER_MARK, True)
    logger.addHandler(console)
    level = console_level
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
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
