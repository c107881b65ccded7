"""`pplx-export`: the archiver's command group. Commands are thin; the work lives in commands/.

Imports stay lazy (inside each command): `pplx-export --help` must not pay for the
network stack, rich or the TOML round-trip library (see `cli/options.py`).

Long because it is one click group: each `pplx-export` command is declared here, a few lines
of options and a lazy import each, so the command list reads as one file; the search, verify
and import commands (cli/find.py, cli/importing.py) and spaces and relations (cli/spaces.py)
are apart.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pplx_export.cli.find import search, verify
from pplx_export.cli.importing import import_export
from pplx_export.cli.options import (
    PplxGroup,
    common_options,
    creates_config,
    every_account_options,
    every_account_render_options,
    group_settings,
    json_option,
    limit_option,
    offline_render_options,
    render_options,
    run_console,
    shared_options,
    version_option,
)
from pplx_export.cli.output import emit_json, print_lines, report_result, report_run, show_report
from pplx_export.cli.spaces import register as register_space_commands

if TYPE_CHECKING:
    from pplx_export.commands.export.batch import BatchSummary
    from pplx_export.commands.export.every_account import SyncOutcome
    from pplx_export.commands.export.plan import Plan
    from pplx_export.context import RunOptions

# Kept here (not imported from models) so `--help` need not import the data model.
MODES = ("search", "deep-research", "computer", "council", "study")


@click.group(cls=PplxGroup, context_settings=group_settings())
@version_option("pplx-export")
def main() -> None:
    """Archive your Perplexity library as Markdown + raw JSON, and keep it in sync."""


main.add_command(search)  # cli/find.py
main.add_command(verify)
main.add_command(import_export)  # cli/importing.py


def write_responses_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """`--write-responses DIR` (debug): the run's redacted request/response pairs."""
    return click.option(
        "--write-responses",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        metavar="DIR",
        help="Debug: keep every request/response of the run in DIR, redacted as by `capture`.",
    )(func)


@main.command()
@click.option(
    "--check",
    is_flag=True,
    help="Exit 1 when an account's last successful sync is older than the schedule allows.",
)
@json_option
@shared_options(network=False, account=False, lang=False, writes=False)
def status(opts: RunOptions, check: bool, as_json: bool) -> None:
    """Zero network: index age, state counts, what the next batch would do, errors.

    -v lists the next batch, -vv adds error titles and done counts per mode, -vvv every thread.
    """
    from datetime import UTC, datetime

    from rich.console import Console

    from pplx_export.archive.root import require_archive
    from pplx_export.commands.inspect.status import collect_status, print_status

    require_archive(opts.out)
    doc = collect_status(opts.out, opts.config, now=datetime.now(UTC), verbose=opts.verbose)
    if as_json:
        emit_json(doc)
    else:
        print_status(doc, Console(highlight=False))
    if check and doc["stale_accounts"]:
        from pplx_export.errors import PplxError

        raise PplxError(f"not synced for too long: {', '.join(doc['stale_accounts'])}")


@main.command("re-render")
@limit_option("Only the first N threads.")
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@click.option("--changed-only", is_flag=True, help="Skip threads unchanged since the last render.")
@click.option(
    "--jobs",
    type=click.IntRange(min=0),
    default=0,
    help="Worker processes. Default 0: one per idle CPU (at most 8), 64 threads or more each.",
)
@json_option
@offline_render_options
def re_render(
    limit: int | None,
    dry_run: bool,
    changed_only: bool,
    jobs: int,
    as_json: bool,
    opts: RunOptions,
) -> None:
    """Rebuild every derived file from the raw files. Zero network.

    With --dry-run -v, each file that would be rewritten is named.
    """
    from pplx_export.commands.rerender.run import run_rerender_command

    summary = run_rerender_command(
        opts, limit=limit, dry_run=dry_run, changed_only=changed_only, jobs=jobs
    )
    if dry_run and opts.verbose and not as_json:
        print_lines(summary.file_lines())
    report_result(
        summary,
        quiet=opts.quiet,
        as_json=as_json,
        failed_what=f"of {summary.total} threads failed to re-render",
        failures=[(str(opts.out / rel), reason) for rel, reason in summary.failures],
    )


@main.command()
@click.option("--full", is_flag=True, help="Walk the whole library (sees deletions and moves).")
@json_option
@every_account_options
def index(opts: RunOptions, full: bool, as_json: bool) -> None:
    """Refresh index/library_<account>.json from the library listing (every account)."""
    from pplx_export.commands.export.every_account import run_index_accounts

    report = run_index_accounts(opts, full=full)
    if as_json:
        emit_json(report.to_json())
    elif not report.single and not opts.quiet:
        click.echo(report.total_line(), err=True)
    report.raise_for_failed_accounts()


@main.command()
@click.argument("threads", nargs=-1, required=True)
@click.option("--force", is_flag=True, help="Export even when lastUpdated is unchanged.")
@write_responses_option
@json_option
@render_options
def export(
    opts: RunOptions,
    threads: tuple[str, ...],
    force: bool,
    write_responses: Path | None,
    as_json: bool,
) -> None:
    """Export threads given as URLs or UUIDs.

    A URL is /search/<uuid>, /search/<title>-<22-character id> (threads made before
    2026: the id is the UUID, so no lookup), /computer/tasks/<uuid> or /thread/<...>,
    with or without the host.
    """
    from pplx_export.commands.export.batch import run_export

    opts.write_responses = write_responses
    result = run_export(opts, list(threads), force=force)
    _report_batch(result, as_json=as_json, quiet=opts.quiet)


@main.command()
@click.argument("threads", nargs=-1)
@click.option("--listing", is_flag=True, help="Also capture one page of the library listing.")
@click.option("--space", metavar="SLUG", default=None, help="Also capture a space's first page.")
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="The bundle: a .zip, or a new folder. Default: ./pplx-capture-<time>.zip",
)
@click.option(
    "--keep-content",
    is_flag=True,
    help="Keep the text of questions and answers (default: only its length and shape).",
)
@json_option
@shared_options(writes=False, lang=False)
def capture(
    opts: RunOptions,
    threads: tuple[str, ...],
    listing: bool,
    space: str | None,
    output: Path | None,
    keep_content: bool,
    as_json: bool,
) -> None:
    """Record what exporting THREADS sends and gets, redacted, for a bug report.

    The bundle holds every request and response in order (no cookies, tokens, e-mails,
    ids, names or URL signatures), the tool's version, what the parser made of each
    thread and its Markdown. Nothing is written to the archive.
    """
    from pplx_export.commands.inspect.capture import run_capture

    result = run_capture(
        opts,
        list(threads),
        listing=listing,
        space=space,
        output=output,
        keep_content=keep_content,
    )
    if as_json:
        emit_json(result.to_json())
    elif not opts.quiet:
        click.echo("\n".join(result.lines()), err=True)


def _report_batch(result: BatchSummary | Plan, *, as_json: bool, quiet: bool) -> None:
    """A batch's summary (or, for a dry run, its plan) on the terminal or as JSON."""
    from pplx_export.commands.export.plan import Plan

    if isinstance(result, Plan):
        show_report(result, as_json=as_json)
        return
    what = "thread(s) failed; rerun to retry them"
    report_result(result, quiet=quiet, as_json=as_json, failed_what=what)


def batch_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The batch flags, shared by `batch` (and nothing else yet)."""
    for option in reversed(
        [
            click.option("--full", is_flag=True, help="Walk every index row (no early stop)."),
            click.option("--force", is_flag=True, help="Re-export done threads too."),
            limit_option("At most N threads."),
            click.option(
                "--mode", type=click.Choice(MODES), default=None, help="Only threads of this mode."
            ),
            click.option(
                "--since",
                metavar="DATE",
                default=None,
                help="Only threads updated on/after DATE (YYYY-MM-DD or ISO).",
            ),
            click.option(
                "--until",
                metavar="DATE",
                default=None,
                help="Only threads updated on/before DATE (a date: that whole day).",
            ),
            click.option(
                "--space",
                default=None,
                metavar="SLUG",
                help="Export the threads of this space's listing (run `space-index` first), "
                "other members' threads included.",
            ),
            click.option("--dry-run", is_flag=True, help="Print the plan; fetch nothing."),
            json_option,
        ]
    ):
        func = option(func)
    return func


@main.command()
@batch_options
@write_responses_option
@every_account_render_options
def batch(
    opts: RunOptions, dry_run: bool, as_json: bool, write_responses: Path | None, **filters: Any
) -> None:
    """Export new and updated threads from the index (incremental, resumable; every account
    unless --account)."""
    from pplx_export.commands.export.batch import BatchFilters, run_batch
    from pplx_export.commands.export.every_account import plan_accounts, run_batch_accounts

    opts.write_responses = write_responses
    chosen = BatchFilters(**filters)
    if chosen.space is not None:  # one space's listing: one run, whoever's threads
        _report_batch(run_batch(opts, chosen, dry_run=dry_run), as_json=as_json, quiet=opts.quiet)
        return
    if dry_run:
        plans = plan_accounts(opts, chosen)
        if plans.single:
            _report_batch(plans.only, as_json=as_json, quiet=opts.quiet)
        else:
            show_report(plans, as_json=as_json)
        return
    outcome = run_batch_accounts(opts, lambda sub: run_batch(sub, chosen))
    _report_accounts(outcome, as_json=as_json, quiet=opts.quiet)


@main.command()
@click.option("--full", is_flag=True, help="Full index sweep and no early stop.")
@click.option(
    "--check-deleted", is_flag=True, help="Then `sync-deleted --online` (--full includes it)."
)
@click.option(
    "--refresh-spaces",
    is_flag=True,
    help="Afterwards run `spaces --fetch-meta` and `sync-space` (--full does too).",
)
@click.option(
    "--on-failure",
    metavar="CMD",
    default=None,
    help="Shell command run when sync fails; $PPLX_EXPORT_ERROR holds the error "
    "(config on_failure).",
)
@click.option(
    "--healthcheck-url",
    metavar="URL",
    default=None,
    help="Ping URL on success, URL/fail on failure (config healthcheck_url).",
)
@write_responses_option
@json_option
@every_account_render_options
def sync(
    opts: RunOptions,
    full: bool,
    check_deleted: bool,
    refresh_spaces: bool,
    on_failure: str | None,
    healthcheck_url: str | None,
    write_responses: Path | None,
    as_json: bool,
) -> None:
    """The cron command: index, then batch, for every account (then the deletion check, if
    asked). A full index sweep when the last is older than a week (full_index_days)."""
    from pplx_export.commands.export.every_account import run_sync_accounts
    from pplx_export.commands.upkeep.notify import notify_for, notifying

    opts.write_responses = write_responses
    with notifying(notify_for(opts, on_failure, healthcheck_url)):
        outcome = run_sync_accounts(
            opts, full=full, check_deleted=check_deleted, refresh_spaces=refresh_spaces
        )
        _report_accounts(outcome, as_json=as_json, quiet=opts.quiet)


def _report_accounts(outcome: SyncOutcome, *, as_json: bool, quiet: bool) -> None:
    """One account: its batch summary, as always. Several: one line each and a total; a
    failed account makes the exit code its own (AccountsFailed), else failed threads 4."""
    if outcome.accounts.single:
        _report_batch(outcome.total, as_json=as_json, quiet=quiet)
        return
    total = outcome.total
    report_run(
        "\n".join(outcome.lines()),
        total.failures,
        quiet=quiet,
        doc=outcome.to_json() if as_json else None,
    )
    outcome.raise_for_failures()


@main.command("sync-deleted")
@click.option("--online", is_flag=True, help="Confirm each candidate and tombstone it.")
@limit_option("At most N candidates.")
@json_option
@common_options
def sync_deleted(opts: RunOptions, online: bool, limit: int | None, as_json: bool) -> None:
    """Find exported threads absent from every account's index; --online confirms them.

    Confirmed deletions get state `deleted` and `remote_deleted` in thread.json; no file is
    ever deleted or moved.
    """
    from pplx_export.commands.export.deleted import run_sync_deleted

    result = run_sync_deleted(opts, online=online, limit=limit)
    if not as_json:
        print_lines(result.lines())
    report_run(
        result.line(),
        result.left,
        quiet=opts.quiet,
        doc=result.to_json() if as_json else None,
        failed_message=(
            f"{result.failed} candidate(s) could not be checked; rerun to retry them"
            if result.failed
            else ""
        ),
    )


@main.command("usage-backfill")
@limit_option("At most N threads.")
@json_option
@common_options
def usage_backfill(opts: RunOptions, limit: int | None, as_json: bool) -> None:
    """Credit usage per thread into the archive's state store (every account; status shows it).

    Resumable: threads already recorded (or forbidden for their account) are not asked again.
    """
    from pplx_export.commands.upkeep.usage import run_usage_backfill

    result = run_usage_backfill(opts, limit=limit)
    report_result(
        result,
        quiet=opts.quiet,
        as_json=as_json,
        failed_what="thread(s) failed; rerun to retry them",
    )


@main.command("assets-backfill")
@click.option(
    "--fetch-blocks", is_flag=True, help="Fetch missing raw_blocks.json (earlier tool's archives)."
)
@click.option("--online", is_flag=True, help="Download missing files through fresh signed URLs.")
@limit_option("At most N threads per phase.")
@json_option
@render_options
def assets_backfill(
    opts: RunOptions, fetch_blocks: bool, online: bool, limit: int | None, as_json: bool
) -> None:
    """Complete thread assets: inline files and manifests offline; blocks and files online."""
    from pplx_export.commands.upkeep.assets_backfill import run_assets_backfill

    result = run_assets_backfill(opts, fetch_blocks=fetch_blocks, online=online, limit=limit)
    report_result(
        result, quiet=opts.quiet, as_json=as_json, failed_what="item(s) failed; rerun to retry them"
    )


@main.command("search-mode-backfill")
@click.option("--offline", is_flag=True, help="Local raw files only; zero requests.")
@limit_option("At most N index rows.")
@json_option
@common_options
def search_mode_backfill(opts: RunOptions, offline: bool, limit: int | None, as_json: bool) -> None:
    """Fill search_mode into index rows: from local raw files first, online as fallback."""
    from pplx_export.commands.upkeep.search_mode import run_search_mode_backfill

    result = run_search_mode_backfill(opts, offline=offline, limit=limit)
    report_result(
        result, quiet=opts.quiet, as_json=as_json, failed_what="row(s) failed; rerun to retry them"
    )


@main.command()
@click.option("--force", is_flag=True, help="Update an existing config (comments are kept).")
@click.option(
    "--create-bot-space",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[TITLE]",
    help="Create the BOT space when none exists (title: TITLE, else --bot-title).",
)
@click.option("--bot-title", default="BOT", show_default=True, help="Title of the BOT space.")
@click.option("--git", is_flag=True, help="Make the archive a git repository; auto_commit on.")
@json_option
@common_options
@creates_config
def init(
    opts: RunOptions,
    force: bool,
    create_bot_space: str | None,
    bot_title: str,
    git: bool,
    as_json: bool,
) -> None:
    """Write the config from your browser's signed-in Perplexity accounts."""
    from pplx_export.commands.setup.init import InitOptions, run_init

    title = create_bot_space or bot_title
    options = InitOptions(force, create_bot_space is not None, title, git)
    result = run_init(opts, options)
    show_report(result, as_json=as_json)


@main.command()
@click.option("--time", "at", default="03:30", show_default=True, help="When to run (HH:MM).")
@click.option("--systemd", is_flag=True, help="Also write a systemd user service + timer.")
@click.option("--install", is_flag=True, help="Install it (crontab entry, or enable the timer).")
@click.option("--uninstall", is_flag=True, help="Remove this archive's crontab entry and timer.")
@click.option(
    "--status", "show_status", is_flag=True, help="What is installed, next run, last results."
)
@click.option(
    "--check", is_flag=True, help="Run the job's sign-in once, as cron (--systemd: as systemd)."
)
@click.option("--on-failure", metavar="CMD", default=None, help="Passed on to the job's sync.")
@click.option("--healthcheck-url", metavar="URL", default=None, help="Passed on to the job's sync.")
@json_option
@render_options
def schedule(
    opts: RunOptions,
    at: str,
    systemd: bool,
    install: bool,
    uninstall: bool,
    show_status: bool,
    check: bool,
    on_failure: str | None,
    healthcheck_url: str | None,
    as_json: bool,
) -> None:
    """Run `sync` every night: write index/cron_snippet.txt (or systemd units).

    The job gets the options given here (--account, --lang, --flavor, cookies,
    --on-failure, --healthcheck-url); without --account it archives every account.
    """
    from pplx_export.commands.setup.schedule_manage import run_schedule_action

    result = run_schedule_action(
        opts,
        action="uninstall" if uninstall else "status" if show_status else "check" if check else "",
        actions=(install, uninstall, show_status, check),
        time=at,
        systemd=systemd,
        install=install,
        on_failure=on_failure,
        healthcheck_url=healthcheck_url,
    )
    show_report(result, as_json=as_json)
    result.raise_if_failed()


@main.command("check-signin", hidden=True)
@every_account_options
def check_signin(opts: RunOptions) -> None:
    """Sign every account in once (what `schedule --check` runs in the job's environment)."""
    from pplx_export.commands.setup.schedule_manage import run_check_signin

    lines, raise_for_failed = run_check_signin(opts)
    print_lines(lines)
    raise_for_failed()


@main.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where to write the demo archive (same as DIRECTORY; default ./pplx-demo-archive).",
)
@shared_options(network=False, account=False, config=False, out=False, writes=False, flavor=True)
def demo(opts: RunOptions, directory: Path | None, out_dir: Path | None) -> None:
    """Export the bundled sample library through the local emulator (no account needed)."""
    from pplx_export.archive.root import ensure_writable
    from pplx_export.commands.setup.demo import DEFAULT_DEMO_DIR, run_demo

    if directory and out_dir and directory.absolute() != out_dir.absolute():
        raise click.UsageError("give the demo directory once: DIRECTORY or --out")
    target = (directory or out_dir or DEFAULT_DEMO_DIR).absolute()
    ensure_writable(target)
    summary = run_demo(
        target, lang=opts.lang, flavor=opts.flavor, quiet=opts.quiet, progress=opts.progress
    )
    if summary.batch is not None:
        _report_batch(summary.batch, as_json=False, quiet=opts.quiet)
    click.echo(summary.text())


register_space_commands(main)


def run() -> None:
    """The `pplx-export` console script."""
    run_console(main, "pplx-export")
