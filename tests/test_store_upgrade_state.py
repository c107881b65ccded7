"""The first run of this version on an archive the 0.1 release wrote (issue 28): the batch
state and the render state move into index/state.sqlite, and nothing is fetched or rendered
again for it."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tarfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pplx_export.cli.export import main
from pplx_export.renderer_version import RENDERER_VERSION
from pplx_export.store.batch_state import BatchState

FIXTURE = Path(__file__).parent / "fixtures" / "release_0_1_archive" / "archive.tar.gz"
FIXTURE_RENDERER = "7"  # the renderer version that rendered the stored archive


@pytest.fixture
def release(tmp_path: Path) -> Path:
    """The release's archive, as it left it (tar keeps whole seconds only: the files get
    back the nanosecond mtimes the release recorded, as a copy with `cp -a` keeps them)."""
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(tmp_path, filter="data")
    root = tmp_path / "a"
    with open(root / "index" / "rendered.jsonl", encoding="utf-8") as fh:
        next(fh)  # the header
        for line in fh:
            rel, _, text = line.rstrip("\n").partition("\t")
            record = json.loads(text)
            folder = root / json.loads(rel)
            stamps = {name: value[1] for name, value in record["files"].items()}
            stamps["conversation.md"] = record["page"][1]
            for name, mtime_ns in stamps.items():
                os.utime(folder / name, ns=(mtime_ns, mtime_ns))
    return root


def rerender_changed_only(root: Path) -> dict[str, Any]:
    result = CliRunner().invoke(
        main, ["re-render", "--changed-only", "--json", "--jobs", "1", "--out", str(root)]
    )
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def old_counts(path: Path) -> Counter[str]:
    doc = json.loads(path.read_text("utf-8"))
    threads = doc.get("threads", doc) if "version" in doc else doc
    return Counter(record["status"] for record in threads.values())


def rerender_all(root: Path) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["re-render", "--json", "--jobs", "1", "--out", str(root)])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def test_the_first_run_migrates_without_rendering_anything(release: Path, tmp_path: Path) -> None:
    index = release / "index"
    before = old_counts(index / "batch_state.json")
    rendered = len((index / "rendered.jsonl").read_bytes().splitlines()) - 1
    assert sum(before.values()) > 0 and rendered > 0
    # What this version's renderer writes anew into the stored archive when told to render
    # everything (a copy): the pages it renders differently, nothing else.
    copy = tmp_path / "copy"
    shutil.copytree(release, copy)
    renderer_changes = rerender_all(copy)

    doc = rerender_changed_only(release)
    # The stored archive was rendered by renderer 7: under it every thread is skipped; a
    # later renderer renders each thread again (its fingerprint names the version) and
    # writes exactly what its changes change: the migration adds no write of its own.
    if RENDERER_VERSION == FIXTURE_RENDERER:
        assert (doc["skipped"], doc["written"], doc["files_written"]) == (doc["threads"], 0, 0)
    else:
        assert doc["skipped"] == 0
        assert (doc["written"], doc["files_written"]) == (
            renderer_changes["written"],
            renderer_changes["files_written"],
        )
    assert doc["threads"] == rendered

    state = BatchState.load(release, repair=False)
    assert {k: v for k, v in state.counts().items() if v} == dict(before)
    assert not state.rebuilt and not state.legacy
    state.close()
    names = {p.name for p in index.iterdir()}
    assert {"batch_state.json.migrated", "rendered.jsonl.migrated", "state.sqlite"} <= names
    assert not names & {"batch_state.json", "rendered.jsonl"}
    assert not [name for name in names if name.endswith(".journal")]
    # Migrated once: the next run finds the store current and still renders nothing.
    again = rerender_changed_only(release)
    assert (again["skipped"], again["written"]) == (again["threads"], 0)
    db = sqlite3.connect(index / "state.sqlite")
    assert db.execute("SELECT count(*) FROM rendered").fetchone()[0] == rendered
    db.close()


def test_the_earlier_tools_flat_batch_state_migrates(release: Path) -> None:
    index = release / "index"
    doc = json.loads((index / "batch_state.json").read_text("utf-8"))
    flat = doc["threads"]  # the earlier tool's form: {uuid: record}, no version
    (index / "batch_state.json").write_text(json.dumps(flat), "utf-8")
    rerender_changed_only(release)
    state = BatchState.load(release, repair=False)
    assert state.threads.keys() == flat.keys()
    assert {k: v for k, v in state.counts().items() if v} == dict(
        old_counts(index / "batch_state.json.migrated")
    )
    state.close()
    assert not (index / "batch_state.json").exists()
