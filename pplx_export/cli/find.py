"""`search` and `verify`: thin commands over commands/inspect/search.py and
commands/inspect/verify.py, and how their results look on a terminal (highlighted matches) or
in a pipe (plain `[...]`)."""

from __future__ import annotations

import re
import sys
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pplx_export.cli.options import json_option, limit_option, shared_options
from pplx_export.cli.output import emit_json, report_run

if TYPE_CHECKING:
    from pplx_export.context import RunOptions
    from pplx_export.search.query import SearchResult

# Kept here, not imported, so `pplx-export --help` loads neither the data model nor sqlite
# (tests check both lists against their sources).
MODES = ("search", "deep-research", "computer", "council", "study")
IN_CHOICES = ("query", "answer", "work", "sources", "all")

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _day(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """YYYY-MM-DD (a longer ISO time is cut to its date)."""
    if value is None:
        return None
    head = value.strip()[:10]
    try:
        if not _DATE.fullmatch(head):
            raise ValueError
        date.fromisoformat(head)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date (YYYY-MM-DD)") from None
    return head


def print_results(result: SearchResult, root_label: str, *, tty: bool) -> None:
    """Four lines a result: title; mode, date, account, space; where it matched and the
    snippet, matches highlighted (on a terminal) or in [brackets]; the file to open."""
    from rich.console import Console
    from rich.markup import escape

    from pplx_export.search.query import marked

    console = Console(highlight=False, soft_wrap=not tty)
    for n, hit in enumerate(result.hits, start=1):
        facts = [hit.mode, hit.date, hit.account]
        if hit.space:
            facts.append(f"space {hit.space}")
        where = hit.field + (f", turn {hit.turn}" if hit.turn else "")
        if tty:
            snippet = marked(escape(hit.snippet), "[bold reverse]", "[/]")
            console.print(f"[bold]{n}. {escape(hit.title)}[/]")
            console.print(f"   [dim]{escape(' · '.join(facts))}[/]")
            console.print(f"   [dim]{escape(where)}:[/] {snippet}")
            # Not wrapped at spaces: the path stays one piece to copy (the terminal folds it).
            console.print(f"   [cyan]{escape(root_label + hit.path)}[/]", soft_wrap=True)
        else:
            lines = [
                f"{n}. {hit.title}",
                "   " + " · ".join(facts),
                f"   {where}: " + marked(hit.snippet, "[", "]"),
                "   " + root_label + hit.path,
            ]
            sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()


@click.command()
@click.argument("query", required=False)
@click.option("--mode", type=click.Choice(MODES), default=None, help="Only threads of this mode.")
@click.option("--space", default=None, help="Only threads of this space (slug or title).")
@click.option(
    "--since",
    metavar="DATE",
    callback=_day,
    default=None,
    help="Only threads updated on/after DATE.",
)
@click.option(
    "--until",
    metavar="DATE",
    callback=_day,
    default=None,
    help="Only threads updated on/before DATE.",
)
@click.option(
    "--in",
    "scope",
    type=click.Choice(IN_CHOICES),
    default="all",
    show_default=True,
    help="Where to look: queries (and titles), answers (and reports, council), work "
    "(steps, sub-agents), sources, or all.",
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=20, show_default=True, help="At most N threads."
)
@json_option
@click.option("--rebuild", is_flag=True, help="Rebuild index/search.sqlite from the archive first.")
@click.option(
    "--history",
    "with_history",
    is_flag=True,
    help="Also search the earlier versions of threads kept in history/ (turns the server "
    "lost or rewrote).",
)
@shared_options(network=False, account=True, writes_when="rebuild")
def search(
    opts: RunOptions,
    query: str | None,
    mode: str | None,
    space: str | None,
    since: str | None,
    until: str | None,
    scope: str,
    limit: int,
    as_json: bool,
    rebuild: bool,
    with_history: bool,
) -> None:
    """Full-text search of the archive (SQLite FTS5, index/search.sqlite).

    QUERY takes FTS5 syntax: words (all must match), "exact phrases", OR, NOT,
    NEAR(a b, 5), prefix*. Chinese and Japanese words match as written. --account
    keeps one account's threads. Zero network; the index is read, never written,
    unless it is missing or damaged (then it is rebuilt) or --rebuild is given.
    """
    from pplx_export.commands.inspect.search import SearchRequest, run_search

    if query is None and not rebuild:
        raise click.UsageError("give a QUERY (or --rebuild)")
    ctx = click.get_current_context()
    account_given = ctx.get_parameter_source("account") is click.core.ParameterSource.COMMANDLINE
    outcome = run_search(
        opts,
        SearchRequest(
            query=query,
            mode=mode,
            space=space,
            account=account_given,
            since=since,
            until=until,
            scope=scope,
            limit=limit,
            rebuild=rebuild,
            history=with_history,
        ),
    )
    result = outcome.result
    if as_json:
        emit_json(outcome.to_json())
        return
    if outcome.rebuilt is not None and not opts.quiet:
        stats = outcome.rebuilt
        failed = f", {len(stats.failed)} unreadable" if stats.failed else ""
        click.echo(f"search index rebuilt: {stats.indexed} threads{failed}", err=True)
    if result is None:
        return
    if result.note:
        click.echo(f"note: {result.note}", err=True)
    counted = f"for {result.query!r} ({result.total_threads} threads indexed)"
    _show_results(result, opts.out, counted, quiet=opts.quiet)
    earlier = outcome.history
    if earlier is not None:
        if earlier.hits:
            click.echo("earlier versions (history/):")
        counted = f"in earlier versions ({earlier.total_threads} versions kept)"
        _show_results(earlier, opts.out, counted, quiet=opts.quiet)


def _show_results(result: SearchResult, root: Path, counted: str, *, quiet: bool) -> None:
    """The hits on stdout (none: nothing), then "<n> result(s) <counted>" on stderr."""
    print_results(result, f"{root}/", tty=sys.stdout.isatty())
    if not quiet:
        click.echo(f"{len(result.hits)} result(s) {counted}", err=True)


@click.command()
@click.option(
    "--fix", "fix_problems", is_flag=True, help="Re-render stale threads, re-index, sweep."
)
@limit_option("Only the first N threads.")
@click.option(
    "--drift",
    "drift_only",
    is_flag=True,
    help="List every unknown shape with its first thread and the `capture` command.",
)
@click.option(
    "--against",
    type=click.Path(path_type=Path),
    default=None,
    metavar="ZIP",
    help="Instead: check the archive holds every thread and turn of Perplexity's "
    '"Export my data" archive (the audit of `import`, writing nothing).',
)
@json_option
@shared_options(network=False, flavor=True, writes_when="fix_problems")
def verify(
    opts: RunOptions,
    fix_problems: bool,
    limit: int | None,
    drift_only: bool,
    against: Path | None,
    as_json: bool,
) -> None:
    """Zero network: check the archive is whole, current and searchable.

    thread.json and raw files parse; derived files equal a fresh render; the assets
    manifest's files exist; no temp files; state and directories agree; the search
    index covers every thread. Adds a schema-drift report (unknown payload types).
    Exit 0 when clean, 4 while problems remain.
    """
    from pplx_export.commands.inspect.verify import run_verify_command
    from pplx_export.progress import progress_reporter

    if against is not None:
        _verify_against(opts, against, as_json)
        return

    # No refresh thread: verify forks its workers while the bar is up.
    with progress_reporter("verify", quiet=opts.quiet, refresh_thread=False) as bar:
        report = run_verify_command(
            opts,
            fix_problems=fix_problems,
            limit=limit,
            on_total=bar.set_total,
            on_progress=bar.advance,
        )
    remaining = len(report.remaining)
    if drift_only:
        # The drift report alone: a warning, not a problem, so the exit code stays 0.
        if as_json:
            doc = report.to_json()
            emit_json({k: doc[k] for k in ("root", "threads", "schema_drift")})
        else:
            sys.stdout.write("\n".join(report.drift_lines()) + "\n")
        return
    if not as_json:
        sys.stdout.write("\n".join(report.lines()) + "\n")
    report_run(
        "",
        [],
        quiet=True,
        doc=report.to_json() if as_json else None,
        failed_message=(
            f"{remaining} problem(s) remain"
            + ("" if fix_problems else "; `pplx-export verify --fix` repairs what it can")
            if remaining
            else ""
        ),
    )


def _verify_against(opts: RunOptions, path: Path, as_json: bool) -> None:
    """`verify --against`: the import's audit alone; exit 4 while anything is missing."""
    from pplx_export.commands.export.official_import import run_import_command

    report = run_import_command(opts, path, audit_only=True)
    if as_json:
        report.write_json(sys.stdout)
    else:
        sys.stdout.write("\n".join(report.lines()) + "\n")
    report.close()
    missing = report.problems
    report_run(
        "",
        [],
        quiet=True,
        failed_message=(
            f"{missing} conversation(s) of the export are not archived in full; "
            "`pplx-export import` recovers them"
            if missing
            else (f"the export is damaged: {report.error}" if report.error else "")
        ),
    )
