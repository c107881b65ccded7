from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import pytest

from pplx_export.archive.report_body import load_report_body, looks_binary
from pplx_export.archive.writer import REPORT_SOURCE
from pplx_export.commands.rerender.run import rerender
from pplx_export.models import Asset, Conversation, Report, ReportInfo
from pplx_export.progress import progress_reporter
from tests.archive_fakes import FAKE_ENGINE, make_thread

UUID = "feed0001-0000-4000-8000-000000000001"


def _conv(*candidates: Asset) -> Conversation:
    return Conversation(web_uuid=UUID, report=Report(ReportInfo("R", "r.md"), list(candidates)))


def test_report_body_prefers_stored_source(tmp_path: Path) -> None:
    (tmp_path / "assets").mkdir()
    (tmp_path / REPORT_SOURCE).write_text("stored body")
    assert load_report_body(tmp_path, _conv()) == "stored body"
    assert load_report_body(tmp_path, Conversation(web_uuid=UUID)) is None


def test_report_body_from_downloaded_candidates(tmp_path: Path) -> None:
    files = tmp_path / "assets" / "files"
    files.mkdir(parents=True)
    (files / "chart.png").write_bytes(b"\x89PNG\r\n\x1a\nxxxx")
    (files / "blank.md").write_text("  \n")
    (files / "report_v2.md").write_text("# real report")
    manifest = {
        "count": 3,
        "files": [
            {
                "filename": "x",
                "n_versions": 1,
                "versions": [
                    {"uuid": "u-png", "downloaded_to": "/elsewhere/assets/files/chart.png"},
                    {"uuid": "u-blank", "downloaded_to": "assets/files/blank.md"},
                    {"uuid": "u-real", "downloaded_to": "old/root/assets/files/report_v2.md"},
                ],
            },
        ],
    }
    (tmp_path / "assets" / "assets_manifest.json").write_text(json.dumps(manifest))
    conv = _conv(
        Asset(uuid="u-png"), Asset(uuid="u-missing"), Asset(uuid="u-blank"), Asset(uuid="u-real")
    )
    assert load_report_body(tmp_path, conv) == "# real report"
    assert load_report_body(tmp_path, _conv(Asset(uuid="u-png"))) is None


@pytest.mark.parametrize(
    ("data", "binary"),
    [
        (b"%PDF-1.7", True),
        (b"PK\x03\x04..", True),
        (b"  <svg xmlns=", True),
        (b"<?xml version", True),
        (b"# Title\n\ntext", False),
    ],
)
def test_looks_binary(data: bytes, binary: bool) -> None:
    assert looks_binary(data) is binary


def test_rerender_rebuilds_report_from_stored_body(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    d = make_thread(root, web_uuid=UUID, title="with report")
    raw = json.loads((d / "raw_entries.json").read_text())
    raw["thread_metadata"]["fake_report"] = True
    (d / "raw_entries.json").write_text(json.dumps(raw))
    rerender(root, engine=FAKE_ENGINE)
    assert not (d / "report.md").exists()  # no body known: nothing invented
    (d / "report.md").write_text("hand-kept report from the earlier tool")
    rerender(root, engine=FAKE_ENGINE)
    assert (d / "report.md").read_text() == "hand-kept report from the earlier tool"
    (d / "assets").mkdir()
    (d / REPORT_SOURCE).write_text("the body")
    rerender(root, engine=FAKE_ENGINE)
    assert (d / "report.md").read_text() == "# Fake report\n\nthe body"


def test_progress_plain_lines_and_quiet(caplog: pytest.LogCaptureFixture) -> None:
    with (
        caplog.at_level(logging.INFO, logger="pplx_export.progress"),
        progress_reporter("re-render", quiet=False, tty=False) as bar,
    ):
        bar.set_total(150)
        for _ in range(150):
            bar.advance()
    # Each line goes on with the percentage, the rate and (until the end) an ETA.
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == [
        "re-render: 150 threads",
        "re-render: 100/150",
        "re-render: 150/150",
    ]
    caplog.clear()
    with (
        caplog.at_level(logging.INFO, logger="pplx_export.progress"),
        progress_reporter("re-render", quiet=True, tty=True) as bar,
    ):
        bar.set_total(3)
        bar.advance()
    assert caplog.records == []
    with progress_reporter("re-render", quiet=False, tty=True) as bar:  # rich: just runs
        bar.set_total(2)
        bar.advance()


def _refresh_threads() -> list[threading.Thread]:
    # rich's refresh thread by its class: counting all threads is flaky, since threads of
    # other tests (an emulator's request handlers) may still be winding down meanwhile.
    return [t for t in threading.enumerate() if type(t).__name__ == "_RefreshThread"]


def test_rich_bar_without_refresh_thread_starts_no_thread() -> None:
    # Re-render forks its workers while the bar is up: no thread may hold a lock then.
    # Another test's rich Live (outside progress_reporter) may still be winding down.
    for stray in _refresh_threads():
        stray.join(timeout=5)
    assert _refresh_threads() == []
    with progress_reporter("re-render", quiet=False, tty=True, refresh_thread=False) as bar:
        assert _refresh_threads() == []
        bar.set_total(2)
        bar.advance()
        bar.advance()
    with progress_reporter("re-render", quiet=False, tty=True) as bar:
        assert len(_refresh_threads()) == 1  # rich's refresh thread (batch, sync)
    # Gone when the bar is: rich's Live.stop() only signals its thread; the reporter waits,
    # so the next phase (which may fork) starts with no thread holding the console's lock.
    assert _refresh_threads() == []
