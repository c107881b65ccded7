"""What a long command's result counts besides its own numbers: failures and time."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pplx_export.util.jsonobj import pairs_json


@dataclass(kw_only=True)
class RunTally:
    """A run's failures (thread, reason) and seconds taken."""

    failures: list[tuple[str, str]] = field(default_factory=list)
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
