"""`sync --refresh-spaces` (and `sync --full`): `spaces --fetch-meta`, then `sync-space`.

Runs after the batch, on the batch's session; what it did is logged (the batch summary
stays the command's report).
"""

from __future__ import annotations

import logging

from pplx_export.commands.spaces.pages import SpacesResult, run_spaces
from pplx_export.commands.spaces.sync_space import SyncSpaceResult, run_sync_space
from pplx_export.context import RunOptions
from pplx_export.site.api import PerplexityAPI

log = logging.getLogger(__name__)


def refresh_spaces(
    opts: RunOptions, api: PerplexityAPI | None = None
) -> tuple[SpacesResult, SyncSpaceResult]:
    spaces = run_spaces(opts, fetch_meta=True, api=api)
    log.info("%s", spaces.line())
    moved = run_sync_space(opts)
    log.info("%s", moved.line())
    return spaces, moved
