"""End to end: what is on disk is never fetched again just because bookkeeping went missing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pplx_export.emulator import DEFAULT_EMAIL, run_emulator
from tests.e2e_support import E2E, FIXTURES, by_endpoint, fixture_threads


@pytest.fixture
def exported(tmp_path: Path) -> Iterator[E2E]:
    with run_emulator(FIXTURES, page_size=100) as emu:
        env = E2E(emu, tmp_path)
        env.write_files(DEFAULT_EMAIL)
        assert env.cli("sync").exit_code == 0
        emu.reset_stats()
        yield env


def test_a_missing_state_is_rebuilt_from_disk_and_costs_no_thread_fetch(exported: E2E) -> None:
    state_file = exported.out / "index" / "batch_state.json"
    before = exported.state()
    state_file.unlink()
    result = exported.cli("batch")
    assert result.exit_code == 0, result.output
    assert "missing; rebuilt from disk" in result.stderr
    assert by_endpoint(exported.stats(), "GET /rest/thread") == 0
    after = exported.state()
    assert set(after) == set(before) == set(fixture_threads())
    assert {u: r["dir"] for u, r in after.items()} == {u: r["dir"] for u, r in before.items()}
