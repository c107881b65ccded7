"""What every backfill counts besides its own numbers: failures, requests and time."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pplx_export.util.jsonobj import pairs_json


@dataclass(kw_only=True)
class BackfillTally:
    """A backfill's failures (thread, reason), requests made and seconds taken."""

    failures: list[tuple[str, str]] = field(default_factory=list)
    requests: int = 0
    elapsed: float = 0.0

    @property
    def failed(self) -> int:
        """How many threads failed."""
        return len(self.failures)

    def tally_json(self, where: str) -> dict[str, Any]:
        """The `elapsed_s` and `failures` values of the JSON report (`where` names the thread)."""
        return {
            "elapsed_s": round(self.elapsed, 3),
            "failures": pairs_json(self.failures, where, "reason"),
        }
