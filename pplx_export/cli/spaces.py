"""Spaces and relations commands of `pplx-export`: thin wrappers over commands/.

`spaces`, `sync-space` and `relations` read only the archive (zero network; `spaces
--fetch-meta` is the one online variant); `space-index` lists a space online.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from pplx_export.cli.options import (
    common_options,
    json_option,
    offline_render_options,
    shared_options,
)
from pplx_export.cli.output import report_result, report_run

if TYPE_CHECKING:
    from pplx_export.context import RunOptions


@click.command()
@click.option(
    "--fetch-meta",
    is_flag=True,
    help="First fetch each space's owner and members into the archive's state (online; "
    "a denied space is retried with the other configured accounts).",
)
@json_option
@shared_options(flavor=True, online_when="fetch_meta")
def spaces(opts: RunOptions, fetch_meta: bool, as_json: bool) -> None:
    """Write spaces/<slug>.md per space, spaces/index.md and spaces/spaces.json.

    Offline unless --fetch-meta: threads are grouped by space from every account's index,
    the space listings of `space-index` and thread.json.
    """
    from pplx_export.commands.spaces.pages import run_spaces

    result = run_spaces(opts, fetch_meta=fetch_meta)
    report_run(result.line(), [], quiet=opts.quiet, doc=result.to_json() if as_json else None)


@click.command("space-index")
@click.argument("space")
@json_option
@common_options
def space_index(opts: RunOptions, space: str, as_json: bool) -> None:
    """List a space's threads (every member's) into index/space_<slug>.json.

    SPACE is a space URL (https://www.perplexity.ai/spaces/<slug>) or its slug. Then
    `batch --space SLUG` exports the listed threads.
    """
    from pplx_export.commands.spaces.space_index import run_space_index

    result = run_space_index(opts, space)
    report_run(result.line(), [], quiet=opts.quiet, doc=result.to_json() if as_json else None)


@click.command("sync-space")
@json_option
@offline_render_options
def sync_space(opts: RunOptions, as_json: bool) -> None:
    """Zero network: patch thread.json space fields from the indexes (threads that moved).

    Rebuilds spaces/ when anything changed; nothing but the `space` key is touched.
    """
    from pplx_export.commands.spaces.sync_space import run_sync_space

    result = run_sync_space(opts)
    what = "thread.json file(s) not patched"
    report_result(result, quiet=opts.quiet, as_json=as_json, failed_what=what)


@click.command()
@json_option
@offline_render_options
def relations(opts: RunOptions, as_json: bool) -> None:
    """Zero network: rebuild relations/edges.jsonl and relations/graph.md.

    Edge kinds: same_space, same_prompt, references, subagent_of. Unreadable threads are
    reported and left out (exit 4); the graph of the others is still written.
    """
    from pplx_export.commands.relations.run import run_relations

    result = run_relations(opts)
    what = "thread(s) unreadable"
    report_result(result, quiet=opts.quiet, as_json=as_json, failed_what=what)


def register(group: click.Group) -> None:
    for command in (spaces, space_index, sync_space, relations):
        group.add_command(command)
