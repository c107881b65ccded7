"""Re-render's worker processes (`--jobs`, default one per CPU) and the shortcuts that keep a
full re-render near the cost of reading the raw files (benchmarks/RESULTS.md)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from pplx_export import workers
from pplx_export.cli.export import main
from pplx_export.commands.rerender import run as rerender_mod
from pplx_export.commands.rerender.pool import auto_jobs, guided_chunks
from pplx_export.commands.rerender.run import rerender
from pplx_export.models import Conversation
from pplx_export.pipeline.assemble import Engine
from pplx_export.store.render_state import STATE_NAME
from pplx_export.util.atomic import read_with_stat
from tests import archive_fakes
from tests.archive_fakes import DERIVED_STATE, FAKE_ENGINE, make_thread, snapshot

FIXTURES = Path(__file__).parent / "fixtures" / "archive"


@pytest.mark.parametrize("n", [0, 1, 7, 64, 257, 2000])
@pytest.mark.parametrize("jobs", [1, 2, 3, 8])
def test_guided_chunks_cover_everything_in_order_and_shrink(n: int, jobs: int) -> None:
    items = list(range(n))
    taken: list[int] = []

    def source() -> Iterator[int]:
        for i in items:
            taken.append(i)  # how far the chunks have read
            yield i

    chunks: list[list[int]] = []
    for chunk in guided_chunks(source(), n, jobs):
        assert len(taken) == sum(len(c) for c in chunks) + len(chunk)  # read as asked for
        chunks.append(chunk)
    assert [i for c in chunks for i in c] == items
    assert all(0 < len(c) <= 64 for c in chunks)
    # Sizes never grow, so the last chunks (the ones the workers finish on) are small.
    sizes = [len(c) for c in chunks]
    assert sizes == sorted(sizes, reverse=True)
    if n >= 1000:
        assert sizes[0] == 64 and sizes[-1] <= 4


def test_auto_jobs_one_per_cpu_with_a_fair_share(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(workers, "busy_cpus", lambda: 0.0)  # an idle machine
    assert auto_jobs(10_000) == 4
    assert auto_jobs(64 * 3) == 3  # 64 threads per worker at least
    assert auto_jobs(63) == 1 and auto_jobs(0) == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    assert auto_jobs(10**6) == 8  # capped


def test_parallel_run_writes_what_a_single_job_writes(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    shutil.copytree(FIXTURES, one)
    shutil.copytree(FIXTURES, two)
    s1, s2 = rerender(one, jobs=1), rerender(two, jobs=2)
    assert (s1.total, s1.failed) == (s2.total, s2.failed) == (len(list(one.glob("*/*/*"))), 0)
    a = {k: v[0] for k, v in snapshot(one).items() if k not in DERIVED_STATE}
    b = {k: v[0] for k, v in snapshot(two).items() if k not in DERIVED_STATE}
    assert a == b
    # And the workers' fingerprints make the next --changed-only run a no-op.
    assert rerender(two, changed_only=True, jobs=2).skipped == s2.total


def _render_interrupted(conv: Conversation, lang: str, local: object = ()) -> dict[str, str]:
    if "second" in conv.title:
        raise KeyboardInterrupt
    return archive_fakes.fake_render(conv, lang)


def test_interrupt_in_a_worker_stops_the_run_cleanly(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    for i, title in enumerate(["first", "second", "third", "fourth"]):
        make_thread(root, web_uuid=f"bb{i:06d}-0000-4000-8000-000000000001", title=title)
    engine = Engine(FAKE_ENGINE.parse, _render_interrupted, FAKE_ENGINE.render_report, "fake-1")
    with pytest.raises(KeyboardInterrupt):
        rerender(root, engine=engine, jobs=2)
    # A chunk that fails as a whole loses its fingerprints (its threads count as changed
    # next time), never a file: no temp file is left and the next run completes.
    assert not list(root.rglob(".pplx-tmp-*"))
    s = rerender(root, engine=FAKE_ENGINE, jobs=2)
    assert (s.total, s.failed) == (4, 0)


def test_cli_jobs_defaults_to_one_per_idle_cpu(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: list[int] = []
    real = rerender_mod.rerender

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(kwargs["jobs"])  # type: ignore[arg-type]
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(rerender_mod, "rerender", spy)
    monkeypatch.setattr(rerender_mod, "default_engine", lambda flavor="github": FAKE_ENGINE)
    root = tmp_path / "archive"
    make_thread(root, web_uuid="cc000001-0000-4000-8000-000000000001")
    runner = CliRunner()
    assert runner.invoke(main, ["re-render", "--out", str(root)]).exit_code == 0
    assert runner.invoke(main, ["re-render", "--out", str(root), "--jobs", "2"]).exit_code == 0
    assert seen == [0, 2]
    help_text = runner.invoke(main, ["re-render", "--help"]).output
    assert "one per idle CPU" in help_text


def test_thread_json_follows_a_new_key_order_in_the_raw_file(tmp_path: Path) -> None:
    # thread.json at its recorded stat is trusted to hold dump(what it parses to); a new
    # document equal to it but in another key order must still be written.
    root = tmp_path / "archive"
    shutil.copytree(FIXTURES, root)
    rerender(root, jobs=1)
    d = next(p for p in sorted(root.glob("*/*/*")) if (p / "raw_blocks.json").exists())
    raw = json.loads((d / "raw_entries.json").read_text())
    meta = raw["thread_metadata"]
    raw["thread_metadata"] = dict(reversed(list(meta.items())))
    (d / "raw_entries.json").write_text(json.dumps(raw, ensure_ascii=False))
    s = rerender(root, jobs=1)
    assert s.files_written == 1  # thread.json, nothing else
    fresh = tmp_path / "fresh"
    shutil.copytree(root, fresh)
    (fresh / STATE_NAME).unlink()  # no recorded stats: every document is dumped and compared
    assert rerender(fresh, jobs=1).files_written == 0
    assert (d / "thread.json").read_bytes() == (
        next(fresh.glob(f"*/*/{d.name}")) / "thread.json"
    ).read_bytes()
    assert list(json.loads((d / "thread.json").read_text())["metadata"]) == list(
        raw["thread_metadata"]
    )


def test_read_with_stat_survives_short_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "f.json"
    data = bytes(range(256)) * 64
    path.write_bytes(data)
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: real_read(fd, min(n, 1000)))
    got, (size, mtime_ns) = read_with_stat(str(path))
    assert got == data and size == len(data) and mtime_ns == path.stat().st_mtime_ns
    with pytest.raises(FileNotFoundError):
        read_with_stat(str(tmp_path / "missing"))


def test_chunks_count_each_items_weight() -> None:
    """Threads the search index lacks come back with their whole text: a chunk holds a
    quarter as many of them, and only as many as the budget allows."""
    items = [("a", 4)] * 300 + [("b", 1)] * 300
    chunks = list(guided_chunks(items, len(items), 2, weight=lambda item: item[1]))
    assert [i for c in chunks for i in c] == items
    assert len(chunks[0]) == 16 and len(chunks[-2]) <= 4
    assert max(len(c) for c in chunks if c[0][1] == 1) == 64
    assert all(sum(w for _, w in c) <= 64 + 3 for c in chunks)
