"""The drift report points at `capture` (issue 36): a thread with an unknown block usage
makes `sync` name it with the capture command; `verify --drift` lists the kind with it;
a thread with a loss does the same in `re-render`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pplx_export.emulator import DEFAULT_EMAIL, run_emulator
from pplx_export.emulator.library import SAMPLE_DIR
from tests.e2e_support import E2E

ESPRESSO = "2c0cd090"
CAPTURE = "pplx-export capture https://www.perplexity.ai/search/"


def _espresso(library: Path) -> tuple[Path, str]:
    directory = next(library.glob(f"alice/search/*_{ESPRESSO}"))
    doc = json.loads((directory / "thread.json").read_text("utf-8"))
    return directory, str(doc["web_uuid"])


def test_sync_names_the_first_drifted_thread_and_the_capture_command(tmp_path: Path) -> None:
    library = tmp_path / "lib"
    shutil.copytree(SAMPLE_DIR, library)
    directory, uuid = _espresso(library)
    for name in ("raw_entries.json", "raw_blocks.json"):  # the plain entry has blocks too
        raw = directory / name
        doc = json.loads(raw.read_text("utf-8"))
        doc["entries"][0].setdefault("blocks", []).append(
            {"intended_usage": "mystery_widget", "mystery_block": {"progress": "DONE"}}
        )
        raw.write_text(json.dumps(doc), "utf-8")
    with run_emulator(library) as emu:
        env = E2E(emu, tmp_path / "run", account="alice")
        env.tmp.mkdir()
        env.write_files(DEFAULT_EMAIL)
        result = env.cli("sync")
        assert result.exit_code == 0, result.output
        assert "threads: 1 with unknown shapes; first: " + uuid in result.stderr
        assert "  this makes a bundle of it for a bug report:\n" in result.stderr
        assert f"\n  {CAPTURE}{uuid}\n" in result.stderr
        as_json = env.cli("export", uuid, "--force", "--json")
        assert json.loads(as_json.stdout)["drift"]["capture"] == CAPTURE + uuid

        verify = env.offline("verify", "--drift")
        assert verify.exit_code == 0, verify.output
        lines = verify.stdout.splitlines()
        at = lines.index("  block_usage 'mystery_widget': 1x in 1 thread(s); first:")
        assert lines[at + 1].strip().endswith(f"_{ESPRESSO}")
        assert lines[at + 2] == f"    {CAPTURE}{uuid}"
        whole = env.offline("verify")
        assert f"  {CAPTURE}{uuid}" in whole.stdout.splitlines()


def test_sample_sync_has_no_drift_line(tmp_path: Path) -> None:
    with run_emulator() as emu:
        env = E2E(emu, tmp_path, account="alice")
        env.write_files(DEFAULT_EMAIL)
        result = env.cli("sync")
        assert result.exit_code == 0, result.output
        assert "capture" not in result.stderr
