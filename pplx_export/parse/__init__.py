"""Raw API dicts -> models. Pure: no I/O, no network, no clock.

Public API (other packages code against these names):

* `parse_thread(plain, blocks=None, index_row=None, *, web_uuid, url, export_via,
  exported_at) -> Conversation` — the one assembly path for export and offline re-render.
* `merge_pages(pages)` — §2.3 page merge; `row_from_thread_json(tj)` — the index row an
  offline re-render passes; `thread_url(web_uuid, index_row)` — §4.3.
* Mode: `detect_mode(metadata, index_row, url, steps, entries) -> (mode, warnings)`,
  `plain_mode(plain, index_row, url)`, `needs_blocks(plain, index_row, url)`,
  `aggregate_search_mode(entries)`, `row_matches_mode(row, mode)`.
* Assets: `resolve_ext(dest_name, url, head, asset_type)`, `final_asset_name(dest_name, ext)`,
  `safe_stem(name)`.
* Interruptions: `classify(status, locked_reason)`, `build_registry(turns, appendix)`.
* Views: `attach_views(conv)` — the typed views the renderer reads, from the raw fields
  (`parse_thread` calls it; a Conversation built by hand needs it before rendering).
"""

from pplx_export.parse.assets import final_asset_name, resolve_ext, safe_stem
from pplx_export.parse.interruptions import build_registry, classify
from pplx_export.parse.mode import (
    aggregate_search_mode,
    detect_mode,
    needs_blocks,
    plain_mode,
    row_matches_mode,
)
from pplx_export.parse.thread import merge_pages, parse_thread, row_from_thread_json, thread_url
from pplx_export.parse.views import attach_views

__all__ = [
    "aggregate_search_mode",
    "attach_views",
    "build_registry",
    "classify",
    "detect_mode",
    "final_asset_name",
    "merge_pages",
    "needs_blocks",
    "parse_thread",
    "plain_mode",
    "resolve_ext",
    "row_from_thread_json",
    "row_matches_mode",
    "safe_stem",
    "thread_url",
]
