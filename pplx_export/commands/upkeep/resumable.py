"""How an upkeep run ends: Ctrl-C as a one-line `Interrupted`, and its seconds recorded.

`sync-deleted --online`, `usage-backfill`, `assets-backfill` and `search-mode-backfill` save
each step as they go (or on the way out), so a Ctrl-C loses nothing and a rerun continues
where this one stopped. They all say so with the same message and time the run the same way;
this is that rule, written once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from pplx_export.errors import Interrupted

INTERRUPTED = "interrupted; progress saved, rerun to continue"


class Timed(Protocol):
    """A run's result that records how long the run took."""

    elapsed: float


@contextmanager
def resumable(result: Timed, started: float) -> Iterator[None]:
    """Run the block; a Ctrl-C in it becomes `Interrupted` (exit 130, no traceback), and
    `result.elapsed` is set from `started` (a `time.monotonic()`) however the block ends.
    Whatever the block must save on the way out goes in its own `finally`: that runs first."""
    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted(INTERRUPTED) from None
    finally:
        result.elapsed = time.monotonic() - started
