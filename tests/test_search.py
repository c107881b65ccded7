"""Search: what is indexed, where it is found, filters, ranking, CJK, syntax fallback, and
how the index follows the archive (export/re-render hooks, rebuild, damage)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pplx_export.cli.export import main
from pplx_export.commands.rerender.run import rerender
from pplx_export.search import index, query, schema
from pplx_export.search.text import plain, rewrite_query, segment
from tests.e2e_support import FIXTURES
from tests.search_support import write_search_thread


@pytest.fixture(scope="module")
def fixture_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("search") / "archive"
    shutil.copytree(FIXTURES, root)
    stats = index.rebuild(root)
    assert stats.indexed == len(list(FIXTURES.glob("*/*/*"))) and not stats.failed
    return root


def find(root: Path, text: str, **kwargs: Any) -> query.SearchResult:
    conn = schema.connect_ro(schema.db_path(root))
    try:
        return query.search(conn, text, **kwargs)
    finally:
        conn.close()


def titles(result: query.SearchResult) -> list[str]:
    return [h.title for h in result.hits]


@pytest.mark.parametrize(
    ("text", "scope", "title", "field", "turn"),
    [
        ("lifetimes", "query", "How do Rust lifetimes work?", "query", None),
        ("hardened", "answer", "Audit the nginx config on my home server", "answer", 2),
        ('"battery care"', "work", "Compare three commuter e-bikes", "work", 3),
        ('"hub gears"', "work", "Compare three commuter e-bikes", "sub-agent", 1),
        ('"one file"', "answer", "Which database should a small bookshop use", "council", 1),
        ('"Validating References"', "sources", "How do Rust lifetimes work?", "source", 1),
    ],
)
def test_finds_each_kind_of_text(
    fixture_index: Path, text: str, scope: str, title: str, field: str, turn: int | None
) -> None:
    result = find(fixture_index, text, scope=scope)
    assert result.note == ""
    assert [h.title[: len(title)] for h in result.hits] == [title]
    hit = result.hits[0]
    assert hit.field == field
    if turn is not None:
        assert hit.turn == turn
        assert hit.path.endswith(f"turns/turn_{turn:04d}.md")
    assert (fixture_index / hit.path).parent.parent.is_dir()
    assert query.MARK_START in hit.snippet and query.MARK_END in hit.snippet
    assert find(fixture_index, text).hits[0].title == hit.title  # `--in all` finds it too


def test_in_narrows_where_to_look(fixture_index: Path) -> None:
    assert find(fixture_index, '"hub gears"', scope="query").hits == []
    assert find(fixture_index, '"hub gears"', scope="answer").hits == []
    assert find(fixture_index, "hardened", scope="sources").hits == []


def test_filters_combine(fixture_index: Path) -> None:
    everything = titles(find(fixture_index, "the", limit=50))
    assert len(everything) >= 6
    computer = titles(find(fixture_index, "the", filters=query.Filters(mode="computer"), limit=50))
    assert computer and set(computer) < set(everything)
    in_space = find(fixture_index, "the", filters=query.Filters(space="home-lab-p2x7"), limit=50)
    assert sorted(titles(in_space)) == [
        "Audit the nginx config on my home server",
        "Heat pump efficiency in cold climates",
    ]
    both = query.Filters(mode="computer", space="Home-Lab-P2X7")  # any case
    assert titles(find(fixture_index, "the", filters=both)) == [
        "Audit the nginx config on my home server"
    ]
    assert (
        find(fixture_index, "the", filters=query.Filters(mode="search", space="home-lab-p2x7")).hits
        == []
    )
    june = query.Filters(
        mode="computer", since="2031-06-10", until="2031-06-15", accounts=("tomas",)
    )
    assert sorted(titles(find(fixture_index, "the", filters=june, limit=50))) == [
        "Compare three commuter e-bikes",
        "Draft chapter two of the garden handbook",
    ]
    assert find(fixture_index, "the", filters=query.Filters(accounts=("nobody",))).hits == []


def test_title_and_query_rank_above_work_text(tmp_path: Path) -> None:
    write_search_thread(
        tmp_path, "w", "Garden plans", [("What to plant?", "Tomatoes.", "kohlrabi")]
    )
    write_search_thread(tmp_path, "q", "Kohlrabi growing", [("How to grow kohlrabi?", "Cool.", "")])
    write_search_thread(tmp_path, "a", "Vegetables", [("Which greens?", "Try kohlrabi.", "")])
    index.rebuild(tmp_path)
    hits = find(tmp_path, "kohlrabi").hits
    assert [h.title for h in hits] == ["Kohlrabi growing", "Vegetables", "Garden plans"]
    assert [h.field for h in hits] == ["query", "answer", "work"]


def test_a_two_character_chinese_word_finds_its_turn(tmp_path: Path) -> None:
    write_search_thread(
        tmp_path,
        "zh",
        "量子计算笔记",
        [
            ("今天天气怎么样", "晴天。", ""),
            ("量子计算是什么", "我们研究量子计算的发展，AI量子算法。", "搜索量子比特"),
        ],
    )
    write_search_thread(tmp_path, "ja", "日本語", [("東京の天気", "東京は晴れです。", "")])
    index.rebuild(tmp_path)
    result = find(tmp_path, "计算", scope="answer")
    assert [(h.title, h.turn) for h in result.hits] == [("量子计算笔记", 2)]
    assert result.hits[0].snippet == "我们研究量子\x02计算\x03的发展，AI 量子算法。"
    assert find(tmp_path, "东京").hits == []  # simplified vs Japanese form: no false hit
    assert [h.title for h in find(tmp_path, "東京").hits] == ["日本語"]
    assert find(tmp_path, "量化").hits == []
    assert [h.turn for h in find(tmp_path, "比特", scope="work").hits] == [2]
    # Operators still work around CJK words, and a word next to Latin letters is split off.
    assert len(find(tmp_path, "量子 OR 東京").hits) == 2
    assert [h.title for h in find(tmp_path, "AI量子").hits] == ["量子计算笔记"]


def test_segmentation_and_query_rewrite() -> None:
    assert segment("量子计算 and AI量子。ok") == "量 子 计 算 and AI 量 子。ok"
    assert plain(segment("我们\x02量子\x03计算")) == "我们\x02量子\x03计算"
    assert segment("plain ascii") == "plain ascii"
    assert rewrite_query("量子*") == '"量 子"*'
    assert (
        rewrite_query('NEAR(量子 发展, 5) OR "量子计算"')
        == 'NEAR("量 子" "发 展", 5) OR "量 子 计 算"'
    )
    assert rewrite_query("e-bike OR node.js") == '"e-bike" OR "node.js"'
    assert rewrite_query("title:量子") == 'title:"量 子"'


@pytest.mark.parametrize("text", ['foo"bar', "AND", "(unclosed", "nosuchcolumn:x", "NEAR("])
def test_a_query_fts5_cannot_parse_falls_back_to_a_phrase(fixture_index: Path, text: str) -> None:
    result = find(fixture_index, text)
    assert "searched as a phrase" in result.note


def test_fts5_syntax_works(fixture_index: Path) -> None:
    assert titles(find(fixture_index, "lifetim*", scope="query")) == ["How do Rust lifetimes work?"]
    assert find(fixture_index, '"pump efficiency"').hits
    assert not find(fixture_index, '"efficiency pump"').hits
    either = titles(find(fixture_index, "basil OR kohlrabi OR lifetimes", scope="query"))
    assert sorted(either) == ["Best way to store fresh basil", "How do Rust lifetimes work?"]
    assert find(fixture_index, "NEAR(heat climates, 4)", scope="query").hits
    assert not find(fixture_index, "basil NOT basil").hits


def test_search_never_writes(fixture_index: Path) -> None:
    db = schema.db_path(fixture_index)
    before = (db.stat().st_mtime_ns, sorted(p.name for p in db.parent.iterdir()))
    result = CliRunner().invoke(main, ["search", "basil", "--out", str(fixture_index)])
    assert result.exit_code == 0, result.output
    assert (db.stat().st_mtime_ns, sorted(p.name for p in db.parent.iterdir())) == before


def test_cli_output_piped_and_json(fixture_index: Path) -> None:
    out = str(fixture_index)
    result = CliRunner().invoke(main, ["search", "basil", "--out", out, "--limit", "1"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "1. Best way to store fresh basil"
    assert lines[1] == "   search · 2031-06-25 · maya"
    assert lines[2].startswith("   query, turn 1: ") and "[basil]" in lines[2]
    assert lines[3].endswith("turns/turn_0001.md") and lines[3].strip().startswith(out)
    doc = json.loads(CliRunner().invoke(main, ["search", "basil", "--out", out, "--json"]).stdout)
    assert doc["count"] == len(doc["results"]) == 1
    assert doc["results"][0]["snippet"].count("[basil]") >= 1
    assert doc["results"][0]["path"].startswith(out)
    bad = CliRunner().invoke(main, ["search", 'foo"bar', "--out", out])
    assert bad.exit_code == 0 and "note: not valid FTS5 query syntax" in bad.stderr
    wrong = CliRunner().invoke(main, ["search", "x", "--out", out, "--since", "June"])
    assert wrong.exit_code == 2 and "not a date" in wrong.output


def test_account_filter_only_when_given(fixture_index: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('default_account = "tomas"\n[accounts.tomas]\ndisplay_name = "tomas"\n')
    base = ["search", "the", "--out", str(fixture_index), "--json", "--config", str(config)]
    every = json.loads(CliRunner().invoke(main, base).stdout)["results"]
    assert {r["account"] for r in every} == {"maya", "tomas"}
    only = json.loads(CliRunner().invoke(main, [*base, "--account", "tomas"]).stdout)["results"]
    assert only and {r["account"] for r in only} == {"tomas"}


# ------------------------------------------------------------------ keeping it current


def rows_for(root: Path, uuid: str) -> list[tuple[str, str]]:
    conn = sqlite3.connect(schema.db_path(root))
    try:
        return list(
            conn.execute(
                "SELECT t.dir, u.answer FROM threads t JOIN turns u ON u.thread_id = t.id"
                " WHERE t.uuid = ? ORDER BY u.turn",
                (uuid,),
            )
        )
    finally:
        conn.close()


def test_rerender_indexes_changed_threads_and_leaves_the_rest(tmp_path: Path) -> None:
    d = write_search_thread(tmp_path, "c", "Cheese", [("Which cheese?", "Gouda keeps well.", "")])
    write_search_thread(tmp_path, "o", "Other", [("Other?", "Nothing here.", "")])
    assert not schema.db_path(tmp_path).exists()
    rerender(tmp_path, jobs=1)  # no index yet: built from the archive at the end
    assert [h.title for h in find(tmp_path, "gouda").hits] == ["Cheese"]
    db = schema.db_path(tmp_path)
    stamp = db.stat().st_mtime_ns
    rerender(tmp_path, jobs=1)  # no-op: the index is not written
    assert db.stat().st_mtime_ns == stamp
    # The thread changes (a new answer): its rows are replaced, not added to.
    raw = json.loads((d / "raw_entries.json").read_text())
    raw["entries"][0]["text"] = raw["entries"][0]["text"].replace("Gouda", "Cheddar")
    (d / "raw_entries.json").write_text(json.dumps(raw))
    uuid = json.loads((d / "thread.json").read_text())["web_uuid"]
    rerender(tmp_path, jobs=1)
    assert find(tmp_path, "gouda").hits == []
    assert [h.title for h in find(tmp_path, "cheddar").hits] == ["Cheese"]
    assert len(rows_for(tmp_path, uuid)) == 1


def test_update_moves_a_thread_whose_directory_changed(tmp_path: Path) -> None:
    d = write_search_thread(tmp_path, "m", "Moving", [("Where?", "Zanzibar.", "")])
    index.rebuild(tmp_path)
    uuid = json.loads((d / "thread.json").read_text())["web_uuid"]
    newer = d.with_name(d.name.replace("2031-05-04", "2031-07-01"))
    d.rename(newer)
    stats = index.update_threads(tmp_path, [newer.relative_to(tmp_path).as_posix()])
    assert stats.indexed == 1
    assert [r[0] for r in rows_for(tmp_path, uuid)] == [newer.relative_to(tmp_path).as_posix()]
    stats = index.update_threads(tmp_path, [d.relative_to(tmp_path).as_posix()])  # gone
    assert (stats.indexed, stats.removed) == (0, 0)
    assert len(find(tmp_path, "zanzibar").hits) == 1


def test_an_unreadable_thread_loses_its_rows_and_the_rest_is_indexed(tmp_path: Path) -> None:
    d = write_search_thread(tmp_path, "b", "Broken later", [("Q?", "Quokka.", "")])
    write_search_thread(tmp_path, "g", "Good", [("Q?", "Quokka too.", "")])
    index.rebuild(tmp_path)
    (d / "raw_entries.json").write_text("{not json")
    stats = index.update_threads(tmp_path, [d.relative_to(tmp_path).as_posix()])
    assert len(stats.failed) == 1 and "does not parse" in stats.failed[0][1]
    assert [h.title for h in find(tmp_path, "quokka").hits] == ["Good"]
    rebuilt = index.rebuild(tmp_path)
    assert rebuilt.indexed == 1 and len(rebuilt.failed) == 1


@pytest.mark.parametrize("damage", [b"this is not a database at all" * 100, b""])
def test_a_damaged_or_missing_index_is_rebuilt_with_a_warning(
    fixture_index: Path, tmp_path: Path, damage: bytes
) -> None:
    root = tmp_path / "archive"
    shutil.copytree(fixture_index, root)
    db = schema.db_path(root)
    if damage:
        db.write_bytes(damage)
    else:
        db.unlink()
    result = CliRunner().invoke(main, ["search", "basil", "--out", str(root)])
    assert result.exit_code == 0, result.output
    assert "rebuilding it from the archive" in result.stderr
    assert "Best way to store fresh basil" in result.stdout
    assert "rebuilding" not in CliRunner().invoke(main, ["search", "x", "--out", str(root)]).stderr


def test_the_export_hook_repairs_a_damaged_index_and_never_raises(tmp_path: Path) -> None:
    d = write_search_thread(tmp_path, "h", "Hook", [("Q?", "Wombat.", "")])
    db = schema.db_path(tmp_path)
    db.parent.mkdir()
    db.write_bytes(b"garbage" * 1000)
    stats = index.update_threads(tmp_path, [d.relative_to(tmp_path).as_posix()])
    assert stats.rebuilt and stats.indexed == 1
    db.chmod(0o400)
    db.parent.chmod(0o500)
    try:
        # Unwritable: a warning and an error in the stats, never an exception.
        (d / "thread.json").touch()
        index.update_threads(tmp_path, [d.relative_to(tmp_path).as_posix()])
    finally:
        db.parent.chmod(0o700)
        db.chmod(0o600)


def test_rebuild_cli_and_schema_is_datasette_shaped(fixture_index: Path, tmp_path: Path) -> None:
    root = tmp_path / "archive"
    shutil.copytree(fixture_index, root)
    result = CliRunner().invoke(main, ["search", "--rebuild", "--out", str(root)])
    assert result.exit_code == 0, result.output
    assert "search index rebuilt: 10 threads" in result.stderr
    conn = sqlite3.connect(schema.db_path(root))
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    for table in schema.FTS_TABLES:
        assert {table, f"{table}_fts"} <= names
        sql = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = ?", (f"{table}_fts",)
        ).fetchone()[0]
        assert f"content='{table}'" in sql  # how Datasette finds a table's FTS
    fks = {
        r[2]
        for t in ("turns", "sources", "reports")
        for r in conn.execute(f"PRAGMA foreign_key_list({t})")
    }
    assert fks == {"threads"}
    (n,) = conn.execute("SELECT count(*) FROM reports").fetchone()
    assert n == 0  # the fixtures have no report body on disk
    conn.close()


def test_an_export_of_a_changed_thread_replaces_its_rows(tmp_path: Path) -> None:
    from pplx_export.emulator import DEFAULT_EMAIL, run_emulator
    from tests.e2e_support import E2E

    uuid = "24a76805-90eb-5b12-a5e0-d0288d7ceae3"  # Rust lifetimes: 2 turns
    with run_emulator(FIXTURES, page_size=100) as emu:
        env = E2E(emu, tmp_path)
        env.write_files(DEFAULT_EMAIL)
        assert env.cli("export", uuid).exit_code == 0
        assert [h.turn for h in find(env.out, '"lifetime elision"').hits] == [2]
        assert find(env.out, '"Any news since last time"').hits == []
        emu.mutate(touch=uuid)  # a new turn and a new lastUpdated (so a new date directory)
        result = env.cli("export", uuid)
        assert result.exit_code == 0, result.output
    hits = find(env.out, '"Any news since last time"').hits
    assert [(h.title, h.turn) for h in hits] == [("How do Rust lifetimes work?", 3)]
    rows = rows_for(env.out, uuid)
    assert len(rows) == 3  # three turns, once each
    assert {d for d, _ in rows} == {hits[0].path.rsplit("/turns/", 1)[0]}
    assert (env.out / hits[0].path).is_file()
    assert len(find(env.out, "lifetimes").hits) == 1


def test_demo_builds_the_index_and_prints_a_search_that_finds(tmp_path: Path) -> None:
    from pplx_export.commands.setup.demo import run_demo

    root = tmp_path / "demo"
    summary = run_demo(root, quiet=True)
    text = summary.text()
    assert f"search index: {sum(summary.by_mode.values())} threads" in text
    line = next(x for x in text.splitlines() if x.startswith("then search: pplx-export search"))
    assert 'hit(s), first "How do tides work?")' in line
    word = line.split()[4]
    assert find(root, word).hits[0].title == "How do tides work?"
    # The deep-research report body is indexed as a report of its own.
    report = find(root, '"resistance heating"', scope="answer").hits
    assert [(h.field, h.path.rsplit("/", 1)[1]) for h in report] == [("report", "report.md")]


def test_a_markdown_link_in_a_snippet_reads_as_its_text() -> None:
    from pplx_export.search.query import MARK_END, MARK_START, _tidy

    hit = f"see [how {MARK_START}tides{MARK_END} work](https://www.perplexity.ai/search/835c)."
    assert _tidy(hit) == f"see how {MARK_START}tides{MARK_END} work."
    assert _tidy("a [cut short](https://x.example/y") == "a cut short"
    assert _tidy("[1][2] stay, so do [brackets]") == "[1][2] stay, so do [brackets]"


def _dump(root: Path) -> list[tuple[Any, ...]]:
    """Every indexed row, without row ids (they depend on insertion order)."""
    conn = sqlite3.connect(schema.db_path(root))
    try:
        out: list[tuple[Any, ...]] = []
        for table in ("threads", "turns", "sources", "reports"):
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            keep = ", ".join(f"x.{c}" for c in cols if c not in ("id", "thread_id"))
            join = "" if table == "threads" else " JOIN threads t ON t.id = x.thread_id"
            key = "x.dir" if table == "threads" else "t.dir"
            rows = conn.execute(f"SELECT {key}, {keep} FROM {table} x{join}").fetchall()
            out += sorted(rows, key=repr)
        return out
    finally:
        conn.close()


def _ids(root: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(schema.db_path(root))
    try:
        return conn.execute("SELECT id, thread_id FROM turns ORDER BY id").fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("jobs", [1, 2])
def test_rerender_indexes_from_the_workers_parse_without_reading_threads_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    """A re-render that must re-index every thread takes the rows its workers computed from
    the thread they had parsed; the rows are exactly what reading the thread back gives.
    Threads whose files were only touched are re-signed, their rows left as they are."""
    root = tmp_path / "archive"
    shutil.copytree(FIXTURES, root)
    rerender(root, jobs=1)  # rendered, and the index built
    reads: list[str] = []
    real = index.load_thread

    def counting(root_: Path, rel: str) -> tuple[Any, str]:
        reads.append(rel)
        return real(root_, rel)

    monkeypatch.setattr(index, "load_thread", counting)
    # 1. New mtimes, same bytes (a copy, a restore): only signatures change.
    for rel in index.thread_rels(root):
        (root / rel / "thread.json").touch()
    ids = _ids(root)
    assert rerender(root, jobs=jobs).failed == 0
    assert reads == [] and _ids(root) == ids
    assert index.coverage(root, index.thread_rels(root)) == dict.fromkeys(
        index.thread_rels(root), "ok"
    )
    # 2. What the index extracts changed: the workers compute every thread's rows.
    monkeypatch.setattr(index, "EXTRACT_VERSION", "test")
    for rel in index.thread_rels(root):
        (root / rel / "thread.json").touch()
    assert rerender(root, jobs=jobs).failed == 0
    assert reads == []  # no thread read back in the parent
    assert _ids(root) != ids
    via_workers = _dump(root)
    index.rebuild(root)  # the rows (and signatures) as read back from disk
    assert via_workers == _dump(root)
    assert len(reads) == len(index.thread_rels(root))
    monkeypatch.undo()


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_index_signatures_are_asked_batch_by_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    """The parent never holds the signature of every thread of the archive (~18 MB at
    50,000): it asks for those of each batch of work as it hands the batch out."""
    from pplx_export.commands.rerender import pool as rerender_pool

    root = tmp_path / "archive"
    shutil.copytree(FIXTURES, root)
    rerender(root, jobs=1)
    rels = index.thread_rels(root)
    asked: list[list[str]] = []
    real = index.IndexUpdater.signatures

    def spy(self: index.IndexUpdater, batch: list[str]) -> dict[str, str]:
        asked.append(list(batch))
        held = real(self, batch)
        assert set(held) == set(batch)  # every thread of this archive is indexed
        return held

    monkeypatch.setattr(index.IndexUpdater, "signatures", spy)
    monkeypatch.setattr(rerender_pool, "SERIAL_BATCH", 3)
    assert rerender(root, jobs=jobs).failed == 0
    assert sorted(r for batch in asked for r in batch) == sorted(rels)
    assert len(asked) > 1 and max(map(len, asked)) < len(rels)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_first_rerender_builds_the_index_from_its_own_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    """No index yet: an empty one is made at the start and filled with the rows the workers
    computed, so no thread is parsed a second time; the result is what a rebuild gives."""
    root = tmp_path / "archive"
    shutil.copytree(FIXTURES, root)
    reads: list[str] = []
    real = index.load_thread

    def counting(root_: Path, rel: str) -> tuple[Any, str]:
        reads.append(rel)
        return real(root_, rel)

    monkeypatch.setattr(index, "load_thread", counting)
    assert rerender(root, jobs=jobs).failed == 0
    assert reads == []
    built = _dump(root)
    assert len(find(root, "lifetimes").hits) == 1
    index.rebuild(root)
    assert _dump(root) == built
