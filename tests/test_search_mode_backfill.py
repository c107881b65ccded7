"""`search-mode-backfill` against the emulator (protocol §4.4, issue 11)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pplx_export.parse.mode import aggregate_search_mode
from pplx_export.store.library_index import load_index
from tests.e2e_support import E2E, THREAD_ENDPOINT, by_endpoint, fixture_threads
from tests.upkeep_support import (
    COMPUTER_UUID,
    as_json,
    dir_of,
    export_fixture_library,
    upkeep_env,
)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_fixture_library(tmp_path_factory.mktemp("exported"))


@pytest.fixture
def env(tmp_path: Path, exported: Path) -> Iterator[E2E]:
    with upkeep_env(tmp_path, exported) as e:
        yield e


def _expected(uuid: str) -> str:
    raw = json.loads((fixture_threads()[uuid] / "raw_entries.json").read_text("utf-8"))
    return aggregate_search_mode(raw["entries"] + raw["background_entries"])


def _modes(env: E2E) -> dict[str, str]:
    return {r["entryUUID"]: r.get("search_mode", "") for r in load_index(env.out, "maya").threads}


def test_offline_fills_every_row_from_the_raw_files_with_zero_requests(env: E2E) -> None:
    assert set(_modes(env).values()) == {""}
    env.emu.reset_stats()
    result = env.cli("search-mode-backfill", "--offline", "--json")
    assert result.exit_code == 0, result.output
    assert env.stats()["total"] == 0
    modes = _modes(env)
    assert modes == {uuid: _expected(uuid) for uuid in modes}
    assert modes[COMPUTER_UUID] == "ASI"
    doc = as_json(result.stdout)
    assert doc["filled_local"] == sum(1 for v in modes.values() if v)
    # Kept by the next index refresh (the listing never carries it).
    assert env.cli("index").exit_code == 0
    assert _modes(env) == modes
    again = as_json(env.cli("search-mode-backfill", "--offline", "--json").stdout)
    assert again["filled_local"] == 0 and again["already"] == doc["filled_local"]


def test_rows_without_raw_files_are_asked_online(env: E2E) -> None:
    shutil.rmtree(dir_of(env, COMPUTER_UUID))  # listed, never exported here
    offline = as_json(env.cli("search-mode-backfill", "--offline", "--json").stdout)
    assert offline["not_exported"] == 1
    assert _modes(env)[COMPUTER_UUID] == ""
    env.emu.reset_stats()
    result = env.cli("search-mode-backfill", "--json")
    assert result.exit_code == 0, result.output
    assert as_json(result.stdout)["filled_online"] == 1
    assert env.stats()["by_thread"] == {COMPUTER_UUID: by_endpoint(env.stats(), THREAD_ENDPOINT)}
    assert _modes(env)[COMPUTER_UUID] == "ASI"


def test_limit_bounds_the_rows_examined(env: E2E) -> None:
    doc = as_json(env.cli("search-mode-backfill", "--offline", "--limit", "2", "--json").stdout)
    assert doc["filled_local"] + doc["unknown"] == 2
