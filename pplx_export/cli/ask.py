"""`pplx-ask`: start new threads (and follow-ups) from the terminal and archive them."""

from __future__ import annotations

import click

from pplx_export import __version__
from pplx_export.cli.options import PplxGroup, common_options
from pplx_export.cli.output import emit_json, print_lines
from pplx_export.context import RunOptions


@click.group(cls=PplxGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pplx-ask")
def main() -> None:
    """Ask Perplexity from the terminal; finished threads land in the archive."""


@main.command()
@click.option("--refresh", is_flag=True, help="Fetch it, cache it next to the config, stamp it.")
@click.option("--json", "as_json", is_flag=True, help="The catalog as JSON on stdout.")
@common_options
def models(opts: RunOptions, refresh: bool, as_json: bool) -> None:
    """The model catalog: per-mode defaults, council pool, model families."""
    from pplx_export.sync.models import catalog_lines, run_models

    catalog = run_models(opts, refresh=refresh)
    if as_json:
        emit_json(catalog.to_json())
    else:
        print_lines(catalog_lines(catalog))
