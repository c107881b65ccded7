"""The state store takes over the caches and bookkeeping files of `index/` (issue 28).

An archive the 0.1.0 release wrote (tests/fixtures/release_0_1_archive) is read by the new
version: the first run imports every old file into `index/state.sqlite` and renames it
`<name>.migrated`; what the commands report is what the old files said (nothing is parsed
or rendered again, no space page rewritten). A fresh demo archive holds in `index/` only the
state and search databases, the library listings, logs and the lock.
"""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from pplx_export.cli.export import main
from pplx_export.pipeline.relation_facts import journal_lines
from pplx_export.store.docs import load_bytes
from pplx_export.store.migrations import DOC_FILES, SPACE_FILES
from tests.archive_fakes import snapshot

FIXTURE = Path(__file__).parent / "fixtures" / "release_0_1_archive" / "archive.tar.gz"

# The files this change moves into the store, as the release left them in the fixture.
MOVED = sorted(
    {f"{name}.json" for name in (*DOC_FILES, *SPACE_FILES)} | {"relations_cache.json"}
    | {"answer_variants_log.jsonl", "relations_cache.jsonl"}
)  # fmt: skip
# Files the batch/render state change moves (the other half of issue 28), still files here.
OTHER_BRANCH = {"batch_state.json", "batch_state.journal", "rendered.jsonl", "rendered.journal"}


def unpack(tmp_path: Path) -> Path:
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(tmp_path, filter="data")
    return tmp_path / "a"


def cli(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result


def outside_index(root: Path) -> dict[str, tuple[bytes, int]]:
    return {k: v for k, v in snapshot(root).items() if not k.startswith("index/")}


def test_the_first_run_migrates_every_file_and_changes_nothing_else(tmp_path: Path) -> None:
    root = unpack(tmp_path)
    index = root / "index"
    present = [name for name in MOVED if (index / name).is_file()]
    old = {name: (index / name).read_bytes() for name in present}
    assert "raw_check.json" in old and "relations_cache.json" in old and "space_meta.json" in old
    listings = sorted(p.name for p in index.glob("space_*.json") if p.name != "space_meta.json")
    files_before = outside_index(root)
    # What this version's renderer changes in the stored archive, found on a copy told to
    # render everything: the pages it renders differently (none while the stored archive's
    # renderer is current). The migration must change nothing beyond those.
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    renderer_changes = json.loads(cli("re-render", "--out", str(copy), "--json").stdout)
    renders = {
        rel: data
        for rel, (data, _) in outside_index(copy).items()
        if files_before.get(rel, (b"", 0))[0] != data
    }

    # status is read-only: it reads the old files (in memory) and renames nothing.
    status_before = json.loads(cli("status", "--out", str(root), "--json").stdout)
    assert sorted(p.name for p in index.iterdir() if p.name in old) == sorted(old)
    assert not (index / "state.sqlite").exists()

    rerendered = cli("re-render", "--changed-only", "--out", str(root), "--json").stdout
    assert json.loads(rerendered)["written"] == renderer_changes["written"]
    for name, data in old.items():
        assert not (index / name).exists(), name
        assert (index / f"{name}.migrated").read_bytes() == data, name
    # The documents hold the old files' bytes as they were; those that note the pages a
    # run read or wrote are saved again when this renderer writes pages anew.
    noting_pages = {"spaces_cache.json", "spaces_pages.json"} if renders else set()
    for name in present:
        if name.endswith(".json") and name not in noting_pages:
            assert load_bytes(root, name.removesuffix(".json")) == old[name], name
    if "relations_cache.jsonl" in old:  # imported first; this re-render added its own lines
        lines = old["relations_cache.jsonl"].splitlines()
        assert journal_lines(root)[: len(lines)] == lines

    relations = json.loads(cli("relations", "--out", str(root), "--json").stdout)
    assert relations["parsed"] == 0 and relations["written"] == []
    spaces = json.loads(cli("spaces", "--out", str(root), "--json").stdout)
    assert spaces["written"] == []
    status_after = json.loads(cli("status", "--out", str(root), "--json").stdout)
    assert _stable(status_after) == _stable(status_before)
    after = outside_index(root)
    assert after.keys() == files_before.keys()
    assert {rel: after[rel][0] for rel in renders} == renders
    assert {k: v for k, v in after.items() if k not in renders} == {
        k: v for k, v in files_before.items() if k not in renders
    }
    # The space listings are exports (like library_<account>.json): they stay files.
    assert sorted(p.name for p in index.glob("space_*.json")) == listings


def _stable(doc: Any) -> Any:
    """A status document without what depends on the clock or the run."""
    if isinstance(doc, dict):
        return {
            k: _stable(v)
            for k, v in doc.items()
            if "elapsed" not in k and k not in ("now", "age_seconds")
        }
    if isinstance(doc, list):
        return [_stable(v) for v in doc]
    return doc


def test_a_new_archive_keeps_only_databases_listings_logs_and_the_lock(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    cli("demo", str(root))
    cli("re-render", "--changed-only", "--out", str(root))
    cli("relations", "--out", str(root))
    cli("spaces", "--out", str(root))
    allowed = {".lock", "logs", "search.sqlite", "state.sqlite"}
    allowed |= {"state.sqlite-wal", "state.sqlite-shm"}  # while a connection is open
    allowed |= OTHER_BRANCH  # moved by the batch/render state change
    names = {p.name for p in (root / "index").iterdir()}
    # library_<account>.json and space_<slug>.json: the listings a user may read.
    rest = {n for n in names - allowed if not n.startswith(("library_", "space_"))}
    assert rest == set()
    assert "state.sqlite" in names
