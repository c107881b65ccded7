"""Searching `index/search.sqlite`: FTS5 queries over every table, filters, ranking, snippets.

Each FTS table is asked for its best row per thread (bm25 with column weights: the title
and the query count most, answers and reports next, work and sub-agent text least); the
threads are ranked by their best hit across tables. A query FTS5 cannot parse is searched
again as one phrase, with a note saying so. The database is opened read-only.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pplx_export.search.schema import FTS_TABLES
from pplx_export.search.text import as_phrase, plain, positive_query, rewrite_query

# Snippet markers inside the database's answer; the caller turns them into highlights.
MARK_START = "\x02"
MARK_END = "\x03"
ELLIPSIS = "…"
SNIPPET_TOKENS = 24
# Rows ranked per table at most: a term in most rows (`示例` is in a million source rows at
# 50,000 threads) would otherwise cost a bm25 per row, a second or more, to order rows whose
# scores barely differ (a term in most rows carries almost no weight). Above the bound the
# rows indexed last (the newest) are ranked and the result says so.
CANDIDATES = 2_000
IN_CHOICES = ("query", "answer", "work", "sources", "all")

# bm25 weights per FTS column.
WEIGHTS: dict[str, dict[str, float]] = {
    "threads": {"title": 10.0},
    "turns": {"query": 10.0, "answer": 3.0, "work": 1.0, "agents": 1.0, "council": 3.0},
    "sources": {"title": 2.0, "url": 1.0},
    "reports": {"title": 8.0, "body": 3.0},
}
# `--in` -> the (table, columns) searched.
SCOPES: dict[str, dict[str, tuple[str, ...]]] = {
    "query": {"threads": ("title",), "turns": ("query",)},
    "answer": {"turns": ("answer", "council"), "reports": ("title", "body")},
    "work": {"turns": ("work", "agents")},
    "sources": {"sources": ("title", "url")},
    "all": dict(FTS_TABLES),
}
# Which field a hit is reported in, per table and column.
FIELD_NAMES = {
    ("threads", "title"): "title",
    ("turns", "query"): "query",
    ("turns", "answer"): "answer",
    ("turns", "work"): "work",
    ("turns", "agents"): "sub-agent",
    ("turns", "council"): "council",
    ("sources", "title"): "source",
    ("sources", "url"): "source",
    ("reports", "title"): "report",
    ("reports", "body"): "report",
}
# What SQLite says about a MATCH expression it cannot parse.
_SYNTAX = re.compile(
    r"fts5|syntax|no such column|unterminated|unknown special query|unrecognized",
    re.IGNORECASE,
)
# The table whose hit a result shows, when a thread matched in several.
SHOWN_FIRST = ("turns", "reports", "sources", "threads")


class QuerySyntaxError(Exception):
    pass


@dataclass
class Filters:
    mode: str | None = None
    space: str | None = None
    accounts: tuple[str, ...] = ()  # any of these matches the folder, author or export_via
    since: str | None = None  # YYYY-MM-DD, inclusive
    until: str | None = None  # YYYY-MM-DD, inclusive


@dataclass
class Hit:
    title: str
    mode: str
    date: str
    account: str
    space: str
    uuid: str
    url: str
    field: str  # title | query | answer | work | sub-agent | council | source | report
    turn: int | None
    snippet: str  # with MARK_START / MARK_END around matches
    path: str  # the file to open, relative to the archive root
    matches: int  # rows of this thread that matched
    score: float

    def to_json(self, root: Path) -> dict[str, Any]:
        return {
            "title": self.title,
            "mode": self.mode,
            "date": self.date,
            "account": self.account,
            "space": self.space or None,
            "uuid": self.uuid,
            "url": self.url,
            "field": self.field,
            "turn": self.turn,
            "snippet": marked(self.snippet, "[", "]"),
            "path": str(root / self.path),
            "matches": self.matches,
            "score": round(self.score, 4),
        }


@dataclass
class SearchResult:
    query: str
    fts_query: str  # what FTS5 was given
    hits: list[Hit] = field(default_factory=list)
    note: str = ""  # e.g. the query was searched as a phrase
    total_threads: int = 0  # threads in the index
    bounded: list[str] = field(default_factory=list)  # tables whose rows were over CANDIDATES

    def to_json(self, root: Path) -> dict[str, Any]:
        return {
            "query": self.query,
            "fts_query": plain(self.fts_query),
            "note": self.note or None,
            "bounded": self.bounded or None,
            "count": len(self.hits),
            "indexed_threads": self.total_threads,
            "results": [h.to_json(root) for h in self.hits],
        }


def marked(snippet: str, start: str, end: str) -> str:
    return snippet.replace(MARK_START, start).replace(MARK_END, end)


def _filter_sql(filters: Filters) -> tuple[str, list[Any]]:
    # Each column behind a unary `+`: no index on threads may serve a filter, or the planner
    # makes `threads_mode_date` the outer loop and runs the MATCH once per thread (28 s for
    # `合成 --mode computer` at 50,000 threads; 0.05 s with the FTS table outermost).
    sql: list[str] = []
    args: list[Any] = []
    if filters.mode:
        sql.append("+t.mode = ?")
        args.append(filters.mode)
    if filters.space:
        sql.append("(+t.space = ? COLLATE NOCASE OR +t.space_title = ? COLLATE NOCASE)")
        args += [filters.space, filters.space]
    if filters.accounts:
        marks = ", ".join("?" * len(filters.accounts))
        sql.append(
            f"(+t.account IN ({marks}) OR +t.author IN ({marks}) OR +t.export_via IN ({marks}))"
        )
        args += list(filters.accounts) * 3
    if filters.since:
        sql.append("+t.date >= ?")
        args.append(filters.since)
    if filters.until:
        sql.append("+t.date <= ?")
        args.append(filters.until)
    return "".join(f" AND {s}" for s in sql), args


def _column_query(fts_query: str, table: str, columns: tuple[str, ...]) -> str:
    if columns == FTS_TABLES[table]:
        return fts_query
    return "{" + " ".join(columns) + "} : (" + fts_query + ")"


def _best_per_thread(
    conn: sqlite3.Connection,
    table: str,
    columns: tuple[str, ...],
    fts_query: str,
    filters: Filters,
    limit: int,
) -> tuple[list[tuple[float, int, int, int]], bool]:
    """(score, thread id, rowid of the best row, rows matched) for the best `limit` threads,
    and whether more than CANDIDATES rows matched (then only the last indexed are ranked)."""
    weights = ", ".join(str(WEIGHTS[table][c]) for c in FTS_TABLES[table])
    where, args = _filter_sql(filters)
    # CROSS JOIN keeps the FTS table the outer loop whatever the statistics say; threads
    # is joined only for a filter.
    if table == "threads":
        joins = " CROSS JOIN threads t ON t.id = f.rowid" if where else ""
        tid = "f.rowid"
    else:
        joins = f" CROSS JOIN {table} c ON c.id = f.rowid"
        joins += " CROSS JOIN threads t ON t.id = c.thread_id" if where else ""
        tid = "c.thread_id"
    match = f" FROM {table}_fts f{joins} WHERE {table}_fts MATCH ?{where}"
    query = [_column_query(fts_query, table, columns), *args]
    source = f"SELECT {tid} AS tid, f.rowid AS rid, bm25({table}_fts, {weights}) AS score"
    # One pass, newest rows first: FTS5 walks rowids in order and stops after CANDIDATES+1
    # rows (the one past the bound only says there were more). Materialized: bm25() only
    # works in the query that runs the MATCH, not once the subquery is flattened.
    sql = (
        f"WITH m AS MATERIALIZED ({source}{match} ORDER BY f.rowid DESC LIMIT ?)"
        " SELECT min(score), tid, rid, count(*), (SELECT count(*) FROM m) FROM m"
        " GROUP BY tid ORDER BY 1 LIMIT ?"
    )
    try:
        rows = conn.execute(sql, [*query, CANDIDATES + 1, limit]).fetchall()
        over = bool(rows) and int(rows[0][4]) > CANDIDATES
        return [(float(s), int(t), int(r), int(n)) for s, t, r, n, _ in rows], over
    except sqlite3.OperationalError as exc:
        if _SYNTAX.search(str(exc)):
            raise QuerySyntaxError(str(exc)) from exc
        raise


def _snippet(
    conn: sqlite3.Connection, table: str, columns: tuple[str, ...], fts_query: str, rowid: int
) -> tuple[str, str]:
    """(field, snippet) of the best-weighted column of the row that matched.

    One statement gives every searched column's snippet; the query is its positive part
    (a NOT clause is evaluated over the whole table even for one row)."""
    cols = FTS_TABLES[table]
    ranked = sorted(columns, key=lambda c: -WEIGHTS[table][c])
    q = _column_query(positive_query(fts_query), table, columns)
    parts = ", ".join(f"snippet({table}_fts, {cols.index(c)}, ?, ?, ?, ?)" for c in ranked)
    marks = [MARK_START, MARK_END, ELLIPSIS, SNIPPET_TOKENS] * len(ranked)
    try:
        row = conn.execute(
            f"SELECT {parts} FROM {table}_fts WHERE {table}_fts MATCH ? AND rowid = ?",
            (*marks, q, rowid),
        ).fetchone()
    except sqlite3.OperationalError:
        row = None  # the positive part alone did not parse: show the row's field unmarked
    for col, text in zip(ranked, row or (), strict=False):
        if text and MARK_START in text:
            return FIELD_NAMES[(table, col)], _tidy(text)
    return FIELD_NAMES[(table, ranked[0])], ""


# A Markdown link in a snippet reads as its text: `[how tides work](https://…)` -> `how
# tides work` (the target may be cut short by the snippet's end).
_MD_LINK = re.compile(r"\[([^\[\]\n]*)\]\([^()\s]*\)?")


def _tidy(snippet: str) -> str:
    """One line: the stored zero-width spaces out, links as their text, runs of whitespace
    as one space."""
    return " ".join(_MD_LINK.sub(r"\1", plain(snippet)).split())


def _hit(
    conn: sqlite3.Connection,
    table: str,
    columns: tuple[str, ...],
    fts_query: str,
    best: tuple[float, int, int, int],
) -> Hit:
    score, tid, rid, matches = best
    row = conn.execute(
        "SELECT title, mode, date, account, space, uuid, url, dir FROM threads WHERE id = ?",
        (tid,),
    ).fetchone()
    title, mode, date, account, space, uuid, url, rel = row
    turn: int | None = None
    path = f"{rel}/conversation.md"
    if table == "turns":
        turn, file = conn.execute("SELECT turn, file FROM turns WHERE id = ?", (rid,)).fetchone()
        path = f"{rel}/{file}"
    elif table == "sources":
        (turn,) = conn.execute("SELECT turn FROM sources WHERE id = ?", (rid,)).fetchone()
        path = f"{rel}/turns/turn_{turn:04d}.md" if turn else f"{rel}/sources.md"
        turn = turn or None
    elif table == "reports":
        (file,) = conn.execute("SELECT file FROM reports WHERE id = ?", (rid,)).fetchone()
        path = f"{rel}/{file}"
    field_name, snippet = _snippet(conn, table, columns, fts_query, rid)
    return Hit(
        title=plain(title),
        mode=mode,
        date=date,
        account=account,
        space=space,
        uuid=uuid,
        url=url,
        field=field_name,
        turn=turn,
        snippet=snippet,
        path=path,
        matches=matches,
        score=score,
    )


def run_query(
    conn: sqlite3.Connection,
    fts_query: str,
    *,
    scope: str = "all",
    filters: Filters | None = None,
    limit: int = 20,
    bounded: list[str] | None = None,
) -> list[Hit]:
    """The best `limit` threads for `fts_query` (already rewritten); QuerySyntaxError when
    FTS5 cannot parse it. Tables with more than CANDIDATES matching rows go in `bounded`."""
    filters = filters or Filters()
    # Per thread: the sum of its best (negative) bm25 score in each table, so a thread that
    # matches in its title and its query ranks above one that matches in one place; shown
    # is the hit of the first table in SHOWN_FIRST that matched (a turn file over a title).
    score: dict[int, float] = {}
    matches: dict[int, int] = {}
    shown: dict[int, tuple[str, tuple[float, int, int, int]]] = {}
    for table, columns in SCOPES[scope].items():
        best, over = _best_per_thread(conn, table, columns, fts_query, filters, limit)
        if over and bounded is not None:
            bounded.append(table)
        for found in best:
            s, tid, _rid, n = found
            score[tid] = score.get(tid, 0.0) + s
            matches[tid] = matches.get(tid, 0) + n
            if tid not in shown or SHOWN_FIRST.index(table) < SHOWN_FIRST.index(shown[tid][0]):
                shown[tid] = (table, found)
    ranked = sorted(score, key=lambda tid: (score[tid], tid))[:limit]
    hits = []
    for tid in ranked:
        table, found = shown[tid]
        hit = _hit(conn, table, SCOPES[scope][table], fts_query, found)
        hit.matches = matches[tid]
        hit.score = score[tid]
        hits.append(hit)
    return hits


def search(
    conn: sqlite3.Connection,
    query: str,
    *,
    scope: str = "all",
    filters: Filters | None = None,
    limit: int = 20,
) -> SearchResult:
    """Search with FTS5 syntax; a query FTS5 rejects is searched as one phrase, with a note."""
    fts_query = rewrite_query(query)
    result = SearchResult(query=query, fts_query=fts_query)
    try:
        result.hits = run_query(
            conn, fts_query, scope=scope, filters=filters, limit=limit, bounded=result.bounded
        )
    except QuerySyntaxError as exc:
        result.fts_query = as_phrase(query)
        reason = str(exc).removeprefix("fts5: ")
        result.note = f"not valid FTS5 query syntax ({reason}); searched as a phrase instead"
        bounded: list[str] = []
        result.bounded = bounded
        result.hits = run_query(
            conn, result.fts_query, scope=scope, filters=filters, limit=limit, bounded=bounded
        )
    if result.bounded:
        tables = ", ".join(result.bounded)
        common = f"common term: ranked the {CANDIDATES:,} newest rows of {tables}"
        result.note = "; ".join(filter(None, (result.note, common)))
    (result.total_threads,) = conn.execute("SELECT count(*) FROM threads").fetchone()
    return result
