"""CLI surface checks that need no emulator: every command has help, bad dates are usage errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pplx_export.cli.export import main

ONLINE = (
    *("index", "export", "batch", "sync", "spaces", "space-index"),
    *("sync-deleted", "usage-backfill", "assets-backfill", "search-mode-backfill"),
)
OFFLINE = ("status", "re-render", "demo", "sync-space", "relations", "verify")


def test_every_command_has_help_listing_only_the_options_it_uses() -> None:
    runner = CliRunner()
    for name in ONLINE + OFFLINE:
        result = runner.invoke(main, [name, "--help"])
        assert result.exit_code == 0, name
        out = result.output
        assert "--out" in out and "--no-progress" in out and "--verbose" in out, name
        online = name in ONLINE
        assert ("--cookies-from-browser" in out) is online, name
        assert ("--cookies FILE" in out or "--cookies TEXT" in out) is online, name
        assert ("--account" in out) is online, name
    assert "--config" not in runner.invoke(main, ["demo", "--help"]).output
    assert "--lang" not in runner.invoke(main, ["status", "--help"]).output


@pytest.mark.parametrize("name", [*ONLINE, "status", "re-render", "sync-space", "relations"])
def test_every_reporting_command_has_json(name: str) -> None:
    assert "--json" in CliRunner().invoke(main, [name, "--help"]).output


def test_a_bad_since_date_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["batch", "--dry-run", "--since", "yesterday-ish"])
    assert result.exit_code == 2
    assert "--since" in result.output


def test_commands_without_account_run_on_a_config_of_several_accounts(tmp_path: Path) -> None:
    """status/re-render offer no --account: a config they could not pick one from is fine."""
    config = tmp_path / "c.toml"
    config.write_text('[accounts.a]\nemail = "a@x"\n[accounts.b]\nemail = "b@x"\n')
    (tmp_path / "arch" / "index").mkdir(parents=True)
    argv = ["--config", str(config), "--out", str(tmp_path / "arch")]
    assert CliRunner().invoke(main, ["status", *argv]).exit_code == 0
    assert CliRunner().invoke(main, ["re-render", *argv]).exit_code == 0
    # batch walks every account (issue 32): a plan for each.
    batch = CliRunner().invoke(main, ["batch", "--dry-run", *argv])
    assert batch.exit_code == 0, batch.output
    assert "a: " in batch.stdout and "b: " in batch.stdout


def test_the_cli_choice_lists_match_their_sources() -> None:
    # Kept as literals in cli/ so `--help` need not import the data model or sqlite.
    from pplx_export.cli import export, find
    from pplx_export.models import MODES
    from pplx_export.search.query import IN_CHOICES

    assert export.MODES == find.MODES == MODES
    assert find.IN_CHOICES == IN_CHOICES


def test_an_error_raised_in_a_ctrl_cs_wake_is_the_ctrl_c(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CPython may turn a Ctrl-C into "RuntimeError: release unlocked lock" (a lock's
    release on the way out): the user pressed Ctrl-C, so: interrupted, exit 130."""
    from pplx_export.commands.rerender import run as rerender_run

    def broken(*args: object, **kwargs: object) -> None:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise RuntimeError("release unlocked lock") from None

    monkeypatch.setattr(rerender_run, "rerender", broken)
    result = CliRunner().invoke(main, ["re-render", "--out", str(tmp_path)])
    assert result.exit_code == 130
    assert "interrupted" in result.stderr and "internal error" not in result.stderr
