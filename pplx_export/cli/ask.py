"""`pplx-ask`: start new threads (and follow-ups) from the terminal and archive them."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from pplx_export.cli.options import (
    PplxGroup,
    common_options,
    group_settings,
    json_option,
    render_options,
    run_console,
    version_option,
)
from pplx_export.cli.output import emit_json, print_lines
from pplx_export.perplexity.constants import ASK_MODES, ASK_TIMEOUT

if TYPE_CHECKING:
    from pplx_export.context import RunOptions


@click.group(cls=PplxGroup, context_settings=group_settings())
@version_option("pplx-ask")
def main() -> None:
    """Ask Perplexity from the terminal; finished threads land in the archive."""


def _print_answer(text: str) -> None:
    """The answer on stdout: rendered Markdown on a terminal, the Markdown source otherwise."""
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.markdown import Markdown

        Console().print(Markdown(text))
    else:
        sys.stdout.write(text.rstrip("\n") + "\n")
        sys.stdout.flush()


@main.command(short_help="Ask; watch the answer live; archive the thread when done.")
@click.argument("prompt")
@click.option(
    "--mode",
    type=click.Choice(ASK_MODES),
    default=None,
    help="Default: search (a follow-up: the thread's own mode).",
)
@click.option(
    "--models",
    default="",
    metavar="IDS",
    help="Comma-separated model ids: one for search, 2-3 for council "
    "(default: config [models], else the pinned pool).",
)
@click.option("--space", default="", metavar="SLUG", help="Create the thread in this space.")
@click.option(
    "--follow-up",
    "follow_up",
    default="",
    metavar="THREAD",
    help="Add a turn to this thread (URL or UUID) instead of starting one.",
)
@click.option("--no-export", is_flag=True, help="Do not archive the thread when it completes.")
@click.option("--mark-read", is_flag=True, help="Mark the thread read when it completes.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    metavar="S",
    default=ASK_TIMEOUT,
    show_default=True,
    help="Give up after this many seconds without any news from the stream.",
)
@json_option
@render_options
def ask(
    opts: RunOptions,
    prompt: str,
    mode: str | None,
    models: str,
    space: str,
    follow_up: str,
    no_export: bool,
    mark_read: bool,
    timeout: float,
    as_json: bool,
) -> None:
    """Ask PROMPT (- reads it from stdin); watch the answer live; archive it when done.

    The answer goes to stdout; progress to stderr. On completion the thread moves into the
    configured BOT space (unless --space), is marked read with --mark-read, and is archived.
    """
    from pplx_export.sync.ask import AskRequest, read_prompt, run_ask

    request = AskRequest(
        prompt=read_prompt(prompt, sys.stdin.read),
        mode=mode,
        models=tuple(m.strip() for m in models.split(",") if m.strip()),
        space=space.strip(),
        follow_up=follow_up.strip(),
        export=not no_export,
        mark_read=mark_read,
        timeout=timeout,
    )
    result = run_ask(opts, request)
    if as_json:
        emit_json(result.to_json())
    elif result.answer and result.ok:
        _print_answer(result.answer)
    if result.error is not None:
        raise result.error


@main.command("mark-read", short_help="Mark a thread read.")
@click.argument("thread")
@json_option
@common_options
def mark_read(opts: RunOptions, thread: str, as_json: bool) -> None:
    """Mark THREAD (URL or UUID) read (mark_viewed by its context UUID)."""
    from pplx_export.sync.ask_actions import run_mark_read

    result = run_mark_read(opts, thread)
    if as_json:
        emit_json(result.to_json())
    elif not opts.quiet:
        click.echo(result.line(), err=True)


@main.command("space-create")
@click.argument("title")
@click.option("--description", default="", help="The space's description.")
@json_option
@common_options
def space_create(opts: RunOptions, title: str, description: str, as_json: bool) -> None:
    """Create a space named TITLE; print its uuid, slug and URL."""
    from pplx_export.sync.ask_actions import run_space_create

    result = run_space_create(opts, title, description=description)
    if as_json:
        emit_json(result.to_json())
    else:
        print_lines(result.lines())


@main.command()
@click.option("--refresh", is_flag=True, help="Fetch it, cache it next to the config, stamp it.")
@json_option
@common_options
def models(opts: RunOptions, refresh: bool, as_json: bool) -> None:
    """The model catalog: per-mode defaults, council pool, model families."""
    from pplx_export.sync.models import catalog_lines, run_models

    catalog = run_models(opts, refresh=refresh)
    if as_json:
        emit_json(catalog.to_json())
    else:
        print_lines(catalog_lines(catalog))


def run() -> None:
    """The `pplx-ask` console script."""
    run_console(main, "pplx-ask")
