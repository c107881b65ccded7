"""`pplx-export search`: make sure the index is usable (rebuilding it if it is missing or
damaged, under the archive lock), then query it read-only. The query logic is search/."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pplx_export.archive.paths import safe_folder
from pplx_export.context import RunOptions
from pplx_export.errors import ArchiveError, UsageError
from pplx_export.progress import progress_reporter
from pplx_export.search.query import Filters, SearchResult, search
from pplx_export.search.schema import SCHEMA_VERSION, connect_ro, db_path, schema_version
from pplx_export.store.lock import archive_lock

if TYPE_CHECKING:
    # The index builder (extract, the parser, the renderer's text) costs ~80 ms to import:
    # a search that finds its index in place never loads it.
    from pplx_export.search.index import IndexStats

log = logging.getLogger(__name__)


@dataclass
class SearchRequest:
    query: str | None  # None: only --rebuild
    mode: str | None = None
    space: str | None = None
    account: bool = False  # filter by the run's account (given on the command line)
    since: str | None = None
    until: str | None = None
    scope: str = "all"
    limit: int = 20
    rebuild: bool = False
    history: bool = False  # also search the earlier versions kept in history/


@dataclass
class SearchOutcome:
    root: Path
    result: SearchResult | None = None
    rebuilt: IndexStats | None = None
    notes: list[str] = field(default_factory=list)
    # `--history`: the hits among earlier versions (history/<stamp>/ directories).
    history: SearchResult | None = None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = self.result.to_json(self.root) if self.result else {}
        if self.history is not None:
            doc["history"] = self.history.to_json(self.root)
        if self.rebuilt is not None:
            doc["rebuilt"] = self.rebuilt.to_json()
        return doc


def _build(opts: RunOptions, outcome: SearchOutcome) -> None:
    from pplx_export.search import index as search_index

    # A search that finds the index missing rebuilds it: that one write needs the lock.
    with (
        archive_lock(opts.out, opts.held_locks),
        # No refresh thread: rebuild forks its workers while the bar is up.
        progress_reporter("search index", quiet=opts.quiet, refresh_thread=False) as bar,
    ):
        outcome.rebuilt = search_index.rebuild(
            opts.out, on_total=bar.set_total, on_progress=bar.advance
        )


def _open(opts: RunOptions, outcome: SearchOutcome) -> sqlite3.Connection:
    """The index read-only; rebuilt first (with a warning) when missing, damaged or old."""
    path = db_path(opts.out)
    problem = ""
    if not path.is_file():
        problem = f"no search index at {path}"
    else:
        conn = connect_ro(path)
        try:
            version = schema_version(conn)
            if version == SCHEMA_VERSION:
                return conn
            problem = (
                f"{path} is not a pplx-export search index"
                if version is None
                else f"{path} has schema version {version}, this version reads {SCHEMA_VERSION}"
            )
        except sqlite3.DatabaseError as exc:
            problem = f"search index {path} is damaged ({exc})"
        conn.close()
    log.warning("%s; rebuilding it from the archive", problem)
    outcome.notes.append(f"{problem}; rebuilt")
    _build(opts, outcome)
    return connect_ro(path)


def account_names(opts: RunOptions) -> tuple[str, ...]:
    """What an account is called in the index: its config name, and its archive folder."""
    account = opts.account
    names = {account.name, safe_folder(account.display_name or account.name)}
    return tuple(sorted(n for n in names if n))


def run_search(opts: RunOptions, request: SearchRequest) -> SearchOutcome:
    if not opts.out.is_dir():
        raise UsageError(f"archive root not found: {opts.out}")
    outcome = SearchOutcome(root=opts.out)
    if request.rebuild:
        _build(opts, outcome)
    if request.query is None:
        return outcome
    filters = Filters(
        mode=request.mode,
        space=request.space,
        accounts=account_names(opts) if request.account else (),
        since=request.since,
        until=request.until,
    )
    for attempt in (1, 2):
        conn = _open(opts, outcome)
        try:
            outcome.result = search(
                conn, request.query, scope=request.scope, filters=filters, limit=request.limit
            )
            if request.history:
                outcome.history = _search_history(opts, request, filters)
            return outcome
        except sqlite3.DatabaseError as exc:
            # Damage the header check did not see ("database disk image is malformed").
            if attempt == 2 or outcome.rebuilt is not None:
                raise ArchiveError(f"search index {db_path(opts.out)} unusable: {exc}") from exc
            log.warning("search index %s is damaged (%s); rebuilding it", db_path(opts.out), exc)
            outcome.notes.append(f"search index damaged ({exc}); rebuilt")
            conn.close()
            with contextlib.suppress(FileNotFoundError):
                db_path(opts.out).unlink()
        finally:
            conn.close()
    return outcome


def _search_history(opts: RunOptions, request: SearchRequest, filters: Filters) -> SearchResult:
    """The query against the earlier versions the archive keeps (indexed in memory, on
    request: they are few, and the index every search reads stays the current archive)."""
    from pplx_export.search import index as search_index

    conn, stats = search_index.history_index(opts.out)
    try:
        for rel, reason in stats.failed:
            log.warning("earlier version %s unreadable: %s", rel, reason)
        return search(
            conn, request.query or "", scope=request.scope, filters=filters, limit=request.limit
        )
    finally:
        conn.close()


DEMO_QUERY = "tides"  # in the bundled sample library ("How do tides work?")


def demo_search(root: Path, query: str = DEMO_QUERY) -> str:
    """For `demo`: build the archive's search index and show a search that finds something."""
    from pplx_export.search import index as search_index

    stats = search_index.rebuild(root, jobs=1)  # a small archive; no fork in the demo
    conn = connect_ro(db_path(root))
    try:
        hits = search(conn, query, limit=5).hits
    finally:
        conn.close()
    first = f', first "{hits[0].title}"' if hits else ""
    return (
        f"search index: {stats.indexed} threads in {db_path(root)}\n"
        f"then search: pplx-export search {query} --out {root}   ({len(hits)} hit(s){first})"
    )
