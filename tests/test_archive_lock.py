"""One writer per archive: the lock refuses a second run and never outlives its process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pplx_export.cli.export import main
from pplx_export.errors import ArchiveError
from pplx_export.store.lock import archive_lock

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="flock is POSIX")

REPO = Path(__file__).resolve().parent.parent
HOLD = """
import sys, time
from pathlib import Path
from pplx_export.store.lock import archive_lock
with archive_lock(Path(sys.argv[1])):
    print("locked", flush=True)
    time.sleep(60)
"""


def test_a_second_holder_is_refused(tmp_path: Path) -> None:
    with (
        archive_lock(tmp_path),
        pytest.raises(ArchiveError, match="another pplx-export run"),
        archive_lock(tmp_path),
    ):
        pass
    with archive_lock(tmp_path):  # released on exit
        pass


def test_the_held_set_makes_it_reentrant(tmp_path: Path) -> None:
    held: set[str] = set()
    with archive_lock(tmp_path, held), archive_lock(tmp_path, held):
        assert held
    assert not held


def test_a_brand_new_archive_is_locked_too(tmp_path: Path) -> None:
    # Two first runs on an archive that does not exist yet: the second is refused cleanly.
    root = tmp_path / "not-yet"
    with (
        archive_lock(root),
        pytest.raises(ArchiveError, match="another pplx-export run"),
        archive_lock(root),
    ):
        pass
    assert (root / "index").is_dir()


def test_an_unwritable_root_is_one_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with (
        pytest.raises(ArchiveError, match=r"cannot write to archive .*a-file/archive"),
        archive_lock(blocker / "archive"),
    ):
        pass


def test_another_process_blocks_the_cli_until_it_dies(tmp_path: Path) -> None:
    (tmp_path / "index").mkdir()
    with subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    ) as proc:
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
            result = CliRunner().invoke(main, ["re-render", "--out", str(tmp_path)])
            assert result.exit_code == 5  # its own code: "try again later" for cron wrappers
            assert "another pplx-export run" in result.output
        finally:
            proc.kill()
    # The kernel dropped the lock with the process: no stale lock to clean up by hand.
    result = CliRunner().invoke(main, ["re-render", "--out", str(tmp_path), "-q"])
    assert result.exit_code == 0, result.output
