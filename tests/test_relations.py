"""`pplx-export relations`: the four edge kinds of protocol §8 on an archive built for them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pplx_export.cli.export import main
from pplx_export.commands.rerender.run import rerender
from pplx_export.emulator import run_emulator
from pplx_export.pipeline.relation_edges import (
    SubAgentRef,
    ThreadFacts,
    build_edges,
    normalize_query,
)
from pplx_export.pipeline.relation_facts import CACHE_NAME, clear_journal, journal_lines
from pplx_export.render.relations import render_edges_jsonl
from pplx_export.renderer_version import RENDERER_VERSION
from pplx_export.store.docs import connect, delete_doc, load_bytes, save_bytes
from pplx_export.util.threadref import slug_tail
from tests.spaces_support import snapshot, space, uid, write_thread

US = 1_790_000_000_000_000


@pytest.mark.parametrize(
    ("query", "key"),
    [
        ("  Plan a TRIP   to Oslo?! ", "plan a trip to oslo"),
        ("ｆｕｌｌｗｉｄｔｈ，", "fullwidth"),  # NFKC folds the width, the comma is stripped
        ("Straße…", "strasse"),
        ("?!", ""),
    ],
)
def test_normalize_query(query: str, key: str) -> None:
    assert normalize_query(query) == key


def build_archive(root: Path) -> None:
    ocean = space("ocean-notes", "Ocean Notes")
    # references: an upper-case thread link in the answer, a bare upper-case UUID in a query
    link = f"https://www.perplexity.ai/search/{uid(2).upper()}"
    write_thread(root, uid(1), title="Tides", space_ref=ocean, answer=f"See {link} for more.")
    write_thread(root, uid(2), title="Waves", space_ref=ocean, answer="Waves are wind-driven.")
    write_thread(root, uid(6), title="Mentions", query=f"what did {uid(2).upper()} say?")
    # same_prompt: three first queries equal after normalisation, written out of time order
    write_thread(root, uid(4), title="Oslo b", query="  plan a TRIP to oslo ",
                 created_us=US + 2, query_source="perplexity_tasks")  # fmt: skip
    write_thread(root, uid(3), title="Oslo a", query="Plan a trip to Oslo?",
                 created_us=US + 1, query_source="perplexity_tasks")  # fmt: skip
    write_thread(root, uid(5), title="Oslo c", query="Plan a trip to Oslo!!", created_us=US + 3)
    # no edge: its own UUID, a UUID not in the archive, a similar but different prompt
    write_thread(root, uid(7), title="Alone", query="Plan a trip to Bergen?",
                 answer=f"{uid(7)} and {uid(99)} and perplexity.ai/search/{uid(98)}")  # fmt: skip
    # no raw files: identity and space from thread.json, content from conversation.md
    write_thread(root, uid(8), title="Shell", raw=False, space_ref=space("kitchen"),
                 query="Plan a trip to Oslo?",
                 conversation=f"# Shell\n\nPlan a trip to Oslo?\n\nSee {uid(1)}.\n")  # fmt: skip


def run(root: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["relations", "--out", str(root), *args])
    return result.exit_code, result.stdout, result.stderr


def edges_of(root: Path) -> list[dict[str, str]]:
    text = (root / "relations" / "edges.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines()]


def test_relations_finds_every_edge_and_no_more(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    build_archive(root)
    with run_emulator() as emu:
        result = CliRunner().invoke(
            main, ["relations", "--out", str(root)], env={"PPLX_BASE_URL": emu.base_url}
        )
        assert emu.stats()["total"] == 0  # offline: not one request
    assert result.exit_code == 0, result.output
    edges = [(e["kind"], e["src"], e["dst"], e["evidence"]) for e in edges_of(root)]
    key = "plan a trip to oslo"
    assert edges == [
        ("same_space", uid(8), "space:kitchen", "member of kitchen"),
        ("same_space", uid(1), "space:ocean-notes", "member of ocean-notes"),
        ("same_space", uid(2), "space:ocean-notes", "member of ocean-notes"),
        ("same_prompt", uid(3), uid(4), f"same first query (perplexity_tasks): {key}"),
        ("same_prompt", uid(4), uid(5), f"same first query (manual_resend): {key}"),
        ("references", uid(1), uid(2), "thread link in answer/citation; uuid mentioned in content"),
        ("references", uid(6), uid(2), "uuid mentioned in content"),
        ("references", uid(8), uid(1), "uuid mentioned in content"),
    ]
    graph = (root / "relations" / "graph.md").read_text("utf-8")
    assert graph.startswith("# Relations graph\n\nEdges: 8\n")
    assert "| same_space | 3 |" in graph and "| references | 3 |" in graph
    assert "- 3 threads `plan a trip to oslo`:" in graph
    assert "```mermaid" in graph
    assert "[Tides](../alice/search/2026-11-01_Tides_00000001/conversation.md)" in graph


def test_a_corrupt_thread_is_reported_and_the_rest_is_written(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    build_archive(root)
    broken = write_thread(root, uid(9), title="Broken")
    (broken / "raw_entries.json").write_text('{"entries": [', "utf-8")
    code, _out, err = run(root)
    assert code == 4
    assert "Broken_00000009" in err and "raw_entries.json does not parse" in err
    assert len(edges_of(root)) == 8


def test_rerun_changes_no_byte_and_reads_nothing_again(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    build_archive(root)
    code, out, _ = run(root, "--json")
    assert code == 0 and json.loads(out)["parsed"] == 8
    before = snapshot(root)
    mtimes = {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}
    code, out, _ = run(root, "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["parsed"] == 0 and doc["written"] == [] and doc["threads"] == 8
    assert snapshot(root) == before
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()} == mtimes


def test_a_changed_thread_is_read_again(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    build_archive(root)
    run(root)
    write_thread(root, uid(2), title="Waves", space_ref=space("ocean-notes", "Ocean Notes"),
                 answer=f"Compare with {uid(7)}, more than before.")  # fmt: skip
    code, out, _ = run(root, "--json")
    assert code == 0 and json.loads(out)["parsed"] == 1
    assert ("references", uid(2), uid(7)) in {
        (e["kind"], e["src"], e["dst"]) for e in edges_of(root)
    }


def no_rebuild(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the graph was built again")

    monkeypatch.setattr("pplx_export.commands.relations.run.build_edges", fail)


def test_files_rewritten_with_the_same_facts_leave_the_graph_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A re-export rewrites a thread's raw files; when its facts come out the same, the
    graph is not rebuilt (nothing written), and the cache takes the new stats so the next
    run reads nothing again."""
    root = tmp_path / "archive"
    build_archive(root)
    run(root)
    outputs = {p: p.stat().st_mtime_ns for p in (root / "relations").iterdir()}
    entries = next(root.glob(f"*/*/*{uid(2)[:8]}/raw_entries.json"))
    entries.write_bytes(entries.read_bytes())  # same bytes, new mtime
    no_rebuild(monkeypatch)
    code, out, _ = run(root, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["parsed"] == 1 and doc["written"] == []
    assert {p: p.stat().st_mtime_ns for p in (root / "relations").iterdir()} == outputs
    code, out, _ = run(root, "--json")
    assert code == 0 and json.loads(out)["parsed"] == 0


def cache_doc(root: Path) -> dict[str, Any]:
    """The relation facts snapshot, as stored in the state store."""
    doc = json.loads(load_bytes(root, CACHE_NAME) or b"")
    assert isinstance(doc, dict)
    return doc


def set_journal(root: Path, lines: list[bytes]) -> None:
    """Replace the journal's lines (as a torn or foreign writer would have left them)."""
    clear_journal(root)
    with connect(root, write=True) as db:
        assert db is not None
        db.executemany(
            "INSERT INTO relation_facts_journal (line) VALUES (?)", ((x,) for x in lines)
        )


def test_a_journal_with_the_same_facts_is_folded_without_a_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "archive"
    build_archive(root)
    rerender(root, jobs=1)
    run(root)  # the snapshot now holds every thread's facts
    outputs = {p: p.stat().st_mtime_ns for p in (root / "relations").iterdir()}
    for entries in root.glob("*/*/*/raw_entries.json"):
        entries.write_bytes(entries.read_bytes())
    rerender(root, jobs=1)  # every thread rendered again: the same facts, journalled
    assert len(journal_lines(root)) == 7
    no_rebuild(monkeypatch)
    code, out, _ = run(root, "--json")
    assert code == 0 and json.loads(out)["parsed"] == 0 and json.loads(out)["written"] == []
    assert not journal_lines(root)
    assert {p: p.stat().st_mtime_ns for p in (root / "relations").iterdir()} == outputs


def test_subagent_edges_name_archived_sub_threads() -> None:
    parent = ThreadFacts(uuid=uid(1), rel="a/computer/x")
    parent.sub_agents = [
        SubAgentRef("toolu_A", "Benchmark builds", uid(2)),
        SubAgentRef("toolu_A", "Benchmark builds", uid(2)),  # one edge per distinct id
        SubAgentRef("toolu_B", "Not archived", uid(99)),
    ]
    child = ThreadFacts(uuid=uid(2), rel="a/computer/y")
    edges = build_edges([parent, child])
    assert [(e.kind, e.src, e.dst, e.evidence) for e in edges] == [
        (
            "subagent_of",
            uid(1),
            "toolu_A",
            f"Benchmark builds (sub-agent thread archived: {uid(2)})",
        ),
        ("subagent_of", uid(1), "toolu_B", "Not archived"),
    ]


def test_an_empty_graph_is_one_newline(tmp_path: Path) -> None:
    assert render_edges_jsonl([]) == "\n"
    root = tmp_path / "archive"
    root.mkdir()
    code, _out, _err = run(root)
    assert code == 0
    assert (root / "relations" / "edges.jsonl").read_text("utf-8") == "\n"


def test_a_missing_archive_is_a_clear_error(tmp_path: Path) -> None:
    code, _out, err = run(tmp_path / "nope")
    assert code == 2 and "no archive at" in err
    assert not (tmp_path / "nope").exists()


def test_graph_md_lists_twenty_members_and_counts_the_rest() -> None:
    from pplx_export.models import RelationEdge
    from pplx_export.render.relations import ThreadRef, render_graph_md

    edges = [RelationEdge(uid(n), "space:big", "same_space", "member of big") for n in range(25)]
    threads = {uid(n): ThreadRef(f"a/search/d{n}", f"T{n}") for n in range(25)}
    graph = render_graph_md(edges, threads)
    assert "- `space:big`: 25 threads" in graph
    assert graph.count("](../a/search/d") == 20
    assert "  - … and 5 more (all in edges.jsonl)" in graph
    assert "```mermaid" not in graph  # 26 nodes: past the diagram limit


def test_after_a_rerender_relations_parses_nothing_and_finds_the_same_graph(
    tmp_path: Path,
) -> None:
    """The re-render's workers leave each thread's facts in the cache journal: the next
    `relations` reads no raw file, and its graph is the one a cold run finds. (The shell
    thread has no raw files: re-render fails it, `relations` reads its conversation.md.)"""
    root = tmp_path / "archive"
    build_archive(root)
    assert rerender(root, jobs=1).failed == 1
    assert len(journal_lines(root)) == 7
    code, out, _ = run(root, "--json")
    assert code == 0 and json.loads(out)["parsed"] == 1  # the shell only
    assert not journal_lines(root)  # folded into the snapshot
    warm = (root / "relations" / "edges.jsonl").read_bytes()
    assert len(edges_of(root)) == 8
    assert rerender(root, jobs=1).failed == 1
    assert not journal_lines(root)  # nothing changed: nothing to record
    delete_doc(root, CACHE_NAME)
    code, out, _ = run(root, "--json")  # cold: every thread parsed
    assert code == 0 and json.loads(out)["parsed"] == 8
    assert (root / "relations" / "edges.jsonl").read_bytes() == warm


def test_a_torn_journal_line_costs_one_parse(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    build_archive(root)
    rerender(root, jobs=1)
    lines = journal_lines(root)
    set_journal(root, [*lines[:-1], lines[-1][: len(lines[-1]) // 2]])
    code, out, _ = run(root, "--json")
    assert code == 0 and json.loads(out)["parsed"] == 2  # the torn one and the shell
    assert len(edges_of(root)) == 8


def test_a_damaged_cache_record_costs_one_parse(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    build_archive(root)
    run(root)
    doc = cache_doc(root)
    rel = sorted(doc["threads"])[0]
    doc["threads"][rel]["facts"]["links"] = "not a list"
    save_bytes(root, CACHE_NAME, json.dumps(doc))
    warm = (root / "relations" / "edges.jsonl").read_bytes()
    code, out, _ = run(root, "--json")
    assert code == 0 and json.loads(out)["parsed"] == 1
    assert (root / "relations" / "edges.jsonl").read_bytes() == warm


def test_without_msgspec_the_cache_reads_and_writes_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """msgspec is a dependency, but the stdlib path must keep working: the same cache
    bytes' meaning, the same graph."""
    root = tmp_path / "archive"
    build_archive(root)
    rerender(root, jobs=1)
    code, out, _ = run(root, "--json")
    warm = (root / "relations" / "edges.jsonl").read_bytes()
    cache = cache_doc(root)
    monkeypatch.setattr("pplx_export.util.jsontext._fast_decode", None)
    monkeypatch.setattr("pplx_export.util.jsontext._fast_encode", None)
    (root / "relations" / "edges.jsonl").unlink()
    code, out, _ = run(root, "--json")
    assert code == 0 and json.loads(out)["parsed"] == 0
    assert (root / "relations" / "edges.jsonl").read_bytes() == warm
    again = cache_doc(root)
    assert again["threads"] == cache["threads"]


def test_title_slug_links_are_references(tmp_path: Path) -> None:
    """Threads made before 2026 are linked by title-slug URLs (protocol §9.4): the last 22
    characters name the thread, in an answer or a citation, /search/ or /thread/."""
    root = tmp_path / "archive"
    site = "https://www.perplexity.ai"
    waves = f"{site}/search/why-do-waves-break-{slug_tail(uid(2))}"
    write_thread(root, uid(1), title="Tides", answer=f"As [before]({waves}), tides differ.")
    write_thread(root, uid(2), title="Waves")
    write_thread(root, uid(3), title="Cites", urls=(f"{site}/thread/tides-{slug_tail(uid(1))}",))
    # Bare UUID and slug link of the same thread: two evidences on one edge, as for UUIDs.
    write_thread(root, uid(4), title="Both", query=f"what did {uid(2)} say?",
                 answer=f"See perplexity.ai/search/{slug_tail(uid(2))}.")  # fmt: skip
    # No edge: a slug of a thread not archived, a tail that is no UUID, a space's slug.
    broken = slug_tail(uid(1))[:-1] + "R"
    write_thread(root, uid(5), title="None",
                 answer=f"{site}/search/x-{slug_tail(uid(99))} {site}/search/y-{broken} "
                 f"{site}/spaces/notes-{slug_tail(uid(2))}")  # fmt: skip
    code, _out, err = run(root)
    assert code == 0, err
    refs = [
        (e["src"], e["dst"], e["evidence"]) for e in edges_of(root) if e["kind"] == "references"
    ]
    assert refs == [
        (uid(1), uid(2), "thread link in answer/citation"),
        (uid(3), uid(1), "thread link in answer/citation"),
        (uid(4), uid(2), "thread link in answer/citation; uuid mentioned in content"),
    ]


def test_facts_cached_before_title_slug_links_are_read_again(tmp_path: Path) -> None:
    """A cache of format 2 (links of UUID URLs only) is not trusted: its facts could miss
    title-slug links."""
    root = tmp_path / "archive"
    waves = f"https://www.perplexity.ai/search/waves-{slug_tail(uid(2))}"
    write_thread(root, uid(1), title="Tides", answer=f"See {waves}.")
    write_thread(root, uid(2), title="Waves")
    assert run(root)[0] == 0
    cache = cache_doc(root)
    cache["format"] = 2
    for record in cache["threads"].values():
        record["facts"]["links"] = []
    save_bytes(root, CACHE_NAME, json.dumps(cache))
    (root / "relations" / "edges.jsonl").unlink()
    code, out, _ = run(root, "--json")
    assert code == 0 and json.loads(out)["parsed"] == 2
    assert [e["dst"] for e in edges_of(root) if e["kind"] == "references"] == [uid(2)]
    # A journal line a re-render of the earlier format appended is skipped as well.
    threads = cache_doc(root)["threads"]
    rel, record = next((k, v) for k, v in threads.items() if "Tides" in k)
    record["facts"]["links"] = []
    line = {"rel": rel, "parser": RENDERER_VERSION, **record}
    set_journal(root, [json.dumps(line).encode()])
    code, out, _ = run(root, "--json")
    assert code == 0 and json.loads(out)["parsed"] == 0
    assert [e["dst"] for e in edges_of(root) if e["kind"] == "references"] == [uid(2)]
