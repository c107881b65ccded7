"""The shared options (product.md §4), declared once, and the group that maps errors to exits.

Every command gets its options from `shared_options(...)` (or the two presets below), so a
new command inherits the conventions for free: `--config/--account/--out`, the cookie
sources (`--cookies-from-browser BROWSER[+KEYRING][:PROFILE]`, alias `--cookies-from`;
`--cookies FILE`), `-v/-q`, `--no-progress`, `--log-file`, `--lang`, `--flavor` (commands
that write rendered Markdown); the one-line notice of
degraded mode; the `-v` debug header; the check that the archive is writable before any
request; and `--json` through `json_option`. A command lists only the options it uses:
offline commands have no cookie options, commands that do not pick an account have no
`--account`.

Start-up matters (`pplx-export --help` runs often): this module and `cli/export.py` import
click and nothing heavy at module level; each command imports its work when it runs.

Long because the conventions every command inherits are one unit: the option decorators,
their resolution into `RunOptions`, the version and debug header and the group that maps
exceptions and signals to exit codes are used together by every command, and one cheap
module keeps `--help` start-up to one import.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from pplx_export.site.browsers import BROWSERS

if TYPE_CHECKING:
    from pplx_export.config import Account, Config
    from pplx_export.context import RunOptions

BROWSER_SPEC = "BROWSER[+KEYRING][:PROFILE]"
EXIT_SIGTERM = 128 + 15

LOGGER = "pplx_export.cli"

F = TypeVar("F", bound=Callable[..., Any])


CREATES_CONFIG = "creates_config"


def creates_config(func: F) -> F:
    """Mark a command that writes the config (`init`): a missing `--config` file is fine."""
    setattr(func, CREATES_CONFIG, True)
    return func


# ------------------------------------------------------------------ option groups


def json_option(func: F) -> F:
    """`--json`: the command's report as one JSON document on stdout (as `as_json`)."""
    return click.option(
        "--json", "as_json", is_flag=True, help="Report as one JSON document on stdout."
    )(func)


Decorator = Callable[[Any], Any]


def _unset(*decls: str, help: str, **attrs: Any) -> Decorator:
    """An option that defaults to None: unset, the config (or the built-in default) decides."""
    return click.option(*decls, default=None, help=help, **attrs)


def limit_option(help: str) -> Decorator:
    """`--limit N` (N >= 0; unset: no limit), `help` saying N of what."""
    return click.option("--limit", type=click.IntRange(min=0), default=None, help=help)


# The option groups, in the order `--help` lists them; `shared_options` picks by name.
_GROUPS: dict[str, list[Decorator]] = {
    "config": [
        _unset(
            "--config",
            "config_path",
            type=click.Path(dir_okay=False),
            help="Config file (else $PPLX_EXPORT_CONFIG, else the user config dir).",
        )
    ],
    "account": [_unset("--account", help="Account name from the config.")],
    "out": [
        _unset(
            "--out",
            type=click.Path(file_okay=False),
            help="Archive root (else config archive_root, else ./web_archive).",
        )
    ],
    "cookies": [
        _unset(
            "--cookies-from-browser",
            "--cookies-from",
            "cookies_from",
            metavar=BROWSER_SPEC,
            help=(
                f"Read cookies from this browser ({', '.join(BROWSERS)}); "
                "+KEYRING (basictext, gnomekeyring, kwallet) and :PROFILE (name or path) "
                "are optional."
            ),
        ),
        _unset(
            "--cookies",
            "cookies_file",
            type=click.Path(dir_okay=False),
            help="Cookie file: Netscape format or JSON.",
        ),
        click.option("--base-url", envvar="PPLX_BASE_URL", default=None, hidden=True),
    ],
    "output": [
        click.option("-v", "--verbose", count=True, help="More detail (repeatable)."),
        click.option("-q", "--quiet", is_flag=True, help="Errors only; no progress."),
        click.option("--no-progress", is_flag=True, help="No progress bar or progress lines."),
        _unset(
            "--log-file",
            is_flag=False,
            flag_value="",
            help="Also log at DEBUG to PATH (default <archive>/index/logs/), owner-only.",
        ),
    ],
    "lang": [
        _unset(
            "--lang",
            type=click.Choice(["en", "zh"]),
            help="Labels in rendered Markdown (default: config render_language, en).",
        )
    ],
    "flavor": [
        _unset(
            "--flavor",
            type=click.Choice(["github", "obsidian"]),
            help="Markdown for GitHub (HTML folds) or Obsidian (callouts, wikilinks); "
            "default: config render_flavor, github.",
        )
    ],
}


def shared_options(
    *,
    network: bool = True,
    account: bool | None = None,
    config: bool = True,
    lang: bool = True,
    flavor: bool = False,
    out: bool = True,
    writes: bool = True,
    online_when: str | None = None,
    every_account: bool = False,
    writes_when: str | None = None,
) -> Callable[[F], F]:
    """The shared options a command uses, resolved into a `RunOptions` passed as `opts`.

    `network`: the command signs in (cookie options, the hidden `--base-url`).
    `account`: it works for one account (default: as `network`).
    `config`: it reads the config file. `lang`: it renders Markdown. `flavor`: it writes
    rendered Markdown into the archive (`--flavor`). `out`: it works on
    the archive (`--out`); a command with a directory of its own declares it itself.
    `writes`: it writes into the archive, so the archive root is checked writable before
    anything else happens (skipped for a `--dry-run`). `writes_when`: the parameter of the
    flag without which the command only reads (`verify --fix`, `search --rebuild`): a
    read-only archive (a backup, a snapshot) is fine without it.
    `online_when`: the parameter of the flag without which the command makes no request
    (`spaces --fetch-meta`): without it, no account is required and a missing config gets
    the short notice of the offline commands.
    `every_account`: without `--account` the command walks every configured account
    (commands/export/every_account.py), so a config with several and no default is no error.
    """
    with_account = network if account is None else account
    wanted = {
        "config": config,
        "account": with_account,
        "out": out,
        "cookies": network,
        "output": True,
        "lang": lang,
        "flavor": flavor,
    }
    groups = [option for name, options in _GROUPS.items() if wanted[name] for option in options]

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            shared = {
                key: kwargs.pop(key, None)
                for key in (
                    "config_path",
                    "account",
                    "out",
                    "cookies_from",
                    "cookies_file",
                    "base_url",
                    "verbose",
                    "quiet",
                    "no_progress",
                    "log_file",
                    "lang",
                    "flavor",
                )
            }
            opts = resolve_run_options(
                **shared,
                check_writable=writes
                and not kwargs.get("dry_run")
                and (writes_when is None or bool(kwargs.get(writes_when))),
                announce_degraded=config and not getattr(func, CREATES_CONFIG, False),
                uses_account=with_account
                and (online_when is None or bool(kwargs.get(online_when))),
                config_missing_ok=getattr(func, CREATES_CONFIG, False),
                every_account=every_account,
            )
            return func(*args, opts=opts, **kwargs)

        command: Any = wrapper
        for option in reversed(groups):
            command = option(command)
        return command  # type: ignore[no-any-return]

    return decorate


# Online commands (sign in, one account) and offline ones (read or rebuild the archive);
# the `render_` ones write rendered Markdown (`--flavor`).
common_options = shared_options()
offline_options = shared_options(network=False)
render_options = shared_options(flavor=True)
# `sync`, `batch`, `index`: every configured account unless `--account` narrows.
every_account_options = shared_options(every_account=True)
every_account_render_options = shared_options(flavor=True, every_account=True)
offline_render_options = shared_options(network=False, flavor=True)


def resolve_run_options(
    *,
    config_path: str | None = None,
    account: str | None = None,
    out: str | None = None,
    cookies_from: str | None = None,
    cookies_file: str | None = None,
    base_url: str | None = None,
    verbose: int | None = 0,
    quiet: bool | None = False,
    no_progress: bool | None = False,
    log_file: str | None = None,
    lang: str | None = None,
    flavor: str | None = None,
    check_writable: bool = False,
    announce_degraded: bool = True,
    uses_account: bool = True,
    config_missing_ok: bool = False,
    every_account: bool = False,
) -> RunOptions:
    """Flags -> config -> logging -> the run context; the notices every command shares."""
    from datetime import UTC, datetime

    from pplx_export.archive.root import ensure_writable
    from pplx_export.config import load_config
    from pplx_export.context import RunOptions
    from pplx_export.logs import rotate_log, setup_logging
    from pplx_export.site.browsers import parse_browser_spec

    verbose = verbose or 0
    quiet = bool(quiet)
    cfg = load_config(config_path, missing_ok=config_missing_ok)
    root = cfg.archive_dir(out)
    log_path: Path | None = None
    if log_file is not None:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        log_path = Path(log_file) if log_file else root / "index" / "logs" / f"{stamp}.log"
    if check_writable:
        ensure_writable(root)
    if log_path is not None:
        rotate_log(log_path)
    setup_logging(verbose, quiet, log_path)
    log = _log()
    if cookies_from and cookies_file:
        raise click.UsageError("--cookies-from-browser and --cookies are mutually exclusive")
    if cookies_from:
        try:
            parse_browser_spec(cookies_from)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--cookies-from-browser") from None
    opts = RunOptions(
        config=cfg,
        account=_account(cfg, account, uses_account, every_account),
        out=root,
        lang=cfg.language(lang),
        flavor=cfg.flavor(flavor),
        cookies_from=cookies_from,
        cookies_file=Path(cookies_file).absolute() if cookies_file else None,
        verbose=verbose,
        quiet=quiet,
        progress=not no_progress,
        account_given=account is not None,
        log_file=log_path,
    )
    if base_url:
        opts.base_url = base_url.rstrip("/")
    if verbose or log_path is not None:
        # A log file always starts with the header: a bug report needs the versions.
        for line in debug_header(opts):
            log.debug("%s", line)
    if cfg.degraded and announce_degraded:
        if uses_account:
            log.warning(
                "no config file at %s: degraded mode (account %r; whose session the cookies "
                "hold is not checked)",
                cfg.path,
                opts.account.name,
            )
        else:  # an offline command: no session to check, so the short form
            log.warning("no config file at %s: degraded mode", cfg.path)
    return opts


def _account(
    cfg: Config, name: str | None, uses_account: bool, every_account: bool = False
) -> Account:
    """The account a command works for. A command without `--account` (status, re-render)
    works on every account: a config it could not pick one from is no error there; one
    that walks every account starts with the first."""
    from pplx_export.config import Account
    from pplx_export.errors import ConfigError

    try:
        return cfg.account(name)
    except ConfigError:
        if every_account and name is None and cfg.accounts:
            return next(iter(cfg.accounts.values()))
        if uses_account:
            raise
        return Account(name="", display_name="")


# ------------------------------------------------------------------ where things are


def versions() -> list[tuple[str, str]]:
    """(name, version) of the tool, Python and the dependencies that shape its behaviour."""
    import platform
    from importlib import metadata

    from pplx_export import __version__

    out = [("pplx-export", __version__), ("Python", platform.python_version())]
    for dist in ("click", "httpx", "rich", "tomlkit", "browser-cookie3", "platformdirs"):
        try:
            out.append((dist, metadata.version(dist)))
        except metadata.PackageNotFoundError:
            out.append((dist, "missing"))
    return out


def version_text(prog: str) -> str:
    parts = versions()
    head = f"{prog} {parts[0][1]}"
    return head + "\n" + ", ".join(f"{name} {ver}" for name, ver in parts[1:])


def debug_header(opts: RunOptions) -> list[str]:
    """The `-v` header, as yt-dlp prints one: what runs, where, with which inputs."""
    import platform

    cfg = opts.config
    if opts.cookies_from:
        cookies = f"browser {opts.cookies_from}"
    elif opts.cookies_file:
        cookies = f"file {opts.cookies_file}"
    else:
        cookies = "cache, then installed browsers"
    return [
        ", ".join(f"{name} {ver}" for name, ver in versions()),
        f"OS {platform.platform()}",
        f"config {cfg.path}" + ("" if cfg.exists else " (not found: degraded mode)"),
        f"archive root {opts.out}",
        f"account {opts.account.name or '(all)'}, cookies from {cookies}",
    ]


def where_text() -> str:
    """The help epilog: the config file and archive root a bare command would use.

    Light on purpose (runs for every `--help`): the stdlib TOML reader, not the config
    loader, and no validation; a broken config is reported when a command runs.
    """
    try:
        from pplx_export.config import peek_locations

        config, exists, root = peek_locations()
    except Exception as exc:  # help must always print
        return f"Config: unreadable ({type(exc).__name__})"
    state = "" if exists else " (not found: degraded mode)"
    where = " (relative to the current directory)" if not os.path.isabs(root) else ""
    return f"Config: {config}{state}\n\nArchive: {root}{where}"


class PplxCommand(click.Command):
    """A command whose help ends with where the config and the archive are."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_epilog(ctx, formatter)
        _where_epilog(formatter)


def _where_epilog(formatter: click.HelpFormatter) -> None:
    formatter.write_paragraph()
    with formatter.indentation():
        indent = " " * formatter.current_indent
        for line in where_text().split("\n\n"):
            # Whole, not wrapped to the terminal: a path cut at its hyphen cannot be pasted.
            formatter.write(f"{indent}{line}\n")


# ------------------------------------------------------------------ the group


class Terminated(KeyboardInterrupt):
    """SIGTERM, delivered as Ctrl-C so every run saves its state the same way."""


_terminated: list[bool] = []


def _on_sigterm(signum: int, frame: object) -> None:
    if os.getpid() != _main_pid[0]:
        # A forked worker (re-render's pool) ends the default way; the parent reports.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return
    _terminated.append(True)
    raise Terminated


_main_pid = [0]


def install_sigterm_handler() -> None:
    """Handle SIGTERM like Ctrl-C (state saved, a message), exiting 143 instead of 130."""
    if sys.platform == "win32":  # pragma: no cover
        return
    _main_pid[0] = os.getpid()
    _terminated.clear()
    signal.signal(signal.SIGTERM, _on_sigterm)


class PplxGroup(click.Group):
    """A click group that turns our exception tree into exit codes, once, at the edge.

    No traceback reaches a user: an OS error is one `error:` line naming what failed and
    where (exit 1), anything unexpected too; `-v` adds the traceback through the log.
    """

    command_class = PplxCommand
    # True only in the console scripts (`run_console`), not when tests drive the group
    # in-process: there, once the command is over, Ctrl-C and SIGTERM are ignored, so a run
    # that has finished cannot die by a signal (exit -2) while the interpreter shuts down.
    console_script = False

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_epilog(ctx, formatter)
        _where_epilog(formatter)

    def invoke(self, ctx: click.Context) -> Any:
        from pplx_export.errors import Interrupted, PplxError

        install_sigterm_handler()
        try:
            return super().invoke(ctx)
        except (Interrupted, KeyboardInterrupt) as exc:
            text = str(exc) if isinstance(exc, Interrupted) else ""
            if _terminated:
                click.echo(f"terminated (SIGTERM){'; ' + _tail(text) if text else ''}", err=True)
                ctx.exit(EXIT_SIGTERM)
            click.echo(text or "interrupted", err=True)
            ctx.exit(130)
        except PplxError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except OSError as exc:
            _log().debug("traceback", exc_info=True)
            click.echo(f"error: {_os_error_text(exc)}", err=True)
            ctx.exit(1)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:
            _log().debug("traceback", exc_info=True)
            if isinstance(exc.__context__, KeyboardInterrupt):
                # A Ctrl-C that broke a lock's release on its way out (CPython turns it into
                # "RuntimeError: release unlocked lock"): still the user's Ctrl-C.
                click.echo("interrupted", err=True)
                ctx.exit(130)
            if _sqlite_full(exc):
                # SQLite says "database or disk is full": the disk-full line, as for a file.
                from pplx_export.errors import DiskFull

                click.echo(f"error: {DiskFull('the search index')}", err=True)
                ctx.exit(1)
            click.echo(
                f"error: internal error: {type(exc).__name__}: {exc} (run with -v for details)",
                err=True,
            )
            ctx.exit(1)
        finally:
            if self.console_script:
                _ignore_late_signals()
        return None


def _ignore_late_signals() -> None:
    """The exit status is decided: a signal from here on must not replace it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform != "win32":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


def run_console(group: click.Group, prog_name: str) -> None:
    """The console scripts' entry (`pplx-export`, `pplx-ask`, `python -m pplx_export`)."""
    if isinstance(group, PplxGroup):
        group.console_script = True
    group(prog_name=prog_name)


def _log() -> Any:
    import logging  # not at module level: `--help` never logs

    return logging.getLogger(LOGGER)


def _tail(text: str) -> str:
    """`interrupted; state saved, ...` -> `state saved, ...` (the head is said already)."""
    head, sep, rest = text.partition("; ")
    return rest if sep and head == "interrupted" else text


# SQLITE_FULL: the extended codes keep it in the low byte.
_SQLITE_FULL = 13


def _sqlite_full(exc: BaseException) -> bool:
    """An sqlite3 error that means the disk (or quota) is full."""
    if type(exc).__module__ != "sqlite3":
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    return (isinstance(code, int) and code & 0xFF == _SQLITE_FULL) or "disk is full" in str(exc)


def _os_error_text(exc: OSError) -> str:
    reason = exc.strerror or str(exc) or type(exc).__name__
    where = exc.filename
    if where is None:
        return reason
    target = f" -> {exc.filename2}" if exc.filename2 else ""
    return f"{reason}: {os.fspath(where)}{target}"


def version_option(prog: str) -> Callable[[F], F]:
    """`--version`: the tool's, Python's and the key dependencies' versions."""

    def show(ctx: click.Context, param: click.Parameter, value: bool) -> None:
        if not value or ctx.resilient_parsing:
            return
        click.echo(version_text(prog))
        ctx.exit(0)

    return click.option(
        "--version",
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=show,
        help="Show the version (and Python's and the dependencies') and exit.",
    )


def group_settings() -> dict[str, Any]:
    return {"help_option_names": ["-h", "--help"]}
