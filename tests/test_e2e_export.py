"""End to end: the real CLI exports the fixture archive served by the emulator (issue 6).

Full export fidelity (layout, raw files, fidelity.py), `export` by URL and by upper-case
UUID, `batch --dry-run` / `--json` / `--mode`, and the demo command.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from pplx_export.commands.relations.run import run_relations
from pplx_export.commands.setup.demo import run_demo
from pplx_export.config import Account, Config
from pplx_export.context import RunOptions
from pplx_export.models import MODES
from pplx_export.store.docs import delete_doc
from pplx_export.store.state_check import check_state_vs_dirs
from tests.e2e_support import (
    E2E,
    FIDELITY,
    FIXTURES,
    THREAD_ENDPOINT,
    by_endpoint,
    fixture_threads,
    leftover_temp_files,
    redacted,
    run_fidelity,
    served_raw,
    signed_in,
    thread_dirs,
    thread_uuid,
    unparseable_json,
)
from tests.emulator_support import LIVE_SHAPE_KEYS, sample_uuid

COMPUTER_UUID = "cb11e506-373b-5e2d-9156-c7629f699010"  # Audit the nginx config (computer)
SEARCH_UUID = "24a76805-90eb-5b12-a5e0-d0288d7ceae3"  # How do Rust lifetimes work (search)


PAGE_SIZE = 2


def _plain_pages(uuid: str) -> int:
    src = fixture_threads()[uuid] / "raw_entries.json"
    entries = json.loads(src.read_text("utf-8"))["entries"]
    return max(1, -(-len(entries) // PAGE_SIZE))


@pytest.fixture
def e2e(tmp_path: Path) -> Iterator[E2E]:
    with signed_in(tmp_path, page_size=PAGE_SIZE) as env:
        yield env


def _full_export(env: E2E) -> None:
    result = env.cli("sync")
    assert result.exit_code == 0, result.output


def test_full_export_lands_every_thread_in_its_folder_with_the_served_raw_files(e2e: E2E) -> None:
    _full_export(e2e)
    fixtures = fixture_threads()
    exported = {thread_uuid(d): d for d in thread_dirs(e2e.out)}
    assert set(exported) == set(fixtures)
    for uuid, src in fixtures.items():
        dest = exported[uuid]
        # Same <account folder>/<mode>/<dir name>: authors are folders, modes are folders.
        assert dest.relative_to(e2e.out) == src.relative_to(FIXTURES), uuid
        plain = json.loads((dest / "raw_entries.json").read_text("utf-8"))
        assert redacted(plain) == redacted(served_raw(e2e.emu, uuid, schematized=False)), uuid
        # The fixture's own file is what the emulator serves (plain pages are not rewritten).
        fixture_plain = json.loads((src / "raw_entries.json").read_text("utf-8"))
        assert redacted(plain)["entries"] == redacted(fixture_plain)["entries"], uuid
        has_blocks = (src / "raw_blocks.json").exists()
        assert (dest / "raw_blocks.json").exists() == has_blocks, uuid
        if has_blocks:
            blocks = json.loads((dest / "raw_blocks.json").read_text("utf-8"))
            served = served_raw(e2e.emu, uuid, schematized=True)
            assert redacted(blocks) == redacted(served), uuid
        for name in ("conversation.md", "thread.json", "sources.json", "turns/turn_0001.md"):
            assert (dest / name).is_file(), (uuid, name)
    # No write token survives in any stored file.
    for path in e2e.out.rglob("raw_*.json"):
        assert redacted(json.loads(path.read_text("utf-8"))) == json.loads(
            path.read_text("utf-8")
        ), path
    assert leftover_temp_files(e2e.out) == []
    assert unparseable_json(e2e.out) == []
    assert check_state_vs_dirs(e2e.out, e2e.state()).ok
    assert {r["status"] for r in e2e.state().values()} == {"ok"}


@pytest.mark.skipif(
    not FIDELITY.is_file(),
    reason="needs ../shared/tools/fidelity.py beside the clone (not in a fresh clone)",
)
def test_full_export_has_full_fidelity(e2e: E2E) -> None:
    _full_export(e2e)
    done = run_fidelity(e2e.out)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "overall recall 1.0000" in done.stdout
    assert f"{len(fixture_threads())} threads, 0 below" in done.stdout


def test_export_by_computer_url_and_by_upper_case_uuid(e2e: E2E) -> None:
    assert e2e.cli("index").exit_code == 0
    e2e.emu.reset_stats()
    url = f"https://www.perplexity.ai/computer/tasks/{COMPUTER_UUID}"
    result = e2e.cli("export", url, SEARCH_UUID.upper())
    assert result.exit_code == 0, result.output
    stats = e2e.stats()
    assert set(stats["by_thread"]) == {COMPUTER_UUID, SEARCH_UUID}
    # Plain pages only for a search thread (no blocks needed).
    assert stats["by_thread"][SEARCH_UUID] == _plain_pages(SEARCH_UUID)
    state = e2e.state()
    assert set(state) == {COMPUTER_UUID, SEARCH_UUID}  # stored lower-case
    computer = e2e.out / state[COMPUTER_UUID]["dir"]
    assert computer.parent.name == "computer"
    doc = json.loads((computer / "thread.json").read_text("utf-8"))
    assert doc["web_uuid"] == COMPUTER_UUID
    assert (computer / "raw_blocks.json").is_file()
    search = e2e.out / state[SEARCH_UUID]["dir"]
    assert search.parent.name == "search"
    assert not (search / "raw_blocks.json").exists()

    # Unchanged since the export: skipped without a request; --force fetches again.
    e2e.emu.reset_stats()
    result = e2e.cli("export", SEARCH_UUID)
    assert result.exit_code == 0
    assert e2e.stats()["by_thread"] == {}
    result = e2e.cli("export", "--force", SEARCH_UUID.upper())
    assert result.exit_code == 0
    assert e2e.stats()["by_thread"] == {SEARCH_UUID: _plain_pages(SEARCH_UUID)}


def test_export_rejects_something_that_is_no_thread(e2e: E2E) -> None:
    result = e2e.cli("export", "not-a-thread")
    assert result.exit_code == 2
    assert not (e2e.out / "index" / "state.sqlite").exists()


def _batch_records(root: Path) -> int:
    db = sqlite3.connect(root / "index" / "state.sqlite")
    try:
        return int(db.execute("SELECT count(*) FROM threads").fetchone()[0])
    except sqlite3.OperationalError:  # no threads table yet
        return 0
    finally:
        db.close()


def test_batch_dry_run_prints_the_plan_and_fetches_no_thread(e2e: E2E) -> None:
    assert e2e.cli("index").exit_code == 0
    e2e.emu.reset_stats()
    result = e2e.cli("batch", "--dry-run")
    assert result.exit_code == 0, result.output
    stats = e2e.stats()
    assert by_endpoint(stats, THREAD_ENDPOINT) == 0
    assert stats["total"] == 0  # the plan needs no session either
    assert "plan: new 10" in result.stdout
    for uuid in fixture_threads():
        assert uuid in result.stdout
    # `index` keeps its run record in the state store; the dry run adds no batch record.
    assert _batch_records(e2e.out) == 0
    assert thread_dirs(e2e.out) == []

    result = e2e.cli("batch", "--dry-run", "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["counts"]["new"] == 10


def test_batch_json_prints_one_json_document(e2e: E2E) -> None:
    assert e2e.cli("index").exit_code == 0
    result = e2e.cli("batch", "--json", "-q")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)  # exactly one document: json.loads rejects trailing data
    assert doc["ok"] == 10
    assert doc["failed"] == 0
    assert doc["requests"] > 0
    # Nothing to do: still one document.
    result = e2e.cli("batch", "--json", "-q")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["ok"] == 0


def test_batch_mode_filter_exports_only_that_mode(e2e: E2E) -> None:
    assert e2e.cli("index").exit_code == 0
    e2e.emu.reset_stats()
    result = e2e.cli("batch", "--mode", "computer")
    assert result.exit_code == 0, result.output
    modes = {d.parent.name for d in thread_dirs(e2e.out)}
    assert modes == {"computer"}
    assert len(thread_dirs(e2e.out)) == 5
    computer = {u for u, d in fixture_threads().items() if d.parent.name == "computer"}
    assert set(e2e.stats()["by_thread"]) == computer
    # The rest is still to do.
    result = e2e.cli("batch", "--dry-run", "--json")
    assert json.loads(result.stdout)["counts"]["new"] == 5


def test_demo_writes_all_five_modes_with_their_files(tmp_path: Path) -> None:
    summary = run_demo(tmp_path / "demo", quiet=True)
    root = tmp_path / "demo"
    account = root / "Alice Example"
    assert sorted(p.name for p in account.iterdir()) == sorted(MODES)
    # 22 sample threads, 1 deleted, 1 expired; bob's comes through `batch --space`; then
    # the data export brings back the deleted and the expired one, and one only it holds
    assert sum(summary.by_mode.values()) == 20 + 3
    assert "3 not archived (3 recovered; 3 not served by the API)" in summary.official
    # the threads in live-site shapes (protocol §9) export like the others
    exported = {thread_uuid(d) for d in thread_dirs(root)}
    assert {sample_uuid(key) for key in LIVE_SHAPE_KEYS} <= exported
    assert (root / "Bob Rivera" / "search").is_dir()
    assert (root / "spaces" / "index.md").is_file()
    assert (root / "spaces" / "team-roadmap-7a3e55.md").is_file()
    assert (root / "relations" / "graph.md").is_file()
    edges = (root / "relations" / "edges.jsonl").read_text("utf-8").splitlines()
    kinds = {json.loads(line)["kind"] for line in edges}
    assert kinds == {"same_space", "same_prompt", "references", "subagent_of"}
    # The exports recorded each thread's relation facts: `relations` parsed nothing, and a
    # cold run (cache gone, every thread parsed) finds the same graph.
    assert summary.relations is not None and summary.relations.parsed == 0
    delete_doc(root, "relations_cache")
    cold = run_relations(RunOptions(Config(path=tmp_path / "none.toml"), Account("x"), root, "en"))
    assert cold.parsed == len(thread_dirs(root))
    assert (root / "relations" / "edges.jsonl").read_text("utf-8").splitlines() == edges
    assert summary.batch is not None and summary.batch.failed == 0
    for directory in thread_dirs(root):
        mode = directory.parent.name
        for name in ("conversation.md", "turns/turn_0001.md", "thread.json", "raw_entries.json"):
            assert (directory / name).is_file(), (directory, name)
        assert (directory / "sources.json").is_file(), directory
        if mode != "search":
            assert (directory / "raw_blocks.json").is_file(), directory
        if mode == "deep-research":
            assert (directory / "report.md").is_file(), directory
            assert (directory / "report.md").read_text("utf-8").strip()
    assert leftover_temp_files(root) == []
    assert unparseable_json(root) == []
