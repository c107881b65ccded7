"""A re-render's parent holds nothing per thread of the archive (issue 18: flat memory).

Measured with tracemalloc in the parent of a two-worker run (the renders, and their
bounded caches, are in the workers).

The render state is read alongside the listing and the work goes through a file, so the
memory a run allocates at its peak does not grow with the number of threads, but for the
names of the one directory being listed (~100 bytes a thread here). The earlier parent held
each thread's record, its place in several lists and sets: ~1 KiB a thread.
"""

from __future__ import annotations

import tracemalloc
from functools import partial
from pathlib import Path

import pytest

from pplx_export import workers
from pplx_export.commands.rerender.run import rerender
from tests.archive_fakes import FAKE_ENGINE, make_thread

# What the parent may hold per thread at its peak: the listing's names of one directory.
PER_THREAD = 200


def _add(root: Path, start: int, stop: int) -> None:
    for i in range(start, stop):
        make_thread(root, web_uuid=f"ee{i:06d}-0000-4000-8000-000000000000", title=f"t{i}")


def _peak(root: Path, *, changed_only: bool) -> int:
    tracemalloc.start()
    try:
        # Two workers: what is measured is the parent's own memory, not the renders'.
        summary = rerender(root, engine=FAKE_ENGINE, jobs=2, changed_only=changed_only)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not summary.failed
    return peak


def test_the_peak_of_a_rerender_does_not_grow_with_the_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The outcomes of the chunks in flight are the parent's largest holding; chunks grow
    # with the work up to a cap (64), reached here at both sizes with a cap of 8.
    monkeypatch.setattr(workers, "guided_chunks", partial(workers.guided_chunks, cap=8))
    root = tmp_path / "archive"
    peaks: dict[int, tuple[int, int]] = {}
    for start, n in ((0, 100), (100, 400)):
        _add(root, start, n)
        rerender(root, engine=FAKE_ENGINE, jobs=1)  # rendered, with a render state
        # The first measured run imports the pool's modules: the second is the one kept.
        full = min(_peak(root, changed_only=False) for _ in range(2))
        noop = min(_peak(root, changed_only=True) for _ in range(2))
        peaks[n] = full, noop
    (full_small, noop_small), (full_large, noop_large) = peaks[100], peaks[400]
    assert full_large - full_small < 300 * PER_THREAD, peaks
    assert noop_large - noop_small < 300 * PER_THREAD, peaks
    print(f"parent peaks (full, no-op) by threads: {peaks}")
