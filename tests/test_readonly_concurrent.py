"""A read-only archive (a backup, a snapshot) is searchable and verifiable; `verify` waits
for a run in progress instead of reporting its half-done work (issue 33)."""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pplx_export.cli.export import main
from pplx_export.emulator import DEFAULT_EMAIL, run_emulator
from tests.e2e_support import E2E, FIXTURES


@pytest.fixture
def exported(tmp_path: Path) -> Iterator[E2E]:
    with run_emulator(FIXTURES, page_size=100) as emu:
        env = E2E(emu, tmp_path)
        env.write_files(DEFAULT_EMAIL)
        assert env.cli("sync").exit_code == 0
        assert env.offline("search", "--rebuild").exit_code == 0
        yield env


WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


@pytest.fixture
def read_only(exported: E2E, monkeypatch: pytest.MonkeyPatch) -> E2E:
    """Every open for writing under the archive fails as on a read-only file system."""
    real_open = os.open
    top = str(exported.out)

    def ro_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & WRITE_FLAGS and os.path.abspath(os.fspath(path)).startswith(top):
            raise OSError(errno.EROFS, "Read-only file system", os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", ro_open)
    return exported


def test_search_and_verify_work_on_a_read_only_archive(read_only: E2E) -> None:
    found = read_only.offline("search", "basil", "--json")
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["count"] >= 1
    checked = read_only.offline("verify", "--json")
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.stdout)["ok"]
    # Writing needs write access, and says so in one line.
    for args in (("verify", "--fix"), ("search", "--rebuild")):
        refused = read_only.offline(*args)
        assert refused.exit_code != 0, refused.output
        assert "cannot write to archive" in refused.stderr and "Read-only" in refused.stderr


def test_verify_waits_for_a_run_in_progress(exported: E2E) -> None:
    fd = os.open(exported.out / "index" / ".lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a run holds the archive
    waiting = threading.Event()
    released: list[bool] = []

    class Release(logging.Handler):
        def emit(self, record: Any) -> None:
            if "waiting for it to finish" in record.getMessage() and not waiting.is_set():
                waiting.set()
                released.append(True)
                os.close(fd)  # the run ends

    handler = Release()
    logging.getLogger("pplx_export.store.lock").addHandler(handler)
    try:
        result = CliRunner().invoke(
            main,
            ["verify", "--json", "--config", str(exported.config), "--out", str(exported.out)],
            catch_exceptions=False,
        )
    finally:
        logging.getLogger("pplx_export.store.lock").removeHandler(handler)
    assert released == [True]  # verify waited, and read the archive only once it was free
    assert result.exit_code == 0, result.output
    assert "waiting for it to finish" in result.stderr
