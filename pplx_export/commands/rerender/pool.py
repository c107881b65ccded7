"""The work of `re-render --jobs`: the threads to render, with the search index's signature
of each, handed to the one process pool (`pplx_export/workers.py`), their outcomes yielded to
the parent in order.

Each worker holds one thread at a time and writes only inside that thread's directory; the
parent owns every shared file (answer-variant log, render state), so there are no
concurrent writers. `--jobs 1` (or a single thread to render) runs in the parent process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from pplx_export import workers
from pplx_export.commands.rerender.outcome import ThreadOutcome
from pplx_export.commands.rerender.thread import rerender_thread
from pplx_export.pipeline.assemble import Engine, preload_engine
from pplx_export.store.render_state import entry_of
from pplx_export.workers import batched, guided_chunks

__all__ = ["Found", "auto_jobs", "batched", "guided_chunks", "outcomes"]

# (directory relative to root, its render_state record as stored, reached without a symlink)
Found = tuple[str, "bytes | None", bool]
# A Found and the signature the search index holds for the directory ("" none, None no
# index to keep current): looked up per batch as the work is handed out (`Signatures`).
WorkItem = tuple[str, "bytes | None", bool, "str | None"]
Signatures = Callable[[list[str]], dict[str, str]]
# Threads per signature query (one query each batch, in the parent).
SERIAL_BATCH = 64
ROWS_WEIGHT = 4  # see `_weight`


def auto_jobs(todo: int) -> int:
    """Workers for `--jobs 0` (`workers.auto_jobs`: idle CPUs, each with a fair share)."""
    return workers.auto_jobs(todo)


def outcomes(
    root: Path,
    todo: Iterable[Found],
    count: int,
    *,
    lang: str,
    dry_run: bool,
    jobs: int,
    engine: Engine | None,
    signatures: Signatures | None = None,
) -> Iterator[ThreadOutcome]:
    """Render every item of `todo` (`count` of them, read as they are handed out), in
    `jobs` worker processes when there is more than one, and yield the outcomes in the
    order of `todo`. `signatures`: the search index's signatures of some directories
    (None: no index to keep current)."""
    work = partial(_work, root, lang=lang, dry_run=dry_run, engine=engine)
    # Signatures are asked for a batch at a time, as the items are handed out, in the
    # parent: a one-process run and a pooled one read the index the same way.
    with_signatures = (
        item for batch in batched(todo, SERIAL_BATCH) for item in _work_items(signatures, batch)
    )
    yield from workers.ordered_map(
        work, with_signatures, count, jobs=jobs, init=preload_engine, weight=_weight
    )


def _weight(item: WorkItem) -> int:
    """A thread the search index lacks comes back with its search rows (its whole text,
    ~100 KB on the corpus): chunks of those are a quarter the size, so the outcomes the
    parent and the workers hold at once stay about as big as a full re-render's."""
    return ROWS_WEIGHT if item[3] == "" else 1


def _work_items(signatures: Signatures | None, found: list[Found]) -> list[WorkItem]:
    """`found` with the search index's signature of each directory."""
    if signatures is None:
        return [(*item, None) for item in found]
    held = signatures([item[0] for item in found])
    return [(*item, held.get(item[0], "")) for item in found]


def _work(root: Path, item: WorkItem, **options: Any) -> ThreadOutcome:
    """`rerender_thread` for one work item; `options` are lang, dry_run and engine."""
    rel, recorded, dir_checked, indexed = item
    return rerender_thread(
        root,
        rel,
        recorded=entry_of(recorded),  # decoded here, one at a time (see render_state)
        dir_checked=dir_checked,
        indexed=indexed,
        **options,
    )
