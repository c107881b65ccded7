"""SIGKILL the online upkeep commands at seeded random moments, then rerun (issue 11).

Like tests/test_e2e_crash.py for `sync`: the CLI runs in a subprocess against an in-process
emulator with a little latency, is killed a few times somewhere in its run, and one more
uninterrupted run must finish the work with nothing lost, nothing done twice (a further run
asks nothing) and no temp file left.
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pplx_export.parse.mode import aggregate_search_mode
from pplx_export.store.credit_usage import load_usage
from pplx_export.store.library_index import load_index, save_index
from tests.e2e_support import E2E, leftover_temp_files, thread_dirs, unparseable_json
from tests.upkeep_support import (
    export_fixture_library,
    library_with_background_asset,
    upkeep_env,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

SEED = 11
KILLS = 3
MAX_RUNS = 12
LATENCY = "latency=15ms"
# Seconds after the first request within which the kill lands: each run makes 10 to 30
# requests of 15 ms or more, so most kills hit mid-run; a run that ends first simply
# finishes the work (and the loop).
WINDOW = 0.5


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(library, its export with every signed URL dead: no file downloaded)."""
    library = library_with_background_asset(tmp_path_factory.mktemp("lib"))
    return library, export_fixture_library(
        tmp_path_factory.mktemp("exported"), library=library, url_ttl=0
    )


def _wait_first_request(env: E2E, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 180
    while env.stats()["total"] == 0 and proc.poll() is None:
        assert time.monotonic() < deadline, "the child never reached the emulator"
        time.sleep(0.002)


def _kill_then_finish(env: E2E, args: list[str], rng: random.Random, window: float) -> None:
    kills = runs = 0
    while kills < KILLS:
        runs += 1
        assert runs <= MAX_RUNS, f"only {kills} kills in {MAX_RUNS} runs"
        env.emu.reset_stats()
        proc = env.popen(*args)
        try:
            _wait_first_request(env, proc)
            time.sleep(rng.uniform(0, window))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
        finally:
            proc.wait(timeout=180)
        if proc.returncode == 0:
            break  # finished before the kill: the work is done
    final = subprocess.run(env.argv(*args), capture_output=True, timeout=180, check=False)
    assert final.returncode == 0, final.stderr.decode()[-3000:]
    env.emu.reset_stats()
    again = subprocess.run(env.argv(*args), capture_output=True, timeout=180, check=False)
    assert again.returncode == 0, again.stderr.decode()[-3000:]
    assert env.stats()["total"] == 0, env.stats()  # nothing left, nothing asked twice
    assert leftover_temp_files(env.out) == []
    assert unparseable_json(env.out) == []


def _case_sync_deleted(env: E2E) -> Callable[[], None]:
    rows = load_index(env.out, env.account).threads
    gone = [r["entryUUID"] for r in rows[1:7]]
    for uuid in gone:
        env.emu.mutate(delete=uuid)
    save_index(env.out, env.account, [r for r in rows if r["entryUUID"] not in gone])

    def check() -> None:
        state = env.state()
        assert {u for u, r in state.items() if r["status"] == "deleted"} == set(gone)
        for directory in thread_dirs(env.out):
            doc = json.loads((directory / "thread.json").read_text("utf-8"))
            assert ("remote_deleted" in doc) == (doc["web_uuid"] in gone)

    return check


def _case_usage(env: E2E) -> Callable[[], None]:
    def check() -> None:
        records = load_usage(env.out, env.account)
        assert len(records) == len(thread_dirs(env.out))
        assert all("usage_cents" in r for r in records.values())

    return check


def _case_assets(env: E2E) -> Callable[[], None]:
    env.emu.mutate(url_ttl=600)
    (blocks_gone,) = [d for d in thread_dirs(env.out) if "Compare-three" in d.name]
    (blocks_gone / "raw_blocks.json").unlink()

    def check() -> None:
        for directory in thread_dirs(env.out):
            manifest_path = directory / "assets" / "assets_manifest.json"
            if not manifest_path.is_file():
                continue
            manifest = json.loads(manifest_path.read_text("utf-8"))
            named = set()
            for group in manifest["files"]:
                for v in group["versions"]:
                    if v.get("no_download_channel") or str(v["uuid"]).startswith("toolu_"):
                        continue
                    assert v["downloaded_to"], (directory.name, v)
                    named.add(Path(v["downloaded_to"]).name)
            on_disk = {p.name for p in (directory / "assets" / "files").iterdir()}
            assert on_disk == named, directory.name  # no duplicate from a killed run

    return check


def _case_search_mode(env: E2E) -> Callable[[], None]:
    expected = {}
    for directory in thread_dirs(env.out)[:6]:  # listed, but not exported here
        raw = json.loads((directory / "raw_entries.json").read_text("utf-8"))
        uuid = json.loads((directory / "thread.json").read_text("utf-8"))["web_uuid"]
        expected[uuid] = aggregate_search_mode(raw["entries"] + raw["background_entries"])
        shutil.rmtree(directory)

    def check() -> None:
        rows = {r["entryUUID"]: r for r in load_index(env.out, env.account).threads}
        assert all(rows[u].get("search_mode", "") == mode for u, mode in expected.items())

    return check


@pytest.mark.parametrize(
    ("args", "case"),
    [
        (["sync-deleted", "--online"], _case_sync_deleted),
        (["usage-backfill"], _case_usage),
        (["assets-backfill", "--fetch-blocks", "--online"], _case_assets),
        (["search-mode-backfill"], _case_search_mode),
    ],
    ids=["sync-deleted", "usage-backfill", "assets-backfill", "search-mode-backfill"],
)
def test_sigkill_then_rerun_finishes_with_nothing_lost_or_repeated(
    tmp_path: Path,
    exported: tuple[Path, Path],
    args: list[str],
    case: Callable[[E2E], Callable[[], None]],
) -> None:
    library, exported_dir = exported
    with upkeep_env(tmp_path / "run", exported_dir, library=library, faults=LATENCY) as env:
        check = case(env)
        _kill_then_finish(env, args, random.Random(f"{SEED}-{args[0]}"), WINDOW)
        check()
