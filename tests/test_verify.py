"""verify: a clean archive passes; each kind of problem, planted, is reported; --fix repairs
what it can and the rest keeps the exit code at 4. The schema-drift report names examples."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pplx_export.cli.export import main
from pplx_export.commands.inspect.verify import verify
from pplx_export.commands.rerender.run import rerender
from pplx_export.search.schema import db_path
from pplx_export.store.batch_state import BatchState, rebuild_from_disk, state_path
from tests.e2e_support import FIXTURES

NGINX = "tomas/computer/2031-06-02_Audit-the-nginx-config-on-my-home-server_cb11e506"
BASIL = "maya/search/2031-06-25_Best-way-to-store-fresh-basil_d47b01e7"
RUST = "maya/search/2031-05-04_How-do-Rust-lifetimes-work_24a76805"
HEAT = "maya/deep-research/2031-05-10_Heat-pump-efficiency-in-cold-climates_a47a41b9"
BIKES = "tomas/computer/2031-06-10_Compare-three-commuter-e-bikes_c0b720ca"
BAYES = "maya/study/2031-05-12_Teach-me-Bayes-theorem-step-by-step_64d35152"
PHOTOS = "tomas/computer/2031-06-18_Rename-every-photo-by-capture-date_b06ca3b3"


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture archive rendered, indexed and with a state file: what an export leaves."""
    root = tmp_path_factory.mktemp("verify") / "archive"
    shutil.copytree(FIXTURES, root)
    rerender(root, jobs=1)
    state = BatchState(path=state_path(root), threads=rebuild_from_disk(root))
    state.save()
    return root


@pytest.fixture
def archive(clean: Path, tmp_path: Path) -> Path:
    root = tmp_path / "archive"
    shutil.copytree(clean, root)
    return root


def run(root: Path, *args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(main, ["verify", "--out", str(root), "--json", "-q", *args])
    return result.exit_code, json.loads(result.stdout)


def test_a_clean_archive_exits_0_with_a_drift_report(archive: Path) -> None:
    code, doc = run(archive)
    assert code == 0, doc["problems"]
    assert doc["ok"] is True and doc["threads"] == 10
    assert set(doc["counts"].values()) == {0}
    drift = {(d["kind"], d["value"]): d for d in doc["schema_drift"]}
    assert drift[("step_type", "READ")]["example"] == NGINX
    # On a terminal-less stdout: the summary table.
    text = CliRunner().invoke(main, ["verify", "--out", str(archive), "-q"]).stdout
    assert "stale derived files   0" in text and "step_type 'READ'" in text


def test_every_planted_problem_is_reported_and_fix_repairs_what_it_can(archive: Path) -> None:
    # thread.json that does not parse, and one that names another thread
    (archive / BASIL / "thread.json").write_text("{broken")
    doc = json.loads((archive / RUST / "thread.json").read_text())
    doc["web_uuid"] = "99999999-0000-4000-8000-000000000000"
    (archive / RUST / "thread.json").write_text(json.dumps(doc))
    # a raw file that does not parse
    (archive / BAYES / "raw_blocks.json").write_text('{"entries": [')
    # a stale derived file, and a turn file too many
    conv = archive / HEAT / "conversation.md"
    conv.write_text(conv.read_text() + "\nhand edit\n")
    (archive / PHOTOS / "turns" / "turn_0009.md").write_text("stray\n")
    # a manifest entry whose file is missing
    manifest = archive / NGINX / "assets" / "assets_manifest.json"
    m = json.loads(manifest.read_text())
    m["files"][0]["versions"][0]["downloaded_to"] = "assets/files/ghost.xlsx"
    manifest.write_text(json.dumps(m, indent=1, ensure_ascii=False) + "\n")
    # debris: a temp file in a thread, a trash directory, a temp file in index/
    (archive / NGINX / ".pplx-tmp-abc123").write_text("torn")
    (archive / "tomas" / "computer" / ".pplx-trash-old_cb11e506").mkdir()
    (archive / "index" / ".pplx-tmp-x.sqlite").write_bytes(b"")
    # state: ok without a directory
    state = BatchState.load(archive)
    state.threads["11111111-2222-4333-8444-555555555555"] = {"status": "ok", "dir": "x/y/z"}
    state.save()
    # the index lost a thread
    conn = sqlite3.connect(db_path(archive))
    with conn:
        (tid,) = conn.execute("SELECT id FROM threads WHERE dir = ?", (NGINX,)).fetchone()
        for table in ("turns", "sources", "reports"):
            conn.execute(f"DELETE FROM {table} WHERE thread_id = ?", (tid,))
        conn.execute("DELETE FROM threads WHERE id = ?", (tid,))
    conn.close()

    code, doc = run(archive)
    assert code == 4
    found = {(p["kind"], p["where"]) for p in doc["problems"]}
    details = " | ".join(p["detail"] for p in doc["problems"])
    assert ("thread_json", BASIL) in found and "thread.json does not parse" in details
    assert ("thread_json", RUST) in found and "names thread 99999999" in details
    assert ("raw", BAYES) in found and "raw_blocks.json does not parse" in details
    assert ("stale", HEAT) in found and "conversation.md" in details
    assert ("stale", PHOTOS) in found and "turns/turn_0009.md (extra)" in details
    assert ("manifest", NGINX) in found and "ghost.xlsx is listed but missing" in details
    assert ("debris", f"{NGINX}/.pplx-tmp-abc123") in found
    assert ("debris", "tomas/computer/.pplx-trash-old_cb11e506") in found
    assert ("debris", "index/.pplx-tmp-x.sqlite") in found
    assert ("state", "x/y/z") in found
    assert ("index", NGINX) in found

    code, doc = run(archive, "--fix")
    assert code == 4  # what --fix cannot repair remains
    fixed = " | ".join(doc["fixed"])
    # HEAT and PHOTOS; RUST's and NGINX's thread.json and manifest were rewritten by hand.
    assert "re-rendered 4 thread(s)" in fixed and "removed 3 leftover(s)" in fixed
    kinds = {p["kind"] for p in doc["problems"]}
    assert kinds == {"thread_json", "raw", "manifest", "state", "index"}
    assert "hand edit" not in conv.read_text()
    assert not (archive / PHOTOS / "turns" / "turn_0009.md").exists()
    assert not (archive / NGINX / ".pplx-tmp-abc123").exists()

    # A second look: only what needs a person remains, and the index covers NGINX again.
    code, doc = run(archive)
    remaining = {(p["kind"], p["where"]) for p in doc["problems"]}
    assert ("index", NGINX) not in remaining and ("stale", HEAT) not in remaining
    assert {k for k, _ in remaining} == {"thread_json", "raw", "manifest", "state", "index"}


def test_a_missing_index_is_a_problem_fix_rebuilds(archive: Path) -> None:
    db_path(archive).unlink()
    report = verify(archive)
    assert [(p.kind, p.where) for p in report.problems] == [("index", "index/search.sqlite")]
    code, doc = run(archive, "--fix")
    assert code == 0 and "rebuilt the search index (10 threads)" in doc["fixed"]
    assert run(archive)[0] == 0


def test_limit_checks_the_first_threads_only(archive: Path) -> None:
    (archive / BIKES / "conversation.md").write_text("stale\n")
    code, doc = run(archive, "--limit", "2")
    assert code == 0 and doc["threads"] == 2
    assert run(archive)[0] == 4
