from __future__ import annotations

import json
import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pplx_export.cli.export import main
from pplx_export.commands.inspect.status import collect_status
from pplx_export.config import load_config
from pplx_export.store.batch_state import BatchState, state_path
from pplx_export.store.library_index import index_path, save_index
from tests.archive_fakes import make_thread

NOW = datetime(2043, 4, 10, 12, 0, 0, tzinfo=UTC)

CONFIG = """\
default_account = "alice"

[accounts.alice]
display_name = "Alice Example"

[accounts.bob]
display_name = "Bob"

[index_state.alice]
extracted_at = "2043-04-10T10:00:00Z"
last_full_index_at = "2043-04-01T00:00:00Z"
incremental_runs_since_full = 11
"""


def row(uuid: str, updated: str, title: str, **extra: Any) -> dict[str, Any]:
    return {
        "title": title,
        "entryUUID": uuid,
        "href": title.lower(),
        "mode": "SEARCH",
        "displayModel": "",
        "lastUpdated": updated,
        "status": "COMPLETED",
        "space": None,
        **extra,
    }


def thread_dir(root: Path, uuid: str, updated: str, mode: str) -> None:
    folder = root / "Alice Example" / mode / f"2043-04-01_t_{uuid[:8]}"
    folder.mkdir(parents=True)
    doc = {"web_uuid": uuid, "title": "t", "mode": mode, "lastUpdated": updated}
    (folder / "thread.json").write_text(json.dumps(doc))


@pytest.fixture
def archive(tmp_path: Path) -> tuple[Path, Path]:
    """A small hand-made archive: two indexed accounts (one unconfigured), one without index."""
    root = tmp_path / "archive"
    cfg = tmp_path / "config.toml"
    cfg.write_text(CONFIG)
    save_index(
        root,
        "alice",
        [
            row("new-0001", "2043-04-09T00:00:00.000001Z", "Brand new [draft]"),
            row("upd-0002", "2043-04-08T00:00:00Z", "Grew a turn"),
            row("err-0003", "2043-04-07T00:00:00Z", "Keeps failing"),
            row("don-0004", "2043-04-06T00:00:00.5Z", "Done research", search_mode="RESEARCH"),
            row("don-0005", "2043-04-05T00:00:00Z", "Done study", displayModel="pplx_study"),
            row("exp-0006", "2043-01-01T00:00:00Z", "Purged"),
        ],
    )
    save_index(root, "carol", [row("car-0001", "2043-03-03T00:00:00Z", "Carol's only")])
    state = BatchState.load(root)
    state.mark_ok("upd-0002", last_updated="2043-03-08T00:00:00Z", title="Grew a turn", now=NOW)
    state.mark_error("err-0003", error="503 from server", title="Keeps failing", now=NOW)
    state.mark_ok("don-0004", last_updated="2043-04-06T00:00:00.500Z", title="d", now=NOW)
    state.mark_ok("don-0005", last_updated="2043-04-05T00:00:00Z", title="d", now=NOW)
    state.mark_gone("expired", "exp-0006", title="Purged", now=NOW)
    state.mark_ok("orphan-07", last_updated="2043-01-01T00:00:00Z", title="o", now=NOW)
    state.close()  # as at the end of a run
    thread_dir(root, "upd-0002", "2043-03-08T00:00:00Z", "search")
    thread_dir(root, "don-0004", "2043-04-06T00:00:00.5Z", "deep-research")
    thread_dir(root, "don-0005", "2043-04-05T00:00:00Z", "study")
    # carol's index is older than its stamp-less config: the file mtime gives its age
    old = NOW.timestamp() - 3 * 86400
    os.utime(index_path(root, "carol"), (old, old))
    return root, cfg


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("status opened a socket")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def by_account(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {acc["account"]: acc for acc in doc["accounts"]}


def test_collect_status_counts(archive: tuple[Path, Path], no_network: None) -> None:
    root, cfg = archive
    doc = collect_status(root, load_config(cfg), now=NOW)
    assert json.loads(json.dumps(doc)) == doc
    accounts = by_account(doc)
    assert list(accounts) == ["alice", "bob", "carol"]
    alice = accounts["alice"]
    assert alice["configured"]
    assert alice["index"] == {
        "path": "index/library_alice.json",
        "exists": True,
        "corrupt": False,
        "threads": 6,
        "extracted_at": "2043-04-10T10:00:00Z",
        "age_source": "config",
        "age_seconds": 7200,
        "last_full_index_at": "2043-04-01T00:00:00Z",
        "incremental_runs_since_full": 11,
        "full_index_due": True,
    }
    assert alice["state"] == {"unexported": 1, "ok": 3, "error": 1, "expired": 1}
    assert alice["next_batch"] == {
        "new": 1,
        "updated": 2,
        "done": 0,
        "expired": 0,
        "deleted": 0,
        "early_stopped": 3,
    }
    assert "todo" not in alice["next_batch"] and "threads" not in alice

    bob = accounts["bob"]
    assert bob["index"]["exists"] is False and bob["index"]["threads"] == 0
    assert bob["index"]["age_seconds"] is None

    carol = accounts["carol"]
    assert not carol["configured"]
    assert carol["index"]["age_source"] == "mtime"
    assert carol["index"]["age_seconds"] == 3 * 86400
    assert carol["next_batch"]["new"] == 1

    assert doc["state"]["counts"] == {"ok": 4, "error": 1, "expired": 1, "deleted": 0}
    assert doc["state"]["not_in_any_index"] == 1
    assert doc["errors"] == [{"uuid": "err-0003", "error": "503 from server"}]


def test_verbosity_tiers(archive: tuple[Path, Path], no_network: None) -> None:
    root, cfg = archive
    config = load_config(cfg)
    one = by_account(collect_status(root, config, now=NOW, verbose=1))["alice"]
    assert [(t["uuid"], t["kind"]) for t in one["next_batch"]["todo"]] == [
        ("new-0001", "new"),
        ("upd-0002", "updated"),
        ("err-0003", "updated"),
    ]
    assert "done_by_mode" not in one

    two = collect_status(root, config, now=NOW, verbose=2)
    assert two["errors"][0]["title"] == "Keeps failing"
    assert by_account(two)["alice"]["done_by_mode"] == {
        "search": 1,
        "deep-research": 1,
        "study": 1,
    }
    assert "threads" not in by_account(two)["alice"]

    three = by_account(collect_status(root, config, now=NOW, verbose=3))["alice"]
    assert [(t["uuid"], t["plan"], t["state"]) for t in three["threads"]] == [
        ("new-0001", "new", ""),
        ("upd-0002", "updated", "ok"),
        ("err-0003", "updated", "error"),
        ("don-0004", "early_stopped", "ok"),
        ("don-0005", "early_stopped", "ok"),
        ("exp-0006", "early_stopped", "expired"),
    ]
    assert [t["mode"] for t in three["threads"]][3:5] == ["deep-research", "study"]


def test_status_json_cli(archive: tuple[Path, Path], no_network: None) -> None:
    root, cfg = archive
    result = CliRunner().invoke(
        main, ["status", "--json", "--config", str(cfg), "--out", str(root), "-v"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["verbosity"] == 1
    assert set(doc) == {
        *("archive", "now", "verbosity", "accounts", "state", "errors", "losses"),
        "versions",
        *("tombstoned", "credit_usage", "damaged", "stale_accounts"),
    }
    assert by_account(doc)["alice"]["next_batch"]["todo"][0]["title"] == "Brand new [draft]"


def test_status_human_output(archive: tuple[Path, Path], no_network: None) -> None:
    root, cfg = archive
    result = CliRunner().invoke(main, ["status", "--config", str(cfg), "--out", str(root), "-vv"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    for text in ("alice", "carol", "none", "11 incremental", "Brand new [draft]", "503"):
        assert text in out, text
    assert "Keeps failing" in out
    assert "deep-research 1" in out


def test_status_is_read_only_with_a_corrupt_state(
    archive: tuple[Path, Path], no_network: None
) -> None:
    root, cfg = archive
    path = state_path(root)
    path.write_text("{not json")
    before = sorted(p.name for p in path.parent.iterdir())
    doc = collect_status(root, load_config(cfg), now=NOW)
    assert doc["state"]["corrupt"] is True
    assert doc["state"]["counts"]["ok"] == 3  # rebuilt in memory from the thread dirs
    assert sorted(p.name for p in path.parent.iterdir()) == before
    assert path.read_text() == "{not json"


def test_status_without_a_state_file_says_it_is_missing_not_corrupt(
    archive: tuple[Path, Path], no_network: None
) -> None:
    root, cfg = archive
    state_path(root).unlink()
    doc = collect_status(root, load_config(cfg), now=NOW)
    assert doc["state"]["corrupt"] is False and doc["state"]["rebuilt_from_disk"] is True
    assert doc["state"]["counts"]["ok"] == 3  # rebuilt in memory from the thread dirs
    assert not state_path(root).exists()  # read-only
    result = CliRunner().invoke(main, ["status", "--config", str(cfg), "--out", str(root)])
    assert "no batch state file yet" in result.stdout and "corrupt" not in result.stdout


def test_status_on_a_missing_archive_says_so(no_network: None, tmp_path: Path) -> None:
    """Not a table of zeros: a wrong path (a cron job in another directory) is exit 2."""
    result = CliRunner().invoke(main, ["status", "--json", "--out", str(tmp_path / "none")])
    assert result.exit_code == 2, result.output
    assert f"no archive at {tmp_path / 'none'}" in result.output
    assert result.stdout == ""
    assert not (tmp_path / "none").exists()


def test_status_on_an_empty_archive_in_degraded_mode(no_network: None, tmp_path: Path) -> None:
    (tmp_path / "fresh" / "index").mkdir(parents=True)
    result = CliRunner().invoke(main, ["status", "--json", "--out", str(tmp_path / "fresh")])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["accounts"] == [] and doc["errors"] == []
    assert "degraded mode" in result.stderr


def test_status_of_an_archive_no_index_lists_counts_its_threads_by_folder(
    no_network: None, tmp_path: Path
) -> None:
    """The earlier tool's archive (thread folders, no index, no config): not an empty
    table, but what is there, by folder."""
    root = tmp_path / "old"
    for i, account in enumerate(["alice", "alice", "bob"]):
        make_thread(root, web_uuid=f"{i:08d}-0000-4000-8000-000000000000", account=account)
    (root / "index").mkdir()
    result = CliRunner().invoke(main, ["status", "--out", str(root)])
    assert result.exit_code == 0, result.output
    assert "┃" not in result.stdout and "index age" not in result.stdout  # no empty table
    assert "no account configured and no library index" in result.stdout
    assert "3 archived threads are in no library index (3 ok); by folder: alice 2, bob 1" in (
        result.stdout
    )
    doc = json.loads(CliRunner().invoke(main, ["status", "--json", "--out", str(root)]).stdout)
    assert doc["state"]["not_in_any_index_by_folder"] == {"alice": 2, "bob": 1}


def test_status_reports_a_corrupt_index_without_moving_it(
    archive: tuple[Path, Path], no_network: None
) -> None:
    root, cfg = archive
    path = index_path(root, "carol")
    path.write_text('{"threads": "nope"}')
    doc = collect_status(root, load_config(cfg), now=NOW)
    carol = by_account(doc)["carol"]
    assert carol["index"]["corrupt"] is True and carol["index"]["threads"] == 0
    assert path.read_text() == '{"threads": "nope"}'
    assert not list(path.parent.glob("*.corrupt-*"))
