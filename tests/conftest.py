"""Shared fixtures. The autouse fixture keeps every test away from the real home directory."""

from __future__ import annotations

import logging
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from pplx_export.logs import LOGGER_NAME

# A shell starts a background job (`pytest ... &`, nohup, some CI runners) with SIGINT
# ignored, and every child inherits that: the Ctrl-C tests would then watch their child
# ignore the signal. A Python handler here makes children start with the default again.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME, the platform config dir and the CWD (./web_archive) into tmp_path."""
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    for var in ("PPLX_EXPORT_CONFIG", "PPLX_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    return home


@pytest.fixture(autouse=True)
def reset_package_logger() -> Iterator[None]:
    """CLI runs configure the `pplx_export` logger (level, stderr handler); undo that after
    each test so a `-q` run cannot hide the next test's warnings from caplog."""
    yield
    logger = logging.getLogger(LOGGER_NAME)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    logger.setLevel(logging.NOTSET)
    logger.propagate = True
