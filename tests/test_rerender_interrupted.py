"""A killed re-render's torn temp files are swept by the next one, even a `--changed-only`
run that renders nothing (issue 33)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from benchmarks.rerender import generate
from pplx_export.cli.export import main
from pplx_export.commands.rerender import run as rerender_module
from pplx_export.commands.rerender.run import RUNNING_MARKER


def _rerender(root: Path, *args: str) -> None:
    result = CliRunner().invoke(
        main, ["re-render", "--jobs", "1", "--out", str(root), *args], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output


def test_a_killed_rerender_leaves_a_marker_and_the_next_one_sweeps(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    generate(root, 3)
    _rerender(root)
    marker = root / "index" / RUNNING_MARKER
    assert not marker.exists()  # a run that ends takes it away
    # What a SIGKILL mid-render leaves: the marker and a torn temp file in a thread that
    # `--changed-only` has no reason to render again.
    thread = next(p for p in root.glob("*/*/*") if (p / "thread.json").is_file())
    torn = thread / "turns" / ".pplx-tmp-123-4"
    torn.write_text("half a turn", "utf-8")
    marker.touch()
    _rerender(root, "--changed-only")
    assert not torn.exists() and not marker.exists()


def test_the_marker_is_there_while_a_rerender_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "archive"
    generate(root, 2)
    seen: list[bool] = []
    real = rerender_module.rerender

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append((root / "index" / RUNNING_MARKER).exists())
        return real(*args, **kwargs)

    monkeypatch.setattr(rerender_module, "rerender", spy)
    _rerender(root)
    assert seen == [True]
    # Without the marker (no run was killed), temp files a re-render has no reason to look
    # at are not hunted for: the no-op `--changed-only` stays a walk of the thread list.
    thread = next(p for p in root.glob("*/*/*") if (p / "thread.json").is_file())
    (thread / ".pplx-tmp-9-9").write_text("x", "utf-8")
    _rerender(root, "--changed-only")
    assert (thread / ".pplx-tmp-9-9").exists()
