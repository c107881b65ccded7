"""Raw API dicts -> models. Pure: no I/O, no network, no clock."""

from pplx_export.parse.assets import final_asset_name, resolve_ext, safe_stem
from pplx_export.parse.interruptions import build_registry, classify
from pplx_export.parse.mode import (
    aggregate_search_mode,
    detect_mode,
    needs_blocks,
    row_matches_mode,
)
from pplx_export.parse.thread import merge_pages, parse_thread, thread_url

__all__ = [
    "aggregate_search_mode",
    "build_registry",
    "classify",
    "detect_mode",
    "final_asset_name",
    "merge_pages",
    "needs_blocks",
    "parse_thread",
    "resolve_ext",
    "row_matches_mode",
    "safe_stem",
    "thread_url",
]
