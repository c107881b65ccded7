"""Searching `index/search.sqlite`: FTS5 queries over every table, filters, ranking, snippets.

Each FTS table is asked for its best row per thread (bm25 with column weights: the title
and the query count most, answers and reports next, work and sub-agent text least); the
threads are ranked by their best hit across tables. A query FTS5 cannot parse is searched
again as one phrase, with a note saying so. The database is opened read-only.

Long because a query's plan is one piece: the exact ranking under the bound, the
approximation over it and the snippets share its statements, weights and filters.
"""

from __future__ import annotations

import math
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
# Rowids a common term's column attribution looks at (see `_column_weights`).
ATTRIBUTED_SPAN = 4 * CANDIDATES
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
    and whether more than CANDIDATES rows matched (then only the newest are ranked).

    A first statement without a ranking function counts the newest matches up to the
    bound: it stops there, where bm25() would first count every row of the table holding
    each phrase of the query to weigh it (0.25 s for a term in a million source rows, 0.4 s
    for `示例` in the turns of 50,000 threads, and once per table). Under the bound, bm25()
    ranks exactly; over it, `_approximate` does."""
    q = _column_query(fts_query, table, columns)
    try:
        probe = _newest(conn, table, q, Filters())
    except sqlite3.OperationalError as exc:
        if _SYNTAX.search(str(exc)):
            raise QuerySyntaxError(str(exc)) from exc
        raise
    if len(probe) > CANDIDATES:
        # The probe is the candidates when nothing filters them (a `NOT` makes each such
        # statement walk far: 0.14 s for `示例 NOT 演示` in 50,000 threads' turns).
        found = _newest(conn, table, q, filters) if _filter_sql(filters)[0] else probe
        return _approximate(conn, table, columns, fts_query, limit, found, probe[-1][1])
    weights = ", ".join(str(WEIGHTS[table][c]) for c in FTS_TABLES[table])
    joins, where, args, tid = _candidate_sql(table, filters)
    match = f" FROM {table}_fts f{joins} WHERE {table}_fts MATCH ?{where}"
    source = f"SELECT {tid} AS tid, f.rowid AS rid, bm25({table}_fts, {weights}) AS score"
    # Materialized: bm25() only works in the query that runs the MATCH, not once the
    # subquery is flattened. The bound is a guard: the probe found at most CANDIDATES.
    sql = (
        f"WITH m AS MATERIALIZED ({source}{match} ORDER BY f.rowid DESC LIMIT ?)"
        " SELECT min(score), tid, rid, count(*) FROM m GROUP BY tid ORDER BY 1 LIMIT ?"
    )
    rows = conn.execute(sql, [q, *args, CANDIDATES + 1, limit]).fetchall()
    return [(float(s), int(t), int(r), int(n)) for s, t, r, n in rows], False


def _candidate_sql(table: str, filters: Filters) -> tuple[str, str, list[Any], str]:
    """(joins, filter clauses, their arguments, the thread id expression) for a statement
    over `<table>_fts f`. CROSS JOIN keeps the FTS table the outer loop whatever the
    statistics say; threads is joined only for a filter."""
    where, args = _filter_sql(filters)
    if table == "threads":
        return (" CROSS JOIN threads t ON t.id = f.rowid" if where else ""), where, args, "f.rowid"
    joins = f" CROSS JOIN {table} c ON c.id = f.rowid"
    joins += " CROSS JOIN threads t ON t.id = c.thread_id" if where else ""
    return joins, where, args, "c.thread_id"


# bm25's constants in FTS5 (fts5_aux.c), for the approximation of a common term's score.
_K1 = 1.2
_IDF_FLOOR = 1e-6


def _newest(
    conn: sqlite3.Connection, table: str, q: str, filters: Filters
) -> list[tuple[int, int]]:
    """(thread id, rowid) of the newest CANDIDATES+1 rows matching `q` and the filters: FTS5
    walks the rowids down and stops there, ranking nothing."""
    joins, where, args, tid = _candidate_sql(table, filters)
    rows = conn.execute(
        f"SELECT {tid}, f.rowid FROM {table}_fts f{joins} WHERE {table}_fts MATCH ?{where}"
        " ORDER BY f.rowid DESC LIMIT ?",
        [q, *args, CANDIDATES + 1],
    ).fetchall()
    return [(int(t), int(r)) for t, r in rows]


def _approximate(
    conn: sqlite3.Connection,
    table: str,
    columns: tuple[str, ...],
    fts_query: str,
    limit: int,
    found: list[tuple[int, int]],
    oldest_probed: int,
) -> tuple[list[tuple[float, int, int, int]], bool]:
    """Rank `found` (the newest CANDIDATES+1 rows that match and pass the filters, as
    (thread id, rowid)) without bm25(): each row scores what bm25 gives a row holding the
    query once, at average length, in the columns where its positive terms occur, weighted
    as WEIGHTS says; the query's idf comes from how densely the newest rows match
    (`oldest_probed` is the oldest rowid among the first CANDIDATES+1 matches, unfiltered).
    For a term in most rows FTS5 floors the idf at 1e-6, so the scores, like bm25's, barely
    count next to a rarer term's. The flag: more than CANDIDATES rows passed the filters
    (the oldest of them were not ranked)."""
    if not found:
        return [], False
    weight = _column_weights(conn, table, columns, fts_query, [r for _, r in found])
    # Two subqueries: min() and max() in one SELECT scan the table (0.1 s for sources).
    lo, hi = conn.execute(
        f"SELECT (SELECT min(rowid) FROM {table}), (SELECT max(rowid) FROM {table})"
    ).fetchone()
    total = hi - lo + 1
    hits = (CANDIDATES + 1) * total / max(1, hi - oldest_probed + 1)
    idf = max(_IDF_FLOOR, math.log((total - hits + 0.5) / (hits + 0.5)))
    best: dict[int, tuple[float, int, int]] = {}  # tid -> (score, rowid, rows)
    for t, r in found:
        w = weight[r]
        score = -idf * w * (_K1 + 1) / (w + _K1)
        prev = best.get(t)
        if prev is None:
            best[t] = (score, r, 1)
        else:
            keep = (score, r) if score < prev[0] else prev[:2]
            best[t] = (*keep, prev[2] + 1)
    ranked = sorted(best.items(), key=lambda kv: kv[1][0])[:limit]
    return [(s, t, r, n) for t, (s, r, n) in ranked], len(found) > CANDIDATES


def _column_weights(
    conn: sqlite3.Connection,
    table: str,
    columns: tuple[str, ...],
    fts_query: str,
    rowids: list[int],
) -> dict[int, float]:
    """rowid -> the summed WEIGHTS of the searched columns in which the query's positive
    terms occur: one statement a column over the newest ATTRIBUTED_SPAN rowids of `rowids`
    (each walks every row of that span holding the terms, so a span as wide as a `NOT` or
    a filter can make it costs more than it tells). Rows older than the span get the mean
    weight of those within it."""
    if len(columns) == 1:
        return dict.fromkeys(rowids, WEIGHTS[table][columns[0]])
    hi = max(rowids)
    lo = max(min(rowids), hi - ATTRIBUTED_SPAN + 1)
    positive = positive_query(fts_query)
    floor = min(WEIGHTS[table][c] for c in columns)
    inside = {r: 0.0 for r in rowids if r >= lo}
    for col in columns:
        try:
            got = conn.execute(
                f"SELECT rowid FROM {table}_fts WHERE {table}_fts MATCH ?"
                " AND rowid BETWEEN ? AND ?",
                (_column_query(positive, table, (col,)), lo, hi),
            ).fetchall()
        except sqlite3.OperationalError:
            continue  # the positive part alone does not parse: the row keeps the floor
        for (r,) in got:
            if r in inside:
                inside[r] += WEIGHTS[table][col]
    weights = {r: w or floor for r, w in inside.items()}
    mean = sum(weights.values()) / len(weights)
    return {r: weights.get(r, mean) for r in rowids}


def _snippet(
    conn: sqlite3.Connection, table: str, columns: tuple[str, ...], fts_query: str, rowid: int
) -> tuple[str, str]:
    """(field, snippet) of the best-weighted column of the row that matched.

    A statement a column, best weighted first, until one holds a match: snippet() reads
    and tokenizes its whole column, and a turn's work log (12 KB in the replicated
    archive's turns) cost 2 ms a hit when every column was asked at once, most often for
    a snippet of a shorter column already found. The query is its positive part (a NOT
    clause is evaluated over the whole table even for one row)."""
    cols = FTS_TABLES[table]
    ranked = sorted(columns, key=lambda c: -WEIGHTS[table][c])
    q = _column_query(positive_query(fts_query), table, columns)
    for col in ranked:
        try:
            row = conn.execute(
                f"SELECT snippet({table}_fts, ?, ?, ?, ?, ?) FROM {table}_fts"
                f" WHERE {table}_fts MATCH ? AND rowid = ?",
                (cols.index(col), MARK_START, MARK_END, ELLIPSIS, SNIPPET_TOKENS, q, rowid),
            ).fetchone()
        except sqlite3.OperationalError:
            break  # the positive part alone did not parse: show the row's field unmarked
        text = row[0] if row else None
        if text and MARK_START in text:
            return FIELD_NAMES[(table, col)], _tidy(text)
        if row is None:
            break  # the positive part does not match this row at all: no column will
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
