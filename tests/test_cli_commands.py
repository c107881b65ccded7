"""CLI surface checks that need no emulator: every command has help, bad dates are usage errors."""

from __future__ import annotations

from click.testing import CliRunner

from pplx_export.cli.export import main


def test_every_command_has_help() -> None:
    runner = CliRunner()
    for name in (
        *("index", "export", "batch", "sync", "status", "re-render", "demo"),
        *("spaces", "space-index", "sync-space", "relations"),
        *("sync-deleted", "usage-backfill", "assets-backfill", "search-mode-backfill"),
    ):
        result = runner.invoke(main, [name, "--help"])
        assert result.exit_code == 0, name
        assert "--account" in result.output and "--out" in result.output, name


def test_a_bad_since_date_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["batch", "--dry-run", "--since", "yesterday-ish"])
    assert result.exit_code == 2
    assert "--since" in result.output
