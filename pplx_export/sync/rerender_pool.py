"""The worker pool of `re-render --jobs`: the threads to render, cut into chunks, rendered
in worker processes, their outcomes yielded to the parent in order.

Each worker holds one thread at a time and writes only inside that thread's directory; the
parent owns every shared file (answer-variant log, render state), so there are no
concurrent writers. `--jobs 1` (or a single thread to render) runs in the parent process.
"""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any, TypeVar

from pplx_export.archive.lock import release_inherited_lock
from pplx_export.archive.render_state import entry_of
from pplx_export.sync.assemble import Engine, preload_engine
from pplx_export.sync.rerender_outcome import ThreadOutcome
from pplx_export.sync.rerender_thread import rerender_thread

T = TypeVar("T")
# (directory relative to root, its render_state record as stored, reached without a symlink)
Found = tuple[str, "bytes | None", bool]
# A Found and the signature the search index holds for the directory ("" none, None no
# index to keep current): looked up per chunk as the work is handed out (`Signatures`).
WorkItem = tuple[str, "bytes | None", bool, "str | None"]
Signatures = Callable[[list[str]], dict[str, str]]
# Threads per batch of a one-process run (one signature query each).
SERIAL_BATCH = 64
# `--jobs 0` (the default) runs one worker per available CPU, at most MAX_AUTO_JOBS (past
# that the disk, not the CPU, is the limit, and every worker holds its own ~30 MiB), and
# only when each worker gets at least MIN_AUTO_SHARE threads: starting a worker costs about
# what rendering a few dozen threads does.
MAX_AUTO_JOBS = 8
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
MIN_AUTO_SHARE = 64
# Chunks per worker queued ahead of the one it is rendering: enough that a worker never
# waits for the parent to hand it work, few enough that results do not pile up.
IN_FLIGHT = 2
ROWS_WEIGHT = 4  # see `_weight`


def auto_jobs(todo: int) -> int:
    """Workers for `--jobs 0`: one per CPU this process may run on, each with a fair share."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_AUTO_JOBS, todo // MIN_AUTO_SHARE))


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
    items = partial(_work_items, signatures)
    jobs = min(jobs, count)
    if jobs <= 1:
        for batch in batched(todo, SERIAL_BATCH):
            yield from map(work, items(batch))
        return
    # Frozen objects are left out of the workers' garbage collections, which would otherwise
    # touch (and so copy) every page they inherited from the parent.
    gc.freeze()
    pool = ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=_pool_context(),
        initializer=_init_worker,
        initargs=(os.getpid(),),
    )
    try:
        # At most IN_FLIGHT chunks per worker submitted and not yet consumed: a finished
        # chunk's outcomes (search rows, relation facts) wait in its future until the parent
        # takes them, and when the parent is the slower side (it writes the search index)
        # an unbounded queue grew by ~4 KiB per thread of the archive.
        with_signatures = (i for batch in batched(todo, SERIAL_BATCH) for i in items(batch))
        chunks = guided_chunks(with_signatures, count, jobs, weight=_weight)
        futures = deque(pool.submit(_run_chunk, work, c) for c in islice(chunks, jobs * IN_FLIGHT))
        while futures:  # popped as consumed: a finished chunk's outcomes are not kept
            done = futures.popleft()
            for chunk in islice(chunks, 1):
                futures.append(pool.submit(_run_chunk, work, chunk))
            finished = done.result()
            del done  # the future holds the list too
            finished.reverse()
            while finished:  # each outcome let go of as soon as the caller has taken it
                yield finished.pop()
    finally:
        # On an error or Ctrl-C the chunks no worker has started are dropped, not rendered.
        pool.shutdown(wait=True, cancel_futures=True)
        gc.unfreeze()


def guided_chunks(
    items: Iterable[T],
    count: int,
    jobs: int,
    *,
    cap: int = 64,
    least: int = 4,
    weight: Callable[[T], int] = lambda item: 1,
) -> Iterator[list[T]]:
    """The `count` `items` cut into chunks that shrink towards the end ("guided"
    scheduling), taken from `items` only as each chunk is asked for.

    Every chunk is a round trip through the parent, which shares the CPUs with the workers:
    so chunks are big (up to `cap`) while there is plenty left, then shrink with what
    remains (down to `least`), so the workers finish within a few threads of each other.
    A chunk's size counts each item's `weight`: an item whose outcome is big counts more.
    """
    it = iter(items)
    left = count
    while True:
        budget = max(least, min(cap, left // (jobs * 2)))
        chunk: list[T] = []
        for item in it:
            chunk.append(item)
            budget -= weight(item)
            if budget <= 0:
                break
        if not chunk:
            return
        left -= len(chunk)
        yield chunk


def _weight(item: WorkItem) -> int:
    """A thread the search index lacks comes back with its search rows (its whole text,
    ~100 KB on the corpus): chunks of those are a quarter the size, so the outcomes the
    parent and the workers hold at once stay about as big as a full re-render's."""
    return ROWS_WEIGHT if item[3] == "" else 1


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """`items` in lists of `size` (the last may be shorter)."""
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


def _work_items(signatures: Signatures | None, found: list[Found]) -> list[WorkItem]:
    """`found` with the search index's signature of each directory."""
    if signatures is None:
        return [(*item, None) for item in found]
    held = signatures([item[0] for item in found])
    return [(*item, held.get(item[0], "")) for item in found]


def _run_chunk(
    work: Callable[[WorkItem], ThreadOutcome], items: list[WorkItem]
) -> list[ThreadOutcome]:
    return [work(item) for item in items]


def _init_worker(parent: int) -> None:
    # Ctrl-C reaches the whole process group. The parent handles it: it drops the chunks
    # not started and waits for the running ones, so no worker dies mid-write.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with(parent)
    release_inherited_lock()
    preload_engine()


def _die_with(parent: int) -> None:
    """End this worker when its parent dies. A parent SIGKILLed (the OOM killer, `timeout -s
    KILL`) cannot stop its pool; reparented to init, the workers would wait on their pipe
    forever. Linux: the kernel sends SIGKILL on the parent's death (prctl PR_SET_PDEATHSIG);
    a parent that died before that call is caught by the ppid check."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl: the ppid check below still helps once
        pass
    if os.getppid() != parent:
        os._exit(1)


def _pool_context() -> Any:
    """Fork where it is safe (Linux): the workers start at once with the parser and renderer
    the parent has already imported. Elsewhere the platform's default (spawn), where
    `preload_engine` imports them once per worker instead of on its first thread."""
    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


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
