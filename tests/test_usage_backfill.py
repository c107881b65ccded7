"""`usage-backfill` against the emulator (protocol §2.10, issue 11)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pplx_export.emulator import DEFAULT_EMAIL, run_emulator
from pplx_export.store.credit_usage import FORBIDDEN, load_usage, usage_key
from pplx_export.store.docs import doc_keys, load_bytes, save_bytes
from tests.e2e_support import E2E, FIXTURES, by_endpoint, thread_dirs, thread_uuid
from tests.upkeep_support import (
    COMPUTER_UUID,
    SEARCH_UUID,
    TOMAS_EMAIL,
    add_tomas,
    as_json,
    export_fixture_library,
    set_thread_json,
    thread_json,
    upkeep_env,
)

USAGE = "GET /rest/billing/credits/thread-usage"


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_fixture_library(tmp_path_factory.mktemp("exported"))


@pytest.fixture
def env(tmp_path: Path, exported: Path) -> Iterator[E2E]:
    with upkeep_env(tmp_path, exported) as e:
        yield e


def test_usage_recorded_by_context_uuid_keyed_by_web_uuid(env: E2E) -> None:
    n_threads = len(thread_dirs(env.out))
    env.emu.reset_stats()
    result = env.cli("usage-backfill", "--json")
    assert result.exit_code == 0, result.output
    doc = as_json(result.stdout)
    assert doc["fetched"] == n_threads and doc["failed"] == 0
    assert by_endpoint(env.stats(), USAGE) == n_threads
    records = load_usage(env.out, "maya")
    assert set(records) == {thread_uuid(d) for d in thread_dirs(env.out)}
    tj = thread_json(env, SEARCH_UUID)
    record = records[SEARCH_UUID]
    # The emulator answers only for a context UUID it knows (a web UUID gets 403).
    assert record["psc_uuid"] == tj["psc_uuid"] != SEARCH_UUID
    assert isinstance(record["usage_cents"], float) and record["meter_usage"]
    assert record["mode"] == "search" and record["title"] == tj["title"]
    assert record["fetched_at"].endswith("Z")

    # Idempotent: a rerun asks nothing and rewrites nothing.
    before = load_bytes(env.out, usage_key("maya"))
    env.emu.reset_stats()
    again = as_json(env.cli("usage-backfill", "--json").stdout)
    assert again["fetched"] == 0 and again["already"] == n_threads
    assert env.stats()["total"] == 0
    assert load_bytes(env.out, usage_key("maya")) == before

    # status shows the totals per account and per mode.
    status = as_json(env.offline("status", "--json").stdout)
    (usage,) = status["credit_usage"]
    assert usage["account"] == "maya" and usage["threads"] == n_threads
    cents = sum(r["usage_cents"] for r in records.values())
    assert usage["credits"] == round(cents / 100, 2)
    assert set(usage["credits_by_mode"]) == {r["mode"] for r in records.values()}
    assert "credits used by maya" in env.offline("status").stdout


def test_forbidden_is_recorded_and_never_retried(env: E2E) -> None:
    env.emu.mutate(own=COMPUTER_UUID, email=TOMAS_EMAIL)  # maya's session may not ask
    result = env.cli("usage-backfill", "--json")
    assert result.exit_code == 0, result.output
    assert as_json(result.stdout)["forbidden"] == 1
    record = load_usage(env.out, "maya")[COMPUTER_UUID]
    assert record["error"] == FORBIDDEN and "usage_cents" not in record
    env.emu.reset_stats()
    assert as_json(env.cli("usage-backfill", "--json").stdout)["forbidden"] == 0
    assert env.stats()["total"] == 0


def test_every_account_is_asked_with_its_own_session(env: E2E) -> None:
    add_tomas(env)
    env.emu.mutate(own=COMPUTER_UUID, email=TOMAS_EMAIL)
    set_thread_json(env, COMPUTER_UUID, export_via="tomas")
    doc = as_json(env.cli("usage-backfill", "--json").stdout)
    assert doc["accounts"] == ["maya", "tomas"]
    assert doc["forbidden"] == 0 and doc["failed"] == 0
    assert set(load_usage(env.out, "tomas")) == {COMPUTER_UUID}
    assert COMPUTER_UUID not in load_usage(env.out, "maya")


def test_limit_then_resume_fetches_only_the_rest(env: E2E) -> None:
    n_threads = len(thread_dirs(env.out))
    assert as_json(env.cli("usage-backfill", "--limit", "3", "--json").stdout)["fetched"] == 3
    env.emu.reset_stats()
    doc = as_json(env.cli("usage-backfill", "--json").stdout)
    assert doc["fetched"] == n_threads - 3 and doc["already"] == 3
    assert by_endpoint(env.stats(), USAGE) == n_threads - 3


def test_other_errors_are_not_recorded_and_retried_next_run(tmp_path: Path, exported: Path) -> None:
    with run_emulator(FIXTURES, faults="500=1") as emu:
        env = E2E(emu, tmp_path)
        env.write_files(DEFAULT_EMAIL)
        shutil.copytree(exported, env.out)
        result = env.cli("usage-backfill")
        assert result.exit_code == 4, result.output
        assert "ServerError" in result.stderr
        assert load_usage(env.out, "maya") == {}
    with run_emulator(FIXTURES) as emu:
        env.emu = emu
        result = env.cli("usage-backfill", "--json")
        assert result.exit_code == 0, result.output
        assert as_json(result.stdout)["fetched"] == len(thread_dirs(env.out))


def test_a_corrupt_usage_file_is_set_aside_not_blanked(env: E2E) -> None:
    save_bytes(env.out, usage_key("maya"), "[1, 2")
    result = env.cli("usage-backfill")
    assert result.exit_code == 0, result.output
    aside = doc_keys(env.out, usage_key("maya") + ".corrupt-")
    assert [load_bytes(env.out, key) for key in aside] == [b"[1, 2"]
    assert json.loads(load_bytes(env.out, usage_key("maya")) or b"")
