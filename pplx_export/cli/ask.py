"""`pplx-ask`: start new threads (and follow-ups) from the terminal and archive them."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

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
from pplx_export.cli.output import emit_json, print_lines, show_report
from pplx_export.site.constants import ASK_MODES, ASK_POLL_FOR, ASK_TIMEOUT

if TYPE_CHECKING:
    from pplx_export.commands.ask.run import AskRequest
    from pplx_export.context import RunOptions
    from pplx_export.site.api import PerplexityAPI

F = TypeVar("F", bound=Callable[..., Any])


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


@dataclass(frozen=True)
class _AskArgs:
    """The values of the options `ask` and `chat` share, passed to them as `shared`."""

    mode: str | None
    models: str
    space: str
    follow_up: str
    continue_: bool
    no_export: bool
    mark_read: bool
    timeout: float
    poll_for: float

    def target(self, opts: RunOptions) -> str:
        """The thread to follow up (--follow-up, or -c: the last one asked); "" for none."""
        from pplx_export.commands.ask.run import last_thread
        from pplx_export.errors import UsageError

        if self.continue_ and self.follow_up.strip():
            raise UsageError("-c/--continue and --follow-up both name a thread; give one")
        return (
            last_thread(opts.out, opts.account.name) if self.continue_ else self.follow_up.strip()
        )

    def request(self, prompt: str, *, follow_up: str, mode: str | None, space: str) -> AskRequest:
        """One turn's request: PROMPT with these options."""
        from pplx_export.commands.ask.run import AskRequest

        return AskRequest(
            prompt=prompt,
            mode=mode,
            models=tuple(m.strip() for m in self.models.split(",") if m.strip()),
            space=space,
            follow_up=follow_up,
            export=not self.no_export,
            mark_read=self.mark_read,
            timeout=self.timeout,
            poll_for=self.poll_for,
        )


def _ask_options(func: F) -> F:
    """The options `ask` and `chat` share (declared once), passed as `shared: _AskArgs`."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        shared = _AskArgs(**{name: kwargs.pop(name) for name in _AskArgs.__dataclass_fields__})
        return func(*args, shared=shared, **kwargs)

    command: Any = wrapper
    for option in reversed(
        (
            click.option(
                "--mode",
                type=click.Choice(ASK_MODES),
                default=None,
                help="Default: search (a follow-up: the thread's own mode).",
            ),
            click.option(
                "--models",
                default="",
                metavar="IDS",
                help="Comma-separated model ids, checked against the model catalog: one for "
                "search, 2-3 for council (default: config [models], else the pinned pool).",
            ),
            click.option(
                "--space", default="", metavar="SLUG", help="Create the thread in this space."
            ),
            click.option(
                "--follow-up",
                "follow_up",
                default="",
                metavar="THREAD",
                help="Add a turn to this thread (URL or UUID) instead of starting one.",
            ),
            click.option(
                "-c",
                "--continue",
                "continue_",
                is_flag=True,
                help="Follow up the last thread asked from this archive.",
            ),
            click.option(
                "--no-export", is_flag=True, help="Do not archive the thread when it completes."
            ),
            click.option(
                "--mark-read", is_flag=True, help="Mark the thread read when it completes."
            ),
            click.option(
                "--timeout",
                type=click.FloatRange(min=1),
                metavar="S",
                default=ASK_TIMEOUT,
                show_default=True,
                help="Stop reading a stream silent for this many seconds (then poll the thread).",
            ),
            click.option(
                "--poll-for",
                "poll_for",
                type=click.FloatRange(min=0),
                metavar="S",
                default=ASK_POLL_FOR,
                show_default=True,
                help="How long to poll a thread whose stream broke, stalled or ended unfinished.",
            ),
        )
    ):
        command = option(command)
    return command  # type: ignore[no-any-return]


def _remember(opts: RunOptions) -> Callable[[str], None]:
    from pplx_export.commands.ask.run import remember_thread

    return lambda uuid: remember_thread(opts.out, opts.account.name, uuid)


def _prompt_of(prompt: str | None) -> str:
    """PROMPT; `-` or no PROMPT with piped stdin reads stdin; no PROMPT on a terminal opens
    $EDITOR (like `git commit`)."""
    from pplx_export.commands.ask.run import EDITOR_TEMPLATE, prompt_from_editor, read_prompt
    from pplx_export.errors import UsageError

    if prompt is None:
        if sys.stdin.isatty():
            try:
                text = click.edit(EDITOR_TEMPLATE, extension=".md")
            except click.ClickException as exc:
                raise UsageError(f"{exc.message}; set $EDITOR, or give PROMPT") from None
            return prompt_from_editor(text)
        return sys.stdin.read()
    return read_prompt(prompt, sys.stdin.read)


@main.command(short_help="Ask; watch the answer live; archive the thread when done.")
@click.argument("prompt", required=False)
@_ask_options
@json_option
@render_options
def ask(opts: RunOptions, prompt: str | None, shared: _AskArgs, as_json: bool) -> None:
    """Ask PROMPT (- reads it from stdin; none: $EDITOR on a terminal, else stdin); watch the
    answer live; archive it when done.

    The answer goes to stdout; progress to stderr. On completion the thread moves into the
    configured BOT space (unless --space), is marked read with --mark-read, and is archived.
    A stream that breaks or stalls once the thread exists turns into polling the thread.
    """
    from pplx_export.commands.ask.run import run_ask

    text = _prompt_of(prompt)  # $EDITOR opens before the follow-up options are checked
    request = shared.request(
        text, follow_up=shared.target(opts), mode=shared.mode, space=shared.space.strip()
    )
    result = run_ask(opts, request, on_thread=_remember(opts))
    if as_json:
        emit_json(result.to_json())
    elif result.answer and result.ok:
        _print_answer(result.answer)
    if result.error is not None:
        raise result.error


CHAT_PROMPT = "you› "


def _read_turn() -> str | None:
    """The next question: one line (a terminal shows a prompt on stderr); None at EOF."""
    if sys.stdin.isatty():
        click.echo(CHAT_PROMPT, err=True, nl=False)
    line = sys.stdin.readline()
    return None if line == "" else line.strip()


@main.command(short_help="Ask follow-ups in one thread, turn by turn, until Ctrl-D.")
@_ask_options
@render_options
def chat(opts: RunOptions, shared: _AskArgs) -> None:
    """An interactive loop in one thread: each line is a question (the first starts the
    thread, or continues --follow-up / -c), each answer is shown and archived as it
    completes. Ctrl-D (end of input) ends the chat; Ctrl-C leaves the thread running.
    """

    from pplx_export.site.session import open_session

    thread = shared.target(opts)
    with open_session(opts) as api:  # signed in once for the whole chat
        _chat_loop(opts, api, thread, shared)
    if sys.stdin.isatty():
        click.echo("", err=True)


def _chat_loop(opts: RunOptions, api: PerplexityAPI, thread: str, shared: _AskArgs) -> None:
    from pplx_export.commands.ask.run import run_ask

    remember = _remember(opts)
    turns = 0
    while True:
        prompt = _read_turn()
        if prompt is None:
            break
        if not prompt:
            continue
        request = shared.request(
            prompt,
            follow_up=thread,
            mode=None if turns else shared.mode,  # later turns: the thread's own mode
            space=shared.space.strip() if not thread else "",
        )
        result = run_ask(opts, request, api=api, on_thread=remember)
        if result.answer and result.ok:
            _print_answer(result.answer)
        if result.error is not None:
            raise result.error
        turns += 1
        thread = result.thread_uuid or thread
        if sys.stdin.isatty():
            click.echo(f"({turns} turn{'s' if turns > 1 else ''}; Ctrl-D ends)", err=True)


@main.command("mark-read", short_help="Mark a thread read.")
@click.argument("thread")
@json_option
@common_options
def mark_read(opts: RunOptions, thread: str, as_json: bool) -> None:
    """Mark THREAD (URL or UUID) read (mark_viewed by its context UUID)."""
    from pplx_export.commands.ask.actions import run_mark_read

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
    from pplx_export.commands.ask.actions import run_space_create

    result = run_space_create(opts, title, description=description)
    show_report(result, as_json=as_json)


@main.command()
@click.option("--refresh", is_flag=True, help="Fetch it, cache it next to the config, stamp it.")
@json_option
@common_options
def models(opts: RunOptions, refresh: bool, as_json: bool) -> None:
    """The model catalog: per-mode defaults, council pool, model families."""
    from pplx_export.commands.ask.catalog import catalog_lines, run_models

    catalog = run_models(opts, refresh=refresh)
    if as_json:
        emit_json(catalog.to_json())
    else:
        print_lines(catalog_lines(catalog))


def run() -> None:
    """The `pplx-ask` console script."""
    run_console(main, "pplx-ask")
