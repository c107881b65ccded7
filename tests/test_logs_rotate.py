"""Issue 32 point 5: a log file runs append to is bounded, and each run's part of it starts
with the `-v` header (versions, OS, config, archive, cookie source)."""

from __future__ import annotations

import os
from pathlib import Path

from click.testing import CliRunner

from pplx_export.cli.export import main
from pplx_export.logs import rotate_log


def test_rotation_copies_truncates_and_keeps_a_bounded_count(tmp_path: Path) -> None:
    log = tmp_path / "sync.log"
    log.write_text("small\n")
    assert not rotate_log(log, max_bytes=100, keep=2)
    held = os.open(log, os.O_WRONLY | os.O_APPEND)  # cron's `>> sync.log`, open meanwhile
    try:
        for n in range(4):
            log.write_text(f"run {n}\n" + "x" * 200)
            assert rotate_log(log, max_bytes=100, keep=2)
            assert log.stat().st_size == 0
        os.write(held, b"after\n")
    finally:
        os.close(held)
    assert log.read_text() == "after\n"  # the open descriptor still writes into sync.log
    assert (tmp_path / "sync.log.1").read_text().startswith("run 3\n")
    assert (tmp_path / "sync.log.2").read_text().startswith("run 2\n")
    assert not (tmp_path / "sync.log.3").exists()
    assert oct((tmp_path / "sync.log.1").stat().st_mode & 0o777) == "0o600"
    assert not rotate_log(tmp_path / "missing.log")


def test_a_log_file_starts_with_the_debug_header(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "run.log"
    out = tmp_path / "archive"
    out.mkdir()
    result = CliRunner().invoke(main, ["status", "--out", str(out), "--log-file", str(log)])
    assert result.exit_code == 2  # no archive there: the header was written before that
    text = log.read_text("utf-8")
    assert "pplx-export " in text.splitlines()[0] and "Python" in text.splitlines()[0]
    assert f"archive root {out}" in text
    assert "Python" not in result.stderr  # the header is in the file, not on the console
