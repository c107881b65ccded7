"""`pplx-export`: the archiver's command group. Commands are thin; the work lives in sync/."""

from __future__ import annotations

from datetime import UTC, datetime

import click
from rich.console import Console

from pplx_export import __version__
from pplx_export.cli.options import PplxGroup, RunOptions, common_options, emit_json
from pplx_export.sync.status import collect_status, print_status


@click.group(cls=PplxGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pplx-export")
def main() -> None:
    """Archive your Perplexity library as Markdown + raw JSON, and keep it in sync."""


@main.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
@common_options
def status(opts: RunOptions, as_json: bool) -> None:
    """Zero network: index age, state counts, what the next batch would do, errors.

    -v lists the next batch, -vv adds error titles and done counts per mode, -vvv every thread.
    """
    doc = collect_status(opts.out, opts.config, now=datetime.now(UTC), verbose=opts.verbose)
    if as_json:
        emit_json(doc)
    else:
        print_status(doc, Console(highlight=False))


@main.command("re-render")
@click.option("--limit", type=click.IntRange(min=0), default=None, help="Only the first N threads.")
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@click.option("--changed-only", is_flag=True, help="Skip threads unchanged since the last render.")
@click.option("--jobs", type=click.IntRange(min=1), default=1, help="Threads rendered in parallel.")
@common_options
def re_render(
    limit: int | None, dry_run: bool, changed_only: bool, jobs: int, opts: RunOptions
) -> None:
    """Rebuild every derived file from the raw files. Zero network."""
    from pplx_export.sync.rerender import run_rerender_command

    run_rerender_command(opts, limit=limit, dry_run=dry_run, changed_only=changed_only, jobs=jobs)
