"""Syscall-level checks of the writes whose only copy is on disk (issue 33, point 6).

Each test catches a mutant that survived the suite: the state journal's fsync, the
date-move merge's durable copy and its directory fsyncs, the report body as downloaded
(`assets/report_body.md`, a report whose signed URL has expired). A crash cannot be
simulated for these (the page cache survives a killed process), so the tests record
`os.fsync` and `os.replace` and check their order.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from pplx_export.archive.migrate import merge_thread_dir
from pplx_export.emulator import DEFAULT_EMAIL, run_emulator
from pplx_export.store.batch_state import BatchState
from tests.e2e_support import E2E, FIXTURES, thread_dirs
from tests.fsync_support import Calls, record_fsyncs

pytestmark = pytest.mark.skipif(
    not os.path.isdir("/proc/self/fd"), reason="maps file descriptors to paths via /proc"
)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    return record_fsyncs(monkeypatch)


def test_each_state_change_is_committed_before_it_returns(tmp_path: Path) -> None:
    """SQLite syncs in its own code, out of reach of a Python hook: the test checks what
    makes each change durable when `mark_*` returns: a committed transaction (no open one on
    the writer), in WAL with synchronous=FULL (the WAL fsynced at each commit)."""
    root = tmp_path.resolve()
    state = BatchState.load(root)
    state.mark_ok("u1", last_updated="2031-01-01T00:00:00Z", title="one", dir="a/b/c")
    db = state._store()
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    for n in range(3):
        state.mark_error(f"u{n + 2}", error="503")
        assert not db.in_transaction, n
        # Another process sees it at once: it is in the database, not in a buffer.
        reader = sqlite3.connect(root / "index" / "state.sqlite")
        assert reader.execute("SELECT count(*) FROM threads").fetchone()[0] == n + 2
        reader.close()
    state.close()
    assert set(BatchState.load(root, repair=False).threads) == {"u1", "u2", "u3", "u4"}


def _old_thread(tmp_path: Path) -> tuple[Path, Path]:
    mode_dir = tmp_path.resolve() / "alice" / "search"
    src = mode_dir / "2031-01-01_t_abcd1234"
    (src / "assets" / "files").mkdir(parents=True)
    (src / "thread.json").write_text(json.dumps({"web_uuid": "abcd1234-x"}), "utf-8")
    (src / "raw_entries.json").write_text('{"entries": []}', "utf-8")
    (src / "assets" / "files" / "chart.png").write_bytes(b"\x89PNG only copy")
    (src / "notes.md").write_text("the user's notes", "utf-8")
    return src, mode_dir / "2031-02-01_t_abcd1234"


def test_the_date_move_merge_makes_every_copy_durable_before_the_old_dir_goes(
    tmp_path: Path, calls: Calls
) -> None:
    src, dst = _old_thread(tmp_path)
    result = merge_thread_dir(src, dst, "abcd1234-x")
    assert result.removed_src and sorted(result.copied) == [
        "assets/files/chart.png",
        "notes.md",
        "raw_entries.json",
        "thread.json",
    ]
    (retire,) = calls.replaced_to(str(src.parent / (".pplx-trash-" + src.name)))
    for rel in result.copied:
        done = calls.durable(str(dst / rel))
        assert done is not None and done < retire, rel
    # The new directories' entries too: each is fsynced in its parent before the retire.
    for directory in (dst, dst / "assets", dst / "assets" / "files"):
        assert any(i < retire for i in calls.fsynced(str(directory.parent))), directory
    # And the rename of the old directory is itself made durable.
    assert any(i > retire for i in calls.fsynced(str(src.parent)))


def test_the_report_body_as_downloaded_is_durable(tmp_path: Path, calls: Calls) -> None:
    with run_emulator(FIXTURES, page_size=100) as emu:
        env = E2E(emu, tmp_path)
        env.write_files(DEFAULT_EMAIL)
        assert env.cli("sync").exit_code == 0
    bodies = [d / "assets" / "report_body.md" for d in thread_dirs(env.out.resolve())]
    bodies = [b for b in bodies if b.is_file()]
    assert bodies  # the deep-research fixture has one
    assert [str(b) for b in bodies if calls.durable(str(b)) is None] == []


def _kept(root: Path) -> list[Path]:
    """Every file of a demo archive whose only copy is on disk: what the API or the data
    export gave (raw files, downloads, the report body), the state thread.json and the
    assets manifest record (export stamps, deletions, downloads), and the listings."""
    out = list((root / "index").glob("library_*.json"))
    out += [p for p in (root / "index").glob("space_*.json")]
    for directory in thread_dirs(root):
        out += list(directory.glob("raw_*.json"))
        out += [directory / "thread.json"]
        out += [p for p in (directory / "assets").glob("*.*") if p.name != "README.md"]
        out += [
            p
            for p in (directory / "assets" / "files").glob("*")
            if p.is_file() and not p.name.endswith((".code.md", ".diff.md"))
        ]
    return [p for p in out if p.is_file()]


def test_every_file_the_demo_keeps_is_durable(tmp_path: Path, calls: Calls) -> None:
    """The whole online path at once (index, batch, spaces, space listings, a member's thread
    through `batch --space`, a deletion, the data export's recovery): each kept file was
    fsynced before its rename and its directory after. Catches a `durable=False` on the
    manifest, thread.json, the official raw file or a space listing."""
    from click.testing import CliRunner

    from pplx_export.cli.export import main

    root = (tmp_path / "demo").resolve()
    assert CliRunner().invoke(main, ["demo", str(root)]).exit_code == 0
    kept = _kept(root)
    kinds = {p.name for p in kept}
    # The demo reaches each kind (else the test would check less than it says).
    assert {"thread.json", "raw_entries.json", "raw_official_export.json"} <= kinds
    assert {"assets_manifest.json", "report_body.md"} <= kinds
    assert any(p.name.startswith("space_") for p in kept)
    not_durable = [str(p.relative_to(root)) for p in kept if calls.durable(str(p)) is None]
    assert not_durable == []
    # A derived page is not fsynced: the check tells the two apart.
    page = next(iter(thread_dirs(root))) / "conversation.md"
    assert calls.durable(str(page)) is None


def test_a_search_rebuild_is_on_disk_before_it_replaces_the_index(
    tmp_path: Path, calls: Calls
) -> None:
    """The rebuilt database is written with SQLite's syncs off (fast), so the file is
    fsynced once before the rename: a power cut cannot leave an empty index in its place."""
    from click.testing import CliRunner

    from pplx_export.cli.export import main

    root = (tmp_path / "demo").resolve()
    assert CliRunner().invoke(main, ["demo", str(root)]).exit_code == 0
    calls.events.clear()
    result = CliRunner().invoke(main, ["search", "--rebuild", "tides", "--out", str(root)])
    assert result.exit_code == 0, result.output
    final = str(root / "index" / "search.sqlite")
    (i,) = calls.replaced_to(final)
    assert any(j < i for j in calls.fsynced(calls.events[i][1]))
    # No directory fsync after: a lost rename leaves the previous index, whole.


def test_a_deletion_mark_is_durable(tmp_path: Path, calls: Calls) -> None:
    """`remote_deleted` in thread.json is the archive's only record that Perplexity deleted
    the thread (the listing forgets it): it must survive a power cut."""
    from pplx_export.archive.thread_docs import add_remote_deleted

    src, _ = _old_thread(tmp_path)
    assert add_remote_deleted(src, "2031-03-01T00:00:00Z")
    assert calls.durable(str(src / "thread.json")) is not None
