"""The one process pool of the commands that spread threads over CPUs: `re-render --jobs`,
`verify` and the search index rebuild.

`ordered_map(fn, items, count, jobs=)` runs `fn` on every item and yields the results in
the order of `items`. With one job (or one item) it runs in the calling process; otherwise
the items are cut into chunks that shrink towards the end, handed to worker processes a
few at a time, and their results yielded as the parent consumes them.

Every worker:
- ignores SIGINT: Ctrl-C reaches the whole process group, and the parent handles it (drops
  the chunks not started, waits for the running ones), so no worker dies mid-write;
- dies with its parent: a parent SIGKILLed (the OOM killer, `timeout -s KILL`) cannot stop
  its pool, and workers reparented to init would wait on their pipe forever. Linux: the
  kernel kills the worker (prctl PR_SET_PDEATHSIG); elsewhere, or when prctl fails, a
  watchdog thread polls the parent pid;
- closes the archive lock it inherited by fork: flock belongs to the open file, so a worker
  outliving its parent would otherwise keep the archive locked.

Orchestration infrastructure below `commands/`, `search/` and `archive/`: it imports only
the stdlib.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from itertools import islice
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

# `jobs=0` (auto) runs one worker per idle CPU, at most MAX_AUTO_JOBS (past that the disk,
# not the CPU, is the limit, and every worker holds its own ~30 MiB), and only when each
# worker gets at least MIN_AUTO_SHARE items: starting a worker costs about what handling a
# few dozen threads does.
MAX_AUTO_JOBS = 8
MIN_AUTO_SHARE = 64
# Where Linux counts every CPU's time, and how long `auto_jobs` watches it.
PROC_STAT = "/proc/stat"
SAMPLE_SECONDS = 0.1
# Chunks per worker queued ahead of the one it is running: enough that a worker never waits
# for the parent to hand it work, few enough that results do not pile up in the parent.
IN_FLIGHT = 2
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
# How often the fallback watchdog looks for its parent (seconds).
WATCHDOG_INTERVAL = 0.5
# The archive's lock file (`store/lock.py` LOCK_NAME under index/). Named here because
# the pool sits below archive/ in the layers; tests/test_workers.py checks the two agree.
LOCK_SUFFIX = os.sep + os.path.join("index", ".lock")


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def auto_jobs(todo: int, *, most: int = MAX_AUTO_JOBS, share: int = MIN_AUTO_SHARE) -> int:
    """Workers for `jobs=0`: the available CPUs less those other processes keep busy now (on a
    shared machine, one worker per CPU only slows everyone down), at most `most`, each with
    at least `share` of the `todo` items."""
    cpus = available_cpus()
    ceiling = min(cpus, most, todo // share)
    if ceiling <= 1:
        return 1  # no pool: not worth the sample's tenth of a second
    idle = max(1, min(cpus, int(cpus - busy_cpus() + 0.5)))
    return max(1, min(idle, ceiling))


def busy_cpus() -> float:
    """How many CPUs other processes keep busy: the machine's CPU time sampled over
    SAMPLE_SECONDS (Linux /proc/stat), else the 1-minute load average. The load average lags
    a minute behind: right after a `sync` or a build it still counts them, and a re-render
    started then would run one worker on an idle machine."""
    first = _cpu_times()
    if first is not None:
        time.sleep(SAMPLE_SECONDS)
        second = _cpu_times()
        if second is not None and second[0] > first[0]:
            total, idle = second[0] - first[0], second[1] - first[1]
            return max(0.0, 1.0 - idle / total) * (os.cpu_count() or 1)
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # Windows; or no load figure to read
        return 0.0


def _cpu_times() -> tuple[int, int] | None:
    """(all, idle) clock ticks of every CPU since boot, from /proc/stat's first line."""
    try:
        with open(PROC_STAT, "rb") as fh:
            fields = fh.readline().split()
        # user nice system idle iowait irq softirq steal (guest time is counted in user)
        ticks = [int(v) for v in fields[1:9]]
    except (OSError, ValueError):
        return None
    if fields[:1] != [b"cpu"] or len(ticks) < 5:
        return None
    return sum(ticks), ticks[3] + ticks[4]


def ordered_map(
    fn: Callable[[T], R],
    items: Iterable[T],
    count: int,
    *,
    jobs: int,
    init: Callable[[], None] | None = None,
    weight: Callable[[T], int] | None = None,
) -> Iterator[R]:
    """`fn` of each of the `count` `items` (read as they are handed out), in `jobs` worker
    processes when there is more than one, yielded in the order of `items`.

    `fn` and `init` must pickle (module-level functions, or partials of them). `init` runs
    once in each worker, after the pool's own set-up. `weight`: how much an item counts
    towards a chunk's size (an item whose result is big counts more)."""
    jobs = min(jobs, count)
    if jobs <= 1:
        yield from map(fn, items)
        return
    from concurrent.futures import ProcessPoolExecutor

    # Frozen objects are left out of the workers' garbage collections, which would otherwise
    # touch (and so copy) every page they inherited from the parent.
    gc.freeze()
    pool = ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=_pool_context(),
        initializer=_init_worker,
        initargs=(os.getpid(), init),
    )
    try:
        # At most IN_FLIGHT chunks per worker submitted and not yet consumed: a finished
        # chunk's results wait in its future until the parent takes them, and when the
        # parent is the slower side (it writes the search index) an unbounded queue grows
        # with the archive.
        chunks = guided_chunks(items, count, jobs, weight=weight or _one)
        run = partial(_run_chunk, fn)
        futures = deque(pool.submit(run, c) for c in islice(chunks, jobs * IN_FLIGHT))
        while futures:  # popped as consumed: a finished chunk's results are not kept
            done = futures.popleft()
            for chunk in islice(chunks, 1):
                futures.append(pool.submit(run, chunk))
            finished = done.result()
            del done  # the future holds the list too
            finished.reverse()
            while finished:  # each result let go of as soon as the caller has taken it
                yield finished.pop()
    finally:
        # On an error or Ctrl-C the chunks no worker has started are dropped, not run.
        pool.shutdown(wait=True, cancel_futures=True)
        gc.unfreeze()


def guided_chunks(
    items: Iterable[T],
    count: int,
    jobs: int,
    *,
    cap: int = 64,
    least: int = 4,
    weight: Callable[[T], int] | None = None,
) -> Iterator[list[T]]:
    """The `count` `items` cut into chunks that shrink towards the end ("guided"
    scheduling), taken from `items` only as each chunk is asked for.

    Every chunk is a round trip through the parent, which shares the CPUs with the workers:
    so chunks are big (up to `cap`) while there is plenty left, then shrink with what
    remains (down to `least`), so the workers finish within a few items of each other.
    A chunk's size counts each item's `weight`.
    """
    weigh = weight or _one
    it = iter(items)
    left = count
    while True:
        budget = max(least, min(cap, left // (jobs * 2)))
        chunk: list[T] = []
        for item in it:
            chunk.append(item)
            budget -= weigh(item)
            if budget <= 0:
                break
        if not chunk:
            return
        left -= len(chunk)
        yield chunk


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """`items` in lists of `size` (the last may be shorter)."""
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


def _one(item: object) -> int:
    return 1


def _run_chunk(fn: Callable[[T], R], items: list[T]) -> list[R]:
    return [fn(item) for item in items]


def _init_worker(parent: int, init: Callable[[], None] | None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with(parent)
    release_inherited_lock()
    if init is not None:
        init()


def die_with(parent: int, *, prctl: bool = True) -> None:
    """End this process when `parent` dies: the kernel's parent-death signal where there is
    one (Linux), else a watchdog thread. A parent that died before this call is caught at
    once by the ppid check. `prctl=False` forces the watchdog (tests)."""
    if os.getppid() != parent:
        os._exit(1)
    if prctl and _set_pdeathsig():
        # The signal is tied to the parent's death, but the parent may have died between
        # the fork and the prctl call: look once more.
        if os.getppid() != parent:
            os._exit(1)
        return
    threading.Thread(target=_watch, args=(parent,), name="parent-watchdog", daemon=True).start()


def _set_pdeathsig() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)) == 0
    except (OSError, AttributeError):  # no prctl in this libc
        return False


def _watch(parent: int) -> None:
    # A worker whose parent died is reparented (to init or a subreaper): its ppid changes.
    # Windows does not reparent, but there the broken pipe to the dead parent ends the
    # worker's read of its next task instead.
    while os.getppid() == parent:
        time.sleep(WATCHDOG_INTERVAL)
    os._exit(1)


def release_inherited_lock() -> None:
    """Close, in a forked worker, every descriptor of an archive lock its parent holds.

    The parent's own descriptor keeps the lock while it lives. Linux (/proc); elsewhere
    workers are spawned, not forked, and inherit nothing."""
    fd_dir = "/proc/self/fd"
    if not os.path.isdir(fd_dir):
        return
    for name in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, name))
        except OSError:
            continue
        if target.endswith(LOCK_SUFFIX):
            with contextlib.suppress(OSError):
                os.close(int(name))


def _pool_context() -> Any:
    """Fork where it is safe (Linux): the workers start at once with the modules the parent
    has already imported (the parser, the renderer). Elsewhere the platform's default
    (spawn), where `init` imports them once per worker instead of on its first item."""
    import multiprocessing

    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()
