"""Pause Python's cyclic garbage collector while a command builds large acyclic data.

`spaces` and `relations` decode caches of thousands of records (dicts, lists, dataclasses)
and build pages from them. None of that forms reference cycles (reference counting frees
it), but every few hundred allocations the collector walks the young objects, and as the
heap grows, the older generations: measured on 6,000 threads this was a quarter to a third
of the whole command's CPU time. Pausing it changes no result; the collector runs once
when the block ends, so any cycle made meanwhile (an exception's traceback) is still freed.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
            # Everything the block allocated is still in the young generation: one pass
            # over it frees any cycle made meanwhile, without walking the older heap.
            gc.collect(0)
