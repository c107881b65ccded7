"""The shared options (product.md §4), declared once, and the group that maps errors to exits."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from pplx_export.config import load_config
from pplx_export.context import RunOptions
from pplx_export.errors import PplxError
from pplx_export.logs import setup_logging
from pplx_export.net.client import DEFAULT_BASE_URL

BROWSERS = ("chrome", "chromium", "edge", "firefox", "safari", "brave", "opera", "vivaldi")

log = logging.getLogger("pplx_export.cli")

F = TypeVar("F", bound=Callable[..., Any])


CREATES_CONFIG = "creates_config"


def creates_config(func: F) -> F:
    """Mark a command that writes the config (`init`): a missing `--config` file is fine."""
    setattr(func, CREATES_CONFIG, True)
    return func


def common_options(func: F) -> F:
    """Add the shared options to a command and hand it a resolved `RunOptions` as `opts`."""

    @click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False),
        default=None,
        help="Config file (else $PPLX_EXPORT_CONFIG, else the user config dir).",
    )
    @click.option("--account", default=None, help="Account name from the config.")
    @click.option(
        "--out",
        type=click.Path(file_okay=False),
        default=None,
        help="Archive root (else config archive_root, else ./web_archive).",
    )
    @click.option(
        "--cookies-from",
        type=click.Choice(BROWSERS),
        default=None,
        help="Read cookies from this browser.",
    )
    @click.option(
        "--cookies",
        "cookies_file",
        type=click.Path(dir_okay=False),
        default=None,
        help="Cookie file: Netscape format or JSON.",
    )
    @click.option("-v", "--verbose", count=True, help="More detail (repeatable).")
    @click.option("-q", "--quiet", is_flag=True, help="Errors only; no progress.")
    @click.option(
        "--log-file",
        is_flag=False,
        flag_value="",
        default=None,
        help="Also log at DEBUG to PATH (default <archive>/index/logs/).",
    )
    @click.option(
        "--lang",
        type=click.Choice(["en", "zh"]),
        default=None,
        help="Labels in rendered Markdown (default: config render_language, en).",
    )
    @click.option("--base-url", envvar="PPLX_BASE_URL", default=DEFAULT_BASE_URL, hidden=True)
    @functools.wraps(func)
    def wrapper(
        *args: Any,
        config_path: str | None,
        account: str | None,
        out: str | None,
        cookies_from: str | None,
        cookies_file: str | None,
        verbose: int,
        quiet: bool,
        log_file: str | None,
        lang: str | None,
        base_url: str,
        **kwargs: Any,
    ) -> Any:
        cfg = load_config(config_path, missing_ok=getattr(func, CREATES_CONFIG, False))
        root = cfg.archive_dir(out)
        log_path: Path | None = None
        if log_file is not None:
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
            log_path = Path(log_file) if log_file else root / "index" / "logs" / f"{stamp}.log"
        setup_logging(verbose, quiet, log_path)
        if cookies_from and cookies_file:
            raise click.UsageError("--cookies-from and --cookies are mutually exclusive")
        opts = RunOptions(
            config=cfg,
            account=cfg.account(account),
            out=root,
            lang=cfg.language(lang),
            base_url=base_url.rstrip("/"),
            cookies_from=cookies_from,
            cookies_file=Path(cookies_file) if cookies_file else None,
            verbose=verbose,
            quiet=quiet,
        )
        return func(*args, opts=opts, **kwargs)

    return wrapper  # type: ignore[return-value]


class PplxGroup(click.Group):
    """A click group that turns our exception tree into exit codes, once, at the edge."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PplxError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(130)
        return None
