from __future__ import annotations

import logging
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from pplx_export.cli.export import main
from pplx_export.config import default_config_path, load_config
from pplx_export.errors import ConfigError
from pplx_export.logs import setup_logging
from tests.fsync_support import record_fsyncs

SAMPLE = """\
# my archive settings
default_account = "alice"  # the usual one
archive_root = "~/perplexity-archive"

[accounts.alice]
display_name = "Alice Example"
email = "alice@example.com"

[accounts.bob]
email = "bob@example.com"

[network]
min_interval = 0.5
"""


def test_default_path_is_inside_the_isolated_home(isolated_home: Path) -> None:
    assert str(default_config_path()).startswith(str(isolated_home))


def test_missing_default_config_is_degraded_mode() -> None:
    cfg = load_config()
    assert cfg.degraded
    assert cfg.account().name == "default"
    assert cfg.archive_dir() == Path("./web_archive").absolute()


def test_missing_explicit_config_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.toml")


def test_env_var_config_counts_as_explicit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PPLX_EXPORT_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigError):
        load_config()


def test_parse_error_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('default_account = "a"\narchive_root = \n')
    with pytest.raises(ConfigError) as caught:
        load_config(bad)
    assert_names_file_and_line(str(caught.value), "bad.toml", 2)


def test_a_key_defined_twice_is_a_one_line_error_with_its_place(tmp_path: Path) -> None:
    """tomlkit reports a duplicate key with an error that is not a parse error (and no
    line): it used to escape as an internal error. The place comes from tomllib."""
    bad = tmp_path / "dup.toml"
    bad.write_text('[accounts.maya]\nemail = "a@example.com"\nemail = "b@example.com"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(bad)
    assert_names_file_and_line(str(caught.value), "dup.toml", 3)
    result = CliRunner().invoke(main, ["status", "--config", str(bad)])
    assert result.exit_code == 2
    assert "cannot parse config file" in result.output and "Traceback" not in result.output
    assert_names_file_and_line(result.output, "dup.toml", 3)


def assert_names_file_and_line(message: str, name: str, line: int) -> None:
    """The file and the line, each said once, whatever words the TOML library uses for the
    rest (tomlkit's wording changed between 0.15.1 and 0.15.3)."""
    assert f"{name}, line {line}: " in message, message
    assert message.count(f"line {line}") == 1, message
    assert "col " not in message and "column" not in message, message


def test_accounts_root_and_network(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(SAMPLE)
    cfg = load_config(path)
    assert cfg.account().display_name == "Alice Example"
    assert cfg.account("bob").display_name == "bob"
    assert cfg.network.min_interval == 0.5
    assert cfg.archive_dir("x") == Path("x").absolute()
    assert cfg.archive_dir() == Path("~/perplexity-archive").expanduser()
    with pytest.raises(ConfigError, match="carol"):
        cfg.account("carol")


def test_save_keeps_comments_and_is_owner_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(SAMPLE)
    cfg = load_config(path)
    cfg.section("index_state", "alice")["incremental_runs_since_full"] = 3
    calls = record_fsyncs(monkeypatch)
    cfg.save()
    # The user's only copy of their settings: durable (a power cut keeps a whole file).
    assert calls.durable(str(path.resolve())) is not None
    text = path.read_text()
    assert "# my archive settings" in text and "# the usual one" in text
    assert "[index_state.alice]" in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".pplx-tmp-")]


def test_wrong_types_are_config_errors(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('auto_commit = "yes"\n')
    with pytest.raises(ConfigError, match="auto_commit"):
        load_config(path)


def test_cli_version_and_help() -> None:
    runner = CliRunner()
    assert "pplx-export" in runner.invoke(main, ["--version"]).output
    assert runner.invoke(main, ["--help"]).exit_code == 0


def test_cli_maps_config_errors_to_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("archive_root = [\n")
    result = CliRunner().invoke(main, ["status", "--config", str(bad)])
    assert result.exit_code == 2
    assert "bad.toml" in result.output and "line" in result.output


def test_cli_missing_explicit_config_is_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["status", "--config", str(tmp_path / "none.toml")])
    assert result.exit_code == 2
    assert "not found" in result.output


def test_log_file_records_debug_while_console_is_quiet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_file = tmp_path / "logs" / "run.log"
    setup_logging(verbose=0, quiet=True, log_file=log_file)
    try:
        logging.getLogger("pplx_export.test").debug("detail for the file only")
        logging.getLogger("pplx_export.test").error("shown everywhere")
    finally:
        setup_logging()
    text = log_file.read_text()
    assert "detail for the file only" in text and "shown everywhere" in text
    err = capsys.readouterr().err
    assert "detail for the file only" not in err and "shown everywhere" in err


def test_relative_archive_root_is_relative_to_the_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    path = conf_dir / "c.toml"
    path.write_text('archive_root = "./archive"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # a cron job started from $HOME
    cfg = load_config(path)
    assert cfg.archive_dir() == conf_dir / "archive"
    # --out stays relative to where the command runs, as any command-line path.
    assert cfg.archive_dir("mine") == elsewhere / "mine"


def test_an_account_the_config_does_not_define_is_exit_2(tmp_path: Path) -> None:
    """default_account naming an account without [accounts] cannot be checked: refuse."""
    path = tmp_path / "c.toml"
    path.write_text('default_account = "bob"\n')
    with pytest.raises(ConfigError, match=r"default_account 'bob' is not defined"):
        load_config(path).account()
    result = CliRunner().invoke(main, ["batch", "--config", str(path), "--dry-run"])
    assert result.exit_code == 2
    assert "[accounts.bob]" in result.output and "Traceback" not in result.output


def test_version_names_python_and_the_dependencies() -> None:
    out = CliRunner().invoke(main, ["--version"]).output
    first, second = out.splitlines()[:2]
    assert first.startswith("pplx-export ")
    for name in ("Python", "click", "httpx", "rich", "tomlkit", "browser-cookie3"):
        assert name in second


def test_help_epilog_names_the_config_and_the_archive(tmp_path: Path) -> None:
    # Deep enough that click would wrap it at a hyphen (seen under pytest-xdist's tmp paths).
    deep = tmp_path / "a-long-folder-name-with-hyphens" / "and-another-one-just-as-long"
    deep.mkdir(parents=True)
    path = deep / "c.toml"
    path.write_text('archive_root = "arch"\n')
    runner = CliRunner()
    for argv in (["--help"], ["status", "--help"], ["batch", "--help"]):
        out = runner.invoke(main, argv, env={"PPLX_EXPORT_CONFIG": str(path)}).output
        assert f"Config: {path}" in out
        assert f"Archive: {deep / 'arch'}" in out
    out = runner.invoke(main, ["--help"], env={"PPLX_EXPORT_CONFIG": None}).output
    assert "(not found: degraded mode)" in out
    assert "Archive: ./web_archive (relative to the current directory)" in out


def test_config_example_first_line_points_at_something_real() -> None:
    text = (Path(__file__).resolve().parent.parent / "config.example.toml").read_text()
    first_line, header = text.splitlines()[0], text.split("\n\n")[0]
    # It points at `pplx-export init` (a command that exists) and at the `--help` epilog,
    # which prints the config path.
    assert "`pplx-export init`" in first_line
    assert CliRunner().invoke(main, ["init", "--help"]).exit_code == 0
    assert '"Config:"' in header and "`pplx-export --help`" in header
    assert "Config: " in CliRunner().invoke(main, ["--help"]).output


def test_log_file_is_owner_only(tmp_path: Path) -> None:
    log_file = tmp_path / "logs" / "run.log"
    setup_logging(log_file=log_file)
    try:
        logging.getLogger("pplx_export.test").info("a thread title")
    finally:
        setup_logging()
    assert stat.S_IMODE(log_file.stat().st_mode) == 0o600


@pytest.mark.parametrize("xdg", [None, "", "  ", "/somewhere/else"])
def test_default_path_agrees_with_platformdirs(
    xdg: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import platformdirs

    if xdg is None:
        monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CONFIG_HOME", xdg)
    expected = Path(platformdirs.user_config_dir("pplx-export")) / "config.toml"
    assert default_config_path() == expected


def test_an_unknown_key_is_a_warning_naming_the_nearest_known_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        'archive_roots = "/x"\n[netwrok]\nmin_interval = 0\n[network]\nmin_intervall = 0\n'
        '[accounts.alice]\nemial = "a@b.c"\n[bot_space]\nfrobnicate = 1\n',
        encoding="utf-8",
    )
    with caplog.at_level(logging.WARNING, logger="pplx_export.config"):
        cfg = load_config(path)
    lines = [r.getMessage() for r in caplog.records]
    assert f"{path}: unknown setting archive_roots, ignored (did you mean 'archive_root'?)" in lines
    assert f"{path}: unknown setting [netwrok], ignored (did you mean 'network'?)" in lines
    assert any("[network] min_intervall" in ln and "'min_interval'" in ln for ln in lines)
    assert any("[accounts.alice] emial" in ln and "'email'" in ln for ln in lines)
    assert any(ln.endswith("[bot_space] frobnicate, ignored") for ln in lines)
    assert len(lines) == 5
    assert cfg.archive_root == ""  # still ignored: the value is not guessed


def test_the_example_config_has_no_unknown_key(caplog: pytest.LogCaptureFixture) -> None:
    example = Path(__file__).resolve().parent.parent / "config.example.toml"
    with caplog.at_level(logging.WARNING, logger="pplx_export.config"):
        load_config(example)
    assert caplog.records == []
