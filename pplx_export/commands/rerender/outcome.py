"""What re-rendering one thread came to (`ThreadOutcome`): what a worker hands the parent.

A module of its own, light to import: the command (`commands/rerender/run.py`) needs the type on
every run, a no-op `--changed-only` run included, while the worker's module
(`commands/rerender/thread.py`) brings the search index and the relations facts along.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pplx_export.util.jsontypes import JSON

if TYPE_CHECKING:
    from pplx_export.search.index import Fresh


@dataclass
class ThreadOutcome:
    rel: str
    status: str  # "written" | "unchanged" | "skipped" | "failed"
    files_written: int = 0
    files_removed: int = 0
    redacted_tokens: int = 0
    error: str = ""
    variant_hits: list[JSON] = field(default_factory=list)
    # One line per turn that did not get the answer or sources its raw entry holds (§9.1).
    losses: list[str] = field(default_factory=list)
    # Set when the count differs from thread.json's before this render (a parser that now
    # reads a shape clears it): the parent then updates the batch state for `status`.
    losses_changed: tuple[str, int] | None = None  # (web uuid, new count)
    # The thread's (web uuid, url) when it has losses: the report names the first.
    lossy_thread: tuple[str, str] | None = None
    fingerprint: JSON | None = None  # the new render_state record, when it changed
    disk_full: str = ""  # the file a full disk refused: the whole run stops (see rerender)
    # Dry run only: the files (relative to the thread) that would be rewritten / removed.
    would_write: list[str] = field(default_factory=list)
    would_remove: list[str] = field(default_factory=list)
    # The search index: the thread's new rows and signature, computed here where the thread
    # is parsed already (None: not computed), or `index_fresh` when the index is current.
    index_rows: Fresh | None = None
    index_fresh: bool = False
    # The thread's relations cache record (pipeline/relation_facts.py), when its render
    # record changed (a thread whose inputs and outputs are as last time has one already).
    relation_facts: JSON | None = None
