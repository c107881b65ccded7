"""Benchmark the search index and `verify` against re-render (by hand; no test runs this).

    python benchmarks/search.py [--n 1500] [--big 6000] [--repeat 3] [--keep DIR]

Builds archives with ../shared/tools/replicate_corpus.py (the shared corpus cloned N times
with fresh UUIDs: raw files and thread.json only), renders each once, then times, each in a
fresh process, best of --repeat (noise on a shared machine only ever adds time):

N-thread archive (the issue's 1,500):
* rerender-noindex   full re-render (parse + render + compare), the search hook disabled
* rerender           the same with the hook (the index is current: stats per thread)
* rerender-cold      the same after every thread.json was touched: every thread re-indexed
                     (the workers compute the rows from the thread they parsed)
* rerender-noindex-cold  the same touch, the hook disabled: what the cold run is held to
* rerender-reextract     every thread's rows computed again and rewritten (as after a change
                     of what the index extracts): the workers compute them, this process
                     writes them (reported against rerender-noindex-cold, not a target)

Re-render figures are CPU seconds (this process and its workers): on a shared machine
wall time measures the neighbours. The rest are wall time.

BIG-thread archive (the issue's 6,000):
* rerender           full re-render
* rebuild            `search --rebuild` (workers parse, this process writes)
* verify             `verify` (workers check each thread; nothing written)
* query              20 queries, each timed inside one process (open + search + snippets);
                     the median is reported
* size               index/search.sqlite against every *.md file of the archive

Targets: rerender <= 1.25x rerender-noindex; rerender-cold <= 1.25x rerender-noindex-cold;
rebuild <= 2x rerender; query median < 100 ms;
size <= 1.5x Markdown; verify <= 1.2x rerender.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
QUERIES = [
    "heat pump",
    "量子",
    "示例",
    '"council demo"',
    "search OR research",
    "NEAR(demo scenario, 5)",
    "sub*",
    "interrupted",
    "canceled",
    "report",
    "合成",
    "answer",
    "model",
    "fallback",
    "table",
    "演示",
    "workflow",
    "example.com",
    "e-bike",
    "nothing-matches-this",
]


def shared_tool() -> Path:
    for parent in REPO.parents:
        tool = parent / "shared" / "tools" / "replicate_corpus.py"
        if tool.is_file():
            return tool
    sys.exit("../shared/tools/replicate_corpus.py not found above the repository")


def build(dest: Path, n: int) -> None:
    tool = shared_tool()
    corpus = tool.parent.parent / "corpus" / "archive"
    subprocess.run([sys.executable, str(tool), str(corpus), str(dest), str(n)], check=True)
    child("rerender", dest)  # render once (and build the index): what an export leaves


def child(kind: str, root: Path) -> float:
    """Run one timed step in a fresh interpreter; return its time (seconds)."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(root)],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1])["seconds"])


def in_child(kind: str, root: Path) -> None:
    from pplx_export.search import index
    from pplx_export.sync import rerender as rerender_mod

    if kind.startswith("rerender-noindex"):

        class Off(index.IndexUpdater):
            def __init__(self, root: Path, *, enabled: bool = True, chunk: int = 200) -> None:
                super().__init__(root, enabled=False)

        setattr(rerender_mod, "IndexUpdater", Off)  # noqa: B010 (a module attribute swap)
    if kind == "rerender-reextract":
        index.EXTRACT_VERSION = f"bench-{time.time_ns()}"  # every stored signature differs
    if kind.endswith(("-cold", "-reextract")):
        for d in index.thread_rels(root):
            os.utime(root / d / "thread.json")
    started = time.perf_counter()
    if kind.startswith("rerender"):
        cpu = _cpu()
        summary = rerender_mod.rerender(root)
        assert summary.failed == 0, summary.failures[:3]
        print(json.dumps({"seconds": _cpu() - cpu, "wall": time.perf_counter() - started}))
        return
    elif kind == "rebuild":
        stats = index.rebuild(root)
        assert not stats.failed, stats.failed[:3]
    elif kind == "verify":
        from pplx_export.sync.verify import verify

        report = verify(root)
        # The replicated corpus has no batch state (one "state" line); nothing else is wrong.
        wrong = [p.to_json() for p in report.remaining if p.kind != "state"]
        assert not wrong, wrong[:3]
    elif kind == "query":
        from pplx_export.search.query import search
        from pplx_export.search.schema import connect_ro, db_path

        times = []
        hits = 0
        for q in QUERIES:
            t = time.perf_counter()
            conn = connect_ro(db_path(root))
            hits += len(search(conn, q, limit=20).hits)
            conn.close()
            times.append(time.perf_counter() - t)
        print(json.dumps({"seconds": statistics.median(times), "max": max(times), "hits": hits}))
        return
    print(json.dumps({"seconds": time.perf_counter() - started}))


def _cpu() -> float:
    """CPU seconds of this process and its reaped children (re-render workers)."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def best(kind: str, root: Path, repeat: int) -> float:
    return min(child(kind, root) for _ in range(repeat))


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--n", type=int, default=1500)
    ap.add_argument("--big", type=int, default=6000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-big", action="store_true", help="Measure the N-thread archive only.")
    ap.add_argument("--keep", type=Path, default=None, help="Build the archives here, keep them.")
    ap.add_argument("--child", nargs=2, metavar=("KIND", "ROOT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        in_child(args.child[0], Path(args.child[1]))
        return
    compileall.compile_dir(REPO / "pplx_export", quiet=1)
    base = args.keep or Path(tempfile.mkdtemp(prefix="pplx-search-bench-"))
    try:
        small, big = base / f"a{args.n}", base / f"a{args.big}"
        for root, n in ((small, args.n), (big, args.big)):
            if not root.exists() and not (args.skip_big and root == big):
                build(root, n)
        off = best("rerender-noindex", small, args.repeat)
        on = best("rerender", small, args.repeat)
        cold_off = best("rerender-noindex-cold", small, args.repeat)
        cold = best("rerender-cold", small, args.repeat)
        again = best("rerender-reextract", small, 1)
        print(
            f"{args.n} threads, re-render CPU: {off:.2f}s without the search hook, {on:.2f}s with"
        )
        print(f"  index current: {on / off - 1:+.1%} (target <= +25%: {verdict(on <= 1.25 * off)})")
        ok = verdict(cold <= 1.25 * cold_off)
        print(
            f"  every thread.json touched (signatures stale): {cold:.2f}s against {cold_off:.2f}s"
            f" = {cold / cold_off - 1:+.1%} (target <= +25%: {ok})"
        )
        print(
            f"  every thread's rows extracted again: {again:.2f}s"
            f" = {again / cold_off - 1:+.1%} (not a target)"
        )
        if args.skip_big:
            return
        full = best("rerender", big, args.repeat)
        rebuild = best("rebuild", big, args.repeat)
        verify_s = best("verify", big, args.repeat)
        query = best("query", big, 1)
        db = (big / "index" / "search.sqlite").stat().st_size
        md = sum(p.stat().st_size for p in big.rglob("*.md"))
        print(f"{args.big} threads: full re-render {full:.2f}s")
        ok = verdict(rebuild <= 2 * full)
        print(f"  search --rebuild {rebuild:.2f}s = {rebuild / full:.2f}x ({ok}: <= 2x)")
        ok = verdict(verify_s <= 1.2 * full)
        print(f"  verify {verify_s:.2f}s = {verify_s / full:.2f}x ({ok}: <= 1.2x)")
        ok = verdict(query < 0.1)
        print(f"  query median of {len(QUERIES)}: {query * 1000:.1f} ms ({ok}: < 100 ms)")
        ok = verdict(db <= 1.5 * md)
        print(
            f"  index {db / 1e6:.1f} MB, Markdown {md / 1e6:.1f} MB"
            f" = {db / md:.2f}x ({ok}: <= 1.5x)"
        )
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
