"""`pplx-export`: the archiver's command group. Commands are thin; the work lives in sync/."""

from __future__ import annotations

import click

from pplx_export import __version__
from pplx_export.cli.options import PplxGroup


@click.group(cls=PplxGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pplx-export")
def main() -> None:
    """Archive your Perplexity library as Markdown + raw JSON, and keep it in sync."""
