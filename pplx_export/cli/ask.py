"""`pplx-ask`: start new threads (and follow-ups) from the terminal and archive them."""

from __future__ import annotations

import click

from pplx_export import __version__
from pplx_export.cli.options import PplxGroup


@click.group(cls=PplxGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pplx-ask")
def main() -> None:
    """Ask Perplexity from the terminal; finished threads land in the archive."""
