"""An online export parses each thread once (issue 28 point 3): the search index and the
relation facts are recorded from the Conversation at hand (`sync/pipeline.after_write`),
not read back from the files just written. What the index holds is what a rebuild from
the files reads."""

from __future__ import annotations

import sqlite3
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pplx_export.parse.thread as parse_thread_module
from pplx_export.search import index as search_index
from pplx_export.search.schema import db_path
from tests.e2e_support import E2E, fixture_threads, signed_in


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """parse_thread wrapped by a counter (by web uuid) wherever a module holds it."""
    real = parse_thread_module.parse_thread
    counts: Counter[str] = Counter()

    def counting(*args: Any, **kwargs: Any) -> Any:
        conv = real(*args, **kwargs)
        counts[conv.web_uuid] += 1
        return conv

    # Every module attribute bound to the parser: `from ... import parse_thread` copies.
    for module in list(sys.modules.values()):
        if module is not None and getattr(module, "parse_thread", None) is real:
            monkeypatch.setattr(module, "parse_thread", counting)
    yield counts


def _rows(root: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db_path(root))
    try:
        threads = conn.execute(
            "SELECT uuid, dir, account, author, export_via, mode, title, space, space_title,"
            " date, updated, url, n_turns FROM threads ORDER BY dir"
        ).fetchall()
        turns = conn.execute(
            "SELECT t.dir, u.turn, u.file, u.query, u.answer, u.work, u.agents, u.council"
            " FROM turns u JOIN threads t ON t.id = u.thread_id ORDER BY t.dir, u.turn"
        ).fetchall()
        sources = conn.execute(
            "SELECT t.dir, s.turn, s.title, s.url FROM sources s"
            " JOIN threads t ON t.id = s.thread_id ORDER BY t.dir, s.turn, s.url, s.title"
        ).fetchall()
        reports = conn.execute(
            "SELECT t.dir, r.file, r.title, r.body FROM reports r"
            " JOIN threads t ON t.id = r.thread_id ORDER BY t.dir"
        ).fetchall()
    finally:
        conn.close()
    return [*threads, *turns, *sources, *reports]


def _signatures(root: Path) -> dict[str, str]:
    conn = sqlite3.connect(db_path(root))
    try:
        return dict(conn.execute("SELECT dir, signature FROM threads").fetchall())
    finally:
        conn.close()


@pytest.mark.parametrize("index_before", [True, False], ids=["index", "first-run"])
def test_a_sync_parses_each_exported_thread_once(
    tmp_path: Path, parses: Counter[str], index_before: bool
) -> None:
    with signed_in(tmp_path) as env:
        # With an index, the export hook updates it; without (an archive's first run), the
        # first export builds it from the archive, but for the thread it has rows for.
        if index_before:
            env.out.mkdir(parents=True)
            search_index.create_empty(env.out)
        result = env.cli("sync")
        assert result.exit_code == 0, result.output
        exported = {r["dir"] for r in env.state().values() if r["status"] == "ok"}
        assert len(exported) == len(fixture_threads())
        assert set(parses) == set(fixture_threads())
        assert set(parses.values()) == {1}, parses
        _same_as_a_rebuild(env)


def _same_as_a_rebuild(env: E2E) -> None:
    """The rows the export recorded from its parse are those a rebuild reads from disk, and
    their signatures are current (a later update finds nothing to re-read)."""
    recorded, signatures = _rows(env.out), _signatures(env.out)
    assert all("#" in s and not s.endswith("#") for s in signatures.values()), signatures
    search_index.rebuild(env.out, jobs=1)
    assert _rows(env.out) == recorded
    assert _signatures(env.out) == signatures
