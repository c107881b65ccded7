"""What a user sees in a terminal: log lines above an intact progress bar, plain periodic
progress lines elsewhere, --no-progress, the -v header, the degraded notice, errors without
tracebacks (issue 16, points 1, 2, 3, 7, 8, 9)."""

from __future__ import annotations

import io
import logging
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from pplx_export.cli.export import main
from pplx_export.logs import setup_logging
from pplx_export.progress import PlainReporter, progress_reporter

REPO = Path(__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _screen_lines(raw: str) -> list[str]:
    """The lines of a forced-terminal capture, escape codes and carriage returns applied."""
    out = []
    for line in ANSI.sub("", raw).split("\n"):
        out.append(line.split("\r")[-1])
    return out


def test_log_lines_print_above_an_intact_bar() -> None:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=80, color_system=None)
    setup_logging()
    log = logging.getLogger("pplx_export.test")
    try:
        with progress_reporter("batch", quiet=False, console=console) as bar:
            bar.set_total(300)
            for i in range(40):
                bar.advance()
                log.info("thread %08x: a note that is long enough to wrap the bar line", i)
    finally:
        setup_logging()
    lines = _screen_lines(buf.getvalue())
    notes = [line for line in lines if "a note that is long" in line]
    assert len(notes) == 40
    # Each message is a whole line of its own: never glued to the bar's text.
    for line in notes:
        assert line.startswith("INFO thread "), repr(line)
        assert "━" not in line and "batch" not in line
    assert all(not (line.startswith("batch") and "INFO" in line) for line in lines)


def test_plain_progress_comes_every_30_seconds_with_an_eta() -> None:
    now = [0.0]
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger("pplx_export.progress")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        rep = PlainReporter("batch", clock=lambda: now[0])
        rep.set_total(300)
        for _ in range(10):  # 10 threads in 40 s: one line (after 32 s), 0.25/s
            now[0] += 4.0
            rep.advance()
    finally:
        logger.removeHandler(handler)
    assert seen[0] == "batch: 300 threads"
    assert seen[1:] == ["batch: 8/300 (2%), 0.2/s, ETA 0:19:28"]


def test_plain_progress_keeps_a_line_coming_while_nothing_advances() -> None:
    # A stalled listing or a long retry wait: the heartbeat still writes the line (with its
    # ETA) once `seconds` have passed since the last one. The clock is fake; the wait for
    # the heartbeat thread is bounded, and nothing is asserted about how long it took.
    now = [0.0]
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger("pplx_export.progress")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    rep = PlainReporter("index", unit="rows", expected=100, seconds=0.2, clock=lambda: now[0])
    try:
        rep.start_heartbeat()
        now[0] = 10.0
        rep.done = 25
        deadline = time.monotonic() + 60
        while not seen and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        rep.stop_heartbeat()
        logger.removeHandler(handler)
    assert seen[:1] == ["index: 25 rows, 2.5/s, ETA ~0:00:30"]


def test_plain_progress_of_an_unknown_total_counts_and_estimates() -> None:
    now = [0.0]
    rep = PlainReporter("index", unit="rows", expected=100, clock=lambda: now[0])
    now[0] = 10.0
    rep.done = 25
    assert rep.line(now[0]) == "index: 25 rows, 2.5/s, ETA ~0:00:30"
    rep.expected = None
    assert rep.line(now[0]) == "index: 25 rows, 2.5/s"


def test_no_progress_and_quiet_report_nothing() -> None:
    for kwargs in ({"quiet": True}, {"quiet": False, "enabled": False}):
        with progress_reporter("batch", tty=True, **kwargs) as bar:  # type: ignore[arg-type]
            assert type(bar).__name__ == "_Silent"


def test_verbose_starts_with_a_debug_header(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["status", "-v", "--out", str(tmp_path)])
    err = result.stderr.splitlines()
    assert err[0].startswith("DEBUG pplx-export ")
    assert "Python" in err[0]
    assert err[1].startswith("DEBUG OS ")
    assert err[2].startswith("DEBUG config ") and "degraded mode" in err[2]
    assert err[3] == f"DEBUG archive root {tmp_path}"
    assert err[4].startswith("DEBUG account default, cookies from ")


def test_degraded_mode_prints_a_one_line_notice(tmp_path: Path) -> None:
    (tmp_path / "index").mkdir()
    result = CliRunner().invoke(main, ["status", "--out", str(tmp_path)])
    assert result.exit_code == 0
    notices = [line for line in result.stderr.splitlines() if "degraded mode" in line]
    assert len(notices) == 1 and notices[0].startswith("WARNING no config file at ")


def test_an_os_error_is_one_line_and_v_shows_the_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "index").mkdir()

    def broken(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(tmp_path / "index" / "x.json"))

    monkeypatch.setattr("pplx_export.commands.inspect.status.collect_status", broken)
    result = CliRunner().invoke(main, ["status", "--out", str(tmp_path)])
    assert result.exit_code == 1
    assert f"error: Permission denied: {tmp_path / 'index' / 'x.json'}" in result.stderr
    assert "Traceback" not in result.output
    verbose = CliRunner().invoke(main, ["status", "-v", "--out", str(tmp_path)])
    assert "Traceback" in verbose.stderr and verbose.exit_code == 1


def test_python_dash_m_runs_the_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pplx_export", "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout.startswith("Usage: pplx-export ")


def test_help_imports_no_heavy_module() -> None:
    """`--help` starts fast: the network stack, rich and tomlkit load when a command runs."""
    code = (
        "import sys\n"
        "from pplx_export.cli.export import main\n"
        "try:\n"
        "    main(['status', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('httpx', 'rich', 'tomlkit', 'browser_cookie3', 'pplx_export.commands', "
        "'pplx_export.pipeline', 'pplx_export.models', 'pplx_export.site.client')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m in heavy))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_parse_notes_are_logged_once_and_workflow_notes_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from pplx_export.commands.export.thread import _log_parse_notes

    note = "non-completed workflow entry:2d3497e9: WORKFLOW_CANCELED (canceled)"
    with caplog.at_level(logging.DEBUG, logger="pplx_export"):
        _log_parse_notes("0a73f37f-aaaa", [note, note, note, "entries[2] is not an object"])
    levels = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert levels == [
        ("DEBUG", f"thread 0a73f37f: {note}"),
        ("INFO", "thread 0a73f37f: entries[2] is not an object"),
    ]


def test_demo_honours_out(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    result = CliRunner().invoke(main, ["demo", "--out", str(target), "-q"])
    assert result.exit_code == 0, result.output
    assert f"demo archive: {target}" in result.stdout
    assert (target / "Alice Example").is_dir()
    clash = CliRunner().invoke(main, ["demo", str(tmp_path / "a"), "--out", str(target)])
    assert clash.exit_code == 2


def test_spaces_is_offline_unless_it_fetches_metadata(tmp_path: Path) -> None:
    """Without --fetch-meta `spaces` signs in nowhere: the short notice of the offline
    commands, and an account name the config does not know is no error."""
    (tmp_path / "index").mkdir()
    args = ["spaces", "--out", str(tmp_path), "--account", "nobody"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.stderr
    notices = [line for line in result.stderr.splitlines() if "degraded mode" in line]
    assert len(notices) == 1 and "session" not in notices[0]
