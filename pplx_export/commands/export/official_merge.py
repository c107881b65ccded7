"""Online export of a thread whose directory holds turns from Perplexity's data export.

The API's response wins: it is written as fetched. The export's turns it lacks stay in the
render (marked imported); a thread recovered from the export alone whose API response has
fewer turns keeps the imported version in `history/` (archive/history.loss_reason).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pplx_export.archive.official import read_official
from pplx_export.models import Conversation
from pplx_export.parse.official_export import merge_plain

log = logging.getLogger(__name__)


def with_imported_turns(
    reparse: Callable[[dict[str, Any]], Conversation],
    conv: Conversation,
    plain: dict[str, Any],
    directory: Path,
) -> Conversation:
    """`conv` (parsed from the API's `plain`) with the export's turns it lacks, after
    keeping a recovered-only version the API's falls short of. `reparse(plain)` parses
    a plain response the way `conv` was parsed."""
    official = read_official(directory)
    if official is None:
        return conv
    # A recovered thread the API serves with fewer turns keeps its imported version in
    # history/: the writer's rule for any archived thread that would lose turns.
    merged = merge_plain(plain, official)
    if merged is plain:
        return conv
    both = reparse(merged)
    both.raw_plain = plain  # raw_entries.json is the API's response, never the merge
    log.info(
        "thread %s: %d turn(s) only the data export holds kept as imported",
        conv.web_uuid[:8],
        len(both.turns) - len(conv.turns),
    )
    return both
