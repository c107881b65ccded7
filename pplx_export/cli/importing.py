"""`import`: Perplexity's own data export as ground truth.

Thin: the work is commands/export/official_import.py's."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pplx_export.cli.options import json_option, shared_options
from pplx_export.cli.output import report_run

if TYPE_CHECKING:
    from pplx_export.context import RunOptions


@click.command("import")
@click.argument("export_file", metavar="ZIP_OR_JSON", type=click.Path(path_type=Path))
@click.option(
    "--fetch", is_flag=True, help="Then ask the API for the recovered threads (what sync does)."
)
@click.option("--audit-only", is_flag=True, help="Only report; write nothing.")
@json_option
@shared_options(flavor=True, online_when="fetch")
def import_export(
    opts: RunOptions, export_file: Path, fetch: bool, audit_only: bool, as_json: bool
) -> None:
    """Check the archive against Perplexity's "Export my data" archive and recover what
    it lacks.

    Each conversation is matched to an archived thread (turns by question text, in
    order). A conversation the archive lacks becomes a thread directory of its own
    (thread.json `source: "official_export"`: questions and answers only, the export has
    no sources); turns an archived thread lacks are added, marked imported. Nothing the
    API gave is overwritten. The next `sync` (or --fetch) asks the API for the recovered
    threads. Re-importing the same file changes nothing.
    """
    from pplx_export.commands.export.official_import import run_import_command

    if fetch and audit_only:
        raise click.UsageError("--fetch and --audit-only exclude each other")
    report = run_import_command(opts, export_file, audit_only=audit_only, fetch=fetch)
    if as_json:
        report.write_json(sys.stdout)
    else:
        sys.stdout.write("\n".join(report.lines()) + "\n")
        if report.fetch is not None and not opts.quiet:
            click.echo(str(report.fetch.get("line", "")), err=True)
    report.close()
    report_run(
        "",
        [],
        quiet=True,
        failed_message=f"the export is damaged: {report.error}" if report.error else "",
    )
