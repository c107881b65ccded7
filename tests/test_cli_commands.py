"""CLI surface checks that need no emulator: flags that are not available yet say so."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from pplx_export.cli.export import main


@pytest.mark.parametrize(("flag", "command"), [("--refresh-spaces", "spaces")])
def test_sync_rejects_flags_whose_command_does_not_exist_yet(flag: str, command: str) -> None:
    result = CliRunner().invoke(main, ["sync", flag])
    assert result.exit_code == 2
    assert flag in result.output and f"`{command}`" in result.output


def test_every_command_has_help() -> None:
    runner = CliRunner()
    for name in (
        *("index", "export", "batch", "sync", "status", "re-render", "demo"),
        *("sync-deleted", "usage-backfill", "assets-backfill", "search-mode-backfill"),
    ):
        result = runner.invoke(main, [name, "--help"])
        assert result.exit_code == 0, name
        assert "--account" in result.output and "--out" in result.output, name


def test_a_bad_since_date_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["batch", "--dry-run", "--since", "yesterday-ish"])
    assert result.exit_code == 2
    assert "--since" in result.output
