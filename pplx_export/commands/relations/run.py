"""`pplx-export relations`: rebuild `relations/edges.jsonl` and `relations/graph.md`.

Zero network (protocol.md §8). The facts of every thread come from `pipeline.relation_facts`
(the re-render parse path, cached), the edges from `pipeline.relation_edges`, the text from
`render.relations`. A thread that cannot be read is reported and left out; the graph of
the others is still written. Files are rewritten only when their bytes change.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pplx_export.archive.paths import ensure_inside
from pplx_export.commands.spaces.pages import require_archive
from pplx_export.context import RunOptions
from pplx_export.models import JSON
from pplx_export.pipeline.relation_edges import KINDS, build_edges
from pplx_export.pipeline.relation_facts import ParseFn, save_cache, scan_facts
from pplx_export.render.labels import graph_labels
from pplx_export.render.relations import ThreadRef, render_edges_jsonl, render_graph_md
from pplx_export.store.lock import archive_lock
from pplx_export.util.atomic import write_if_changed
from pplx_export.util.gcpause import gc_paused
from pplx_export.util.jsonobj import pairs_json
from pplx_export.util.lenient import as_dict
from pplx_export.util.lenient import lenient_int as lint
from pplx_export.util.tally import RunTally

log = logging.getLogger(__name__)

RELATIONS_DIR = "relations"
EDGES_FILE = "edges.jsonl"
GRAPH_FILE = "graph.md"


@dataclass
class RelationsResult(RunTally):
    directory: Path
    threads: int = 0
    parsed: int = 0
    degraded: int = 0
    edges: dict[str, int] = field(default_factory=dict)
    written: list[str] = field(default_factory=list)

    def to_json(self) -> JSON:
        return {
            "directory": str(self.directory),
            "threads": self.threads,
            "parsed": self.parsed,
            "degraded": self.degraded,
            "edges": self.edges,
            "written": self.written,
            "failures": pairs_json(self.failures, "dir", "reason"),
        }

    def line(self) -> str:
        kinds = ", ".join(f"{k} {self.edges.get(k, 0)}" for k in KINDS)
        return (
            f"relations: {sum(self.edges.values())} edges ({kinds}) over {self.threads} "
            f"threads ({self.degraded} without raw files, {len(self.failures)} unreadable); "
            f"{len(self.written)} files written -> {self.directory}"
        )


def run_relations(opts: RunOptions, *, parse: ParseFn | None = None) -> RelationsResult:
    started = time.monotonic()
    root = Path(opts.out)
    require_archive(root)
    with archive_lock(root, opts.held_locks), gc_paused():
        return _relations(root, opts.lang, opts.flavor, parse, started)


def _stamp(directory: Path, lang: str, flavor: str, threads: int, edges: dict[str, int]) -> JSON:
    """What the outputs are: their (size, mtime_ns), the language and flavour, and the
    counts shown."""
    files = {}
    for name in (EDGES_FILE, GRAPH_FILE):
        try:
            st = os.stat(directory / name)
        except OSError:
            return {}
        files[name] = [st.st_size, st.st_mtime_ns]
    return {"lang": lang, "flavor": flavor, "files": files, "threads": threads, "edges": edges}


def _relations(
    root: Path, lang: str, flavor: str, parse: ParseFn | None, started: float
) -> RelationsResult:
    scan = scan_facts(root, parse=parse)
    directory = ensure_inside(root, root / RELATIONS_DIR)
    last = scan.outputs
    if not scan.changed and last and last.get("lang") == lang and last.get("flavor") == flavor:
        # The same threads, all unchanged, as when the outputs were written, and the outputs
        # still have that run's size and mtime: they hold the bytes this run would write.
        fresh = _stamp(
            directory, lang, flavor, lint(last.get("threads")), as_dict(last.get("edges"))
        )
        if fresh == last:
            if scan.dirty:  # files rewritten with the same facts: keep their new stats
                save_cache(root, scan.records, last)
            return RelationsResult(
                directory=directory,
                threads=lint(last.get("threads")),
                parsed=scan.parsed,
                degraded=scan.degraded,
                edges={k: lint(as_dict(last.get("edges")).get(k)) for k in KINDS},
                failures=scan.failures,
                elapsed=time.monotonic() - started,
            )
    facts = scan.facts()
    lb = graph_labels(lang)
    edges = build_edges(facts, archived_note=lb.archived_note)
    threads = {f.uuid: ThreadRef(f.rel, f.title) for f in facts}
    files = {
        EDGES_FILE: render_edges_jsonl(edges),
        GRAPH_FILE: render_graph_md(edges, threads, lang, flavor),
    }
    written = []
    for name, text in files.items():
        if write_if_changed(ensure_inside(root, directory / name), text):
            written.append(f"{RELATIONS_DIR}/{name}")
    counts = Counter(e.kind for e in edges)
    by_kind = {k: counts.get(k, 0) for k in KINDS}
    save_cache(root, scan.records, _stamp(directory, lang, flavor, len(facts), by_kind))
    return RelationsResult(
        directory=directory,
        threads=len(facts),
        parsed=scan.parsed,
        degraded=scan.degraded,
        edges=by_kind,
        written=written,
        failures=scan.failures,
        elapsed=time.monotonic() - started,
    )
