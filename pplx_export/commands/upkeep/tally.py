"""What every backfill counts besides its own numbers: failures, requests and time."""

from __future__ import annotations

from dataclasses import dataclass

from pplx_export.util.tally import RunTally


@dataclass(kw_only=True)
class BackfillTally(RunTally):
    """A backfill's failures (thread, reason), requests made and seconds taken."""

    requests: int = 0
