from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from pplx_export.cli.export import main
from pplx_export.commands.rerender import run as rerender_mod
from pplx_export.commands.rerender.run import rerender
from pplx_export.models import Conversation
from pplx_export.pipeline.assemble import Engine
from pplx_export.store.render_state import STATE_NAME, load_state
from pplx_export.store.variants import variant_log_lines
from tests import archive_fakes
from tests.archive_fakes import DERIVED_STATE, FAKE_ENGINE, make_thread, snapshot

U = [f"aa{i:06d}-0000-4000-8000-00000000000{i}" for i in range(1, 6)]


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    root = tmp_path / "archive"
    make_thread(root, web_uuid=U[0], title="first", n_turns=3)
    make_thread(root, web_uuid=U[1], title="second", mode="computer", account="bob")
    make_thread(root, web_uuid=U[2], title="老工具", old_tool=True, token="tok-123")
    return root


def test_full_then_noop(archive: Path) -> None:
    s = rerender(archive, engine=FAKE_ENGINE)
    assert (s.total, s.written, s.failed) == (3, 3, 0)
    d = next(archive.glob("alice/search/*_first_*"))
    assert sorted(p.name for p in (d / "turns").iterdir()) == [
        "turn_0001.md",
        "turn_0002.md",
        "turn_0003.md",
    ]
    assert (d / "conversation.md").read_text().startswith("# first\n")
    before = snapshot(archive)
    s2 = rerender(archive, engine=FAKE_ENGINE)
    assert (s2.written, s2.unchanged, s2.files_written) == (0, 3, 0)
    assert snapshot(archive) == before  # bytes and mtimes


def test_deterministic_across_copies(archive: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(archive, copy)
    rerender(archive, engine=FAKE_ENGINE)
    rerender(copy, engine=FAKE_ENGINE, jobs=2)
    # render_state.json and the relations cache journal record mtimes: state, not output
    a = {k: v[0] for k, v in snapshot(archive).items() if k not in DERIVED_STATE}
    b = {k: v[0] for k, v in snapshot(copy).items() if k not in DERIVED_STATE}
    assert a == b


def test_old_tool_archive(archive: Path) -> None:
    d = next(p for p in archive.glob("alice/search/*") if "aa000003" in p.name)
    rerender(archive, engine=FAKE_ENGINE)
    raw = (d / "raw_entries.json").read_text()
    assert "tok-123" not in raw and "<redacted>" in raw
    doc = json.loads((d / "thread.json").read_text())
    assert doc["exported_at"] is None  # never invented offline
    assert doc["n_turns"] == 2 and doc["title"] == "老工具"


def test_stale_turns_removed_on_rerender(archive: Path) -> None:
    rerender(archive, engine=FAKE_ENGINE)
    d = next(archive.glob("alice/search/*_first_*"))
    raw = json.loads((d / "raw_entries.json").read_text())
    raw["entries"] = raw["entries"][:1]
    (d / "raw_entries.json").write_text(json.dumps(raw))
    rerender(archive, engine=FAKE_ENGINE)
    assert [p.name for p in (d / "turns").iterdir()] == ["turn_0001.md"]


def test_changed_only(archive: Path) -> None:
    rerender(archive, engine=FAKE_ENGINE)
    assert (archive / STATE_NAME).exists()
    s = rerender(archive, engine=FAKE_ENGINE, changed_only=True)
    assert (s.skipped, s.written, s.unchanged) == (3, 0, 0)
    # a touch alone (same bytes) does not count as a change
    d = next(archive.glob("alice/search/*_first_*"))
    os.utime(d / "raw_entries.json", ns=(5, 5))
    assert rerender(archive, engine=FAKE_ENGINE, changed_only=True).skipped == 3
    raw = json.loads((d / "raw_entries.json").read_text())
    raw["entries"][0]["answer"] = "a better answer"
    (d / "raw_entries.json").write_text(json.dumps(raw))
    s = rerender(archive, engine=FAKE_ENGINE, changed_only=True)
    assert (s.skipped, s.written) == (2, 1)
    assert "a better answer" in (d / "conversation.md").read_text()
    newer = Engine(FAKE_ENGINE.parse, FAKE_ENGINE.render, FAKE_ENGINE.render_report, "fake-2")
    assert rerender(archive, engine=newer, changed_only=True).skipped == 0
    assert rerender(archive, engine=newer, changed_only=True, lang="zh").skipped == 0


def test_dry_run_writes_nothing(archive: Path) -> None:
    before = snapshot(archive)
    s = rerender(archive, engine=FAKE_ENGINE, dry_run=True)
    assert s.written == 3 and s.files_written > 0
    assert snapshot(archive) == before
    rerender(archive, engine=FAKE_ENGINE)
    before = snapshot(archive)
    s = rerender(archive, engine=FAKE_ENGINE, dry_run=True, changed_only=True)
    assert s.skipped == 3 and snapshot(archive) == before


def test_limit(archive: Path) -> None:
    s = rerender(archive, engine=FAKE_ENGINE, limit=2)
    assert s.total == 2


def test_failures_counted_and_run_continues(archive: Path) -> None:
    bad_json = make_thread(archive, web_uuid=U[3], title="corrupt")
    (bad_json / "raw_entries.json").write_text('{"entries": [tor')
    schema = make_thread(archive, web_uuid=U[4], title="schema")
    (schema / "raw_entries.json").write_text('{"entries": {"not": "a list"}}')
    s = rerender(archive, engine=FAKE_ENGINE)
    assert (s.total, s.written, s.failed) == (5, 3, 2)
    reasons = dict(s.failures)
    assert "raw_entries.json does not parse" in reasons[bad_json.relative_to(archive).as_posix()]
    assert "entries is not a list" in reasons[schema.relative_to(archive).as_posix()]
    assert not (bad_json / "conversation.md").exists()


def _boom(*args: object, **kwargs: object) -> object:
    raise AssertionError("re-render opened a socket")


def test_cli_zero_network_exit_codes(archive: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rerender_mod, "default_engine", lambda flavor="github": FAKE_ENGINE)
    monkeypatch.setattr(socket, "socket", _boom)
    monkeypatch.setattr(socket, "create_connection", _boom)
    runner = CliRunner()
    r = runner.invoke(main, ["re-render", "--out", str(archive)])
    assert r.exit_code == 0, r.output
    assert "re-render: 3 threads, 3 rewritten" in r.stderr
    assert r.stdout == ""
    r = runner.invoke(main, ["re-render", "--out", str(archive), "--changed-only", "--jobs", "2"])
    assert r.exit_code == 0 and "3 skipped" in r.stderr
    (next(archive.glob("alice/search/*_first_*")) / "raw_entries.json").write_text("[]")
    r = runner.invoke(main, ["re-render", "--out", str(archive), "-q"])
    assert r.exit_code == 4
    assert "re-render:" not in r.stderr
    assert "raw_entries.json is not a JSON object" in r.stderr  # the ERROR log line
    r = runner.invoke(main, ["re-render", "--out", str(archive / "missing")])
    assert r.exit_code == 2


def test_variants_logged_offline_once(archive: Path, caplog: pytest.LogCaptureFixture) -> None:
    d = next(archive.glob("alice/search/*_first_*"))
    raw = json.loads((d / "raw_entries.json").read_text())
    raw["entries"][0]["side_by_side_metadata"] = {"sibling_uuid": "sib", "experiment_role": "x"}
    (d / "raw_entries.json").write_text(json.dumps(raw))
    with caplog.at_level("WARNING"):
        rerender(archive, engine=FAKE_ENGINE, jobs=2)
        rerender(archive, engine=FAKE_ENGINE)
    hits = [r for r in caplog.records if "ANSWER_VARIANT_DETECTED" in r.getMessage()]
    assert len(hits) == 1
    lines = variant_log_lines(archive)
    assert len(lines) == 1 and json.loads(lines[0])["source"] == "offline"


def test_fakes_module_is_real() -> None:
    # The fakes above stand in for the parser/renderer; make sure they are what ran.
    assert FAKE_ENGINE.parse is archive_fakes.fake_parse


def _render_interrupted(conv: Conversation, lang: str, local: object = ()) -> dict[str, str]:
    if "second" in conv.title:
        raise KeyboardInterrupt
    return archive_fakes.fake_render(conv, lang)


def test_interrupt_keeps_finished_threads_in_state(archive: Path) -> None:
    engine = Engine(FAKE_ENGINE.parse, _render_interrupted, FAKE_ENGINE.render_report, "fake-1")
    with pytest.raises(KeyboardInterrupt):
        rerender(archive, engine=engine)
    state = load_state(archive)
    assert len(state) == 2 and not [p for p in state if "second" in p]
    s = rerender(archive, engine=FAKE_ENGINE, changed_only=True)
    assert (s.skipped, s.written) == (2, 1)


def test_symlinked_thread_dir_leaving_the_root_is_refused(archive: Path, tmp_path: Path) -> None:
    # The listing follows symlinks, so such a directory is found; the writer must still
    # refuse it (listed directories skip ensure_inside only when no symlink was seen).
    src = next(archive.glob("alice/search/*_first_*"))
    outside = tmp_path / "outside" / src.name
    shutil.move(src, outside)
    (archive / "alice" / "search" / src.name).symlink_to(outside)
    before = snapshot(tmp_path / "outside")
    s = rerender(archive, engine=FAKE_ENGINE)
    assert s.failed == 1
    assert "refusing to write outside the archive" in s.failures[0][1]
    assert snapshot(tmp_path / "outside") == before


def test_symlinked_mode_folder_inside_the_root_is_rendered(archive: Path) -> None:
    (archive / "alice" / "alias").symlink_to(archive / "alice" / "search")
    s = rerender(archive, engine=FAKE_ENGINE)
    assert s.failed == 0 and s.total == 5  # the alias lists the two search threads again


def test_rendered_dir_that_lost_its_files_is_reported_once(archive: Path) -> None:
    rerender(archive, engine=FAKE_ENGINE)
    d = next(archive.glob("alice/search/*_first_*"))
    for name in ("thread.json", "raw_entries.json"):
        (d / name).unlink()
    s = rerender(archive, engine=FAKE_ENGINE)
    assert s.failed == 1 and s.failures[0] == (str(d.relative_to(archive)), "thread.json missing")
    # Reported, and forgotten: the directory holds no thread any more.
    s = rerender(archive, engine=FAKE_ENGINE)
    assert (s.total, s.failed) == (2, 0)


def test_interrupt_mid_thread_leaves_no_temp_file(archive: Path) -> None:
    # Ctrl-C can land between a temp file's creation and the cleanup that guards it.
    def render(conv: Conversation, lang: str, local: object = ()) -> dict[str, str]:
        d = next(archive.glob(f"*/*/*_{conv.web_uuid[:8]}"))
        (d / ".pplx-tmp-torn").write_text("half")
        raise KeyboardInterrupt

    engine = Engine(FAKE_ENGINE.parse, render, FAKE_ENGINE.render_report, "fake-1")
    with pytest.raises(KeyboardInterrupt):
        rerender(archive, engine=engine, jobs=1)
    assert not list(archive.rglob(".pplx-tmp-*"))
