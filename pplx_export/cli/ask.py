"""`pplx-ask`: start new threads (and follow-ups) from the terminal and archive them."""

from __future__ import annotations

import click

from pplx_export.cli.options import PplxGroup, group_settings, version_option


@click.group(cls=PplxGroup, context_settings=group_settings())
@version_option("pplx-ask")
def main() -> None:
    """Ask Perplexity from the terminal; finished threads land in the archive."""
