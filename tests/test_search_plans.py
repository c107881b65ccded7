"""Search plans that stay fast at any size (issue 35): the same results as before the plan
changes, filters never the outer loop, snippets from positive terms, a bound on the rows a
common term ranks, and a start-up that loads no index builder.

tests/golden/search_mix.json holds what search/query.py as of 6b11e08 (before these changes)
returned for tests/search_mix.py's queries on the fixture archive."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from pplx_export.search import index, query, schema
from pplx_export.search.text import positive_query, rewrite_query
from tests.e2e_support import FIXTURES
from tests.search_mix import MIX, key, rows

GOLDEN = Path(__file__).parent / "golden" / "search_mix.json"


@pytest.fixture(scope="module")
def fixture_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plans") / "archive"
    shutil.copytree(FIXTURES, root)
    index.rebuild(root, jobs=1)
    return root


def statements(root: Path, text: str, **kwargs: object) -> tuple[query.SearchResult, list[str]]:
    conn = schema.connect_ro(schema.db_path(root))
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        return query.search(conn, text, **kwargs), seen  # type: ignore[arg-type]
    finally:
        conn.close()


def test_every_query_of_the_mix_returns_what_it_did(fixture_index: Path) -> None:
    expected = json.loads(GOLDEN.read_text("utf-8"))
    assert len(expected) == len(MIX)
    for text, kwargs in MIX:
        result, _ = statements(fixture_index, text, **kwargs)
        assert rows(result.hits) == expected[key(text, kwargs)], (text, kwargs)
        assert result.bounded == []


@pytest.mark.parametrize(
    "filters",
    [
        query.Filters(mode="computer"),
        query.Filters(mode="search", since="2031-05-01", until="2031-06-30"),
        query.Filters(space="home-lab-p2x7", accounts=("maya",)),
    ],
)
def test_a_filter_is_never_the_outer_loop(fixture_index: Path, filters: query.Filters) -> None:
    # With threads_mode_date as the outer loop the MATCH ran once per thread: 28 s for
    # `合成 --mode computer` at 50,000 threads. Every ranking statement scans its FTS table
    # first and looks threads up by primary key.
    _, seen = statements(fixture_index, "the", filters=filters)
    ranking = [s for s in seen if "bm25(" in s]
    assert len(ranking) == len(query.SCOPES["all"])
    conn = schema.connect_ro(schema.db_path(fixture_index))
    try:
        for sql in ranking:
            plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
            scans = [p for p in plan if p.startswith(("SCAN", "SEARCH")) and p != "SCAN m"]
            assert "VIRTUAL TABLE" in scans[0], plan
            assert not any("threads_mode_date" in p or p == "SCAN t" for p in plan), plan
    finally:
        conn.close()


def test_snippets_are_asked_with_the_positive_terms_only(fixture_index: Path) -> None:
    result, seen = statements(fixture_index, "the NOT basil")
    assert result.hits and all("\x02" in h.snippet for h in result.hits)
    snippets = [s for s in seen if "snippet(" in s]
    # A statement a column, best weighted first, stopping at the first one that matched.
    assert len(result.hits) <= len(snippets) <= 5 * len(result.hits)
    assert not any("NOT" in s for s in snippets)


@pytest.mark.parametrize(
    ("text", "positive"),
    [
        ("示例 NOT 演示", '"示 例"'),
        ("heat NOT pump", "heat"),
        ("a NOT (b OR c) d", "a d"),
        ("a NOT title:b c", "a c"),
        ("a NOT {title url}: (x y) z", "a z"),
        ("a NOT NEAR(b c, 3)", "a"),
        ("title:foo* NOT bar*", "title:foo*"),
        ("a NOT b NOT c", "a"),
        ("sub* OR x", "sub* OR x"),  # no NOT: unchanged
    ],
)
def test_positive_query(text: str, positive: str) -> None:
    got = positive_query(rewrite_query(text))
    assert got == positive
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(title, url)")
    conn.execute("SELECT * FROM t WHERE t MATCH ?", (got,)).fetchall()  # FTS5 parses it


def test_a_common_term_ranks_a_bounded_set_and_says_so(
    fixture_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    full, _ = statements(fixture_index, "the")
    monkeypatch.setattr(query, "CANDIDATES", 3)
    bounded, seen = statements(fixture_index, "the")
    assert "turns" in bounded.bounded and "threads" not in bounded.bounded
    assert "common term: ranked the 3 newest rows of turns" in bounded.note
    assert bounded.hits and {h.uuid for h in bounded.hits} <= {h.uuid for h in full.hits}
    assert bounded.to_json(fixture_index)["bounded"] == bounded.bounded
    # The bound is in every statement over turns: FTS5 stops after CANDIDATES+1 rows,
    # newest first, or walks a span of rowids; bm25() (which would count every row that
    # holds the term) ranks only a table under the bound.
    over_turns = [s for s in seen if "turns_fts MATCH" in s and "snippet(" not in s]
    assert over_turns and all(
        "ORDER BY f.rowid DESC LIMIT 4" in s or "rowid BETWEEN" in s for s in over_turns
    )
    assert not any("bm25(turns_fts" in s for s in seen)
    assert any("bm25(threads_fts" in s for s in seen)


def test_a_common_term_ranks_where_it_matched_first(
    fixture_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Over the bound, a row holding the term in its query (weight 10) ranks above one
    # holding it only in its work log (weight 1), as bm25's column weights would have it.
    monkeypatch.setattr(query, "CANDIDATES", 3)
    conn = schema.connect_ro(schema.db_path(fixture_index))
    try:
        rowids = [r for (r,) in conn.execute("SELECT id FROM turns ORDER BY id DESC LIMIT 4")]
        weights = query._column_weights(conn, "turns", schema.FTS_TABLES["turns"], "the", rowids)
        in_query = {
            r for (r,) in conn.execute("SELECT id FROM turns WHERE query LIKE '%the %'")
        } & set(rowids)
        best, over = query._approximate(
            conn,
            "turns",
            schema.FTS_TABLES["turns"],
            "the",
            20,
            [
                (t, r)
                for r, t in conn.execute("SELECT id, thread_id FROM turns ORDER BY id DESC LIMIT 4")
            ],
            min(rowids),
        )
    finally:
        conn.close()
    assert over is True
    assert in_query and all(weights[r] >= 10 for r in in_query)
    assert [s for s, *_ in best] == sorted(s for s, *_ in best)


def test_a_search_loads_no_index_builder(fixture_index: Path) -> None:
    # The builder (extract, parser, renderer text) and urllib.request cost ~100 ms of every
    # search's start-up; a search that finds its index in place needs neither.
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from pplx_export.cli.export import main\n"
        f"r = CliRunner().invoke(main, ['search', 'heat', '--out', {str(fixture_index)!r}, '-q'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print(sorted(m for m in ('pplx_export.search.index', 'pplx_export.parse.thread',"
        " 'urllib.request') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
