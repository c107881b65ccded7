"""Deterministic fault injection: `--faults "latency=20ms,429=0.1,500=0.05,drop=0.02,…"`.

`newest_first` is a switch, not a fault: thread pages come newest window first (§9.2).
The `ask*` keys script the SSE ask instead of drawing numbers: how long a deep research or
council run stays silent, the pause between growing events, how the stream ends (`ask=cut`,
…, see ASK_OUTCOMES) and how many fetches of a just-created thread answer 404.

One `random.Random(seed)` drives every decision, consumed under a lock in request-arrival
order, so a sequential client sees the same faults on every run with the same seed. Each
faultable request draws exactly one number per probabilistic kind (in a fixed order), so the
stream stays aligned whatever the outcome.
"""

from __future__ import annotations

import random
import re
import threading
from dataclasses import dataclass, field

# Evaluation order: the first kind whose draw hits wins.
KINDS = ("drop", "429", "5xx", "truncate", "challenge")

# How an ask's stream ends (docs/emulator.md, "SSE ask"):
#   complete     every event, the last one final with status COMPLETED
#   cut          half the answer's events, then the connection is reset; the thread completes
#                on the server
#   cut_running  the same reset; the thread is still running (until `ask_settle`)
#   end          half the events, then a clean close without a final event; still running
#   error        a final event with status FAILED and an error_code; the turn is stored FAILED
#   hang         the first event, then silence until the client hangs up (or the server stops)
ASK_OUTCOMES = ("complete", "cut", "cut_running", "end", "error", "hang")


class FaultSpecError(ValueError):
    pass


@dataclass
class FaultSpec:
    latency_s: float = 0.0
    p_drop: float = 0.0
    p_429: float = 0.0
    p_5xx: dict[int, float] = field(default_factory=dict)  # status -> probability
    p_truncate: float = 0.0
    p_challenge: float = 0.0
    graphql_rotated: bool = False
    newest_first: bool = False  # thread pages: the newest window first (protocol §9.2)
    retry_after: str = "1"
    include_session: bool = False  # the session probe is fault-exempt unless asked
    ask_outcome: str = "complete"
    ask_silence_s: float = 0.0  # deep research / council: quiet after the first event
    ask_step_s: float = 0.0  # between the growing events of every mode
    ask_not_found: int = 0  # GETs of a just-created thread answered 404 first
    ask_settle: int = 0  # a turn left PENDING completes at this GET of its thread (0: never)

    @property
    def active(self) -> bool:
        return bool(
            self.latency_s
            or self.p_drop
            or self.p_429
            or self.p_5xx
            or self.p_truncate
            or self.p_challenge
        )


def _probability(key: str, value: str) -> float:
    try:
        p = float(value)
    except ValueError as exc:
        raise FaultSpecError(f"fault {key!r}: {value!r} is not a probability") from exc
    if not 0.0 <= p <= 1.0:
        raise FaultSpecError(f"fault {key!r}: {p} is outside 0..1")
    return p


def _duration(value: str, key: str = "latency") -> float:
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ms|s)?\s*", value)
    if not match:
        raise FaultSpecError(f"{key} {value!r} is not a duration (e.g. 20ms, 0.5s)")
    number = float(match.group(1))
    return number / 1000.0 if match.group(2) == "ms" else number


def parse_faults(text: str) -> FaultSpec:
    """Parse the comma-separated spec. Unknown keys are an error, not silently ignored."""
    spec = FaultSpec()
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        key, _, value = item.partition("=")
        key = key.strip().lower()
        value = value.strip()
        if key == "latency":
            spec.latency_s = _duration(value)
        elif key == "drop":
            spec.p_drop = _probability(key, value)
        elif key == "429":
            spec.p_429 = _probability(key, value)
        elif re.fullmatch(r"5\d\d", key):
            spec.p_5xx[int(key)] = _probability(key, value)
        elif key == "truncate":
            spec.p_truncate = _probability(key, value)
        elif key == "challenge":
            spec.p_challenge = _probability(key, value)
        elif key == "graphql_rotated":
            spec.graphql_rotated = value.lower() not in ("0", "false", "no", "off")
        elif key == "newest_first":
            spec.newest_first = value.lower() not in ("0", "false", "no", "off")
        elif key == "retry_after":
            spec.retry_after = value or "0"
        elif key == "ask":
            if value not in ASK_OUTCOMES:
                raise FaultSpecError(f"ask={value!r}: expected one of {', '.join(ASK_OUTCOMES)}")
            spec.ask_outcome = value
        elif key == "ask_silence":
            spec.ask_silence_s = _duration(value, key)
        elif key == "ask_step":
            spec.ask_step_s = _duration(value, key)
        elif key == "ask_404":
            if not value.isdigit():
                raise FaultSpecError(f"ask_404={value!r} is not a count")
            spec.ask_not_found = int(value)
        elif key == "ask_settle":
            if not value.isdigit():
                raise FaultSpecError(f"ask_settle={value!r} is not a count")
            spec.ask_settle = int(value)
        elif key == "session":
            spec.include_session = value.lower() not in ("0", "false", "no", "off")
        else:
            raise FaultSpecError(f"unknown fault {key!r}")
    return spec


@dataclass
class Decision:
    kind: str = ""  # "" (none) | drop | 429 | 5xx | truncate | challenge
    status: int = 200


class FaultPlan:
    """The seeded decision stream."""

    def __init__(self, spec: FaultSpec, seed: int = 0) -> None:
        self.spec = spec
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def decide(self) -> Decision:
        spec = self.spec
        with self._lock:
            draws = {
                "drop": self._rng.random(),
                "429": self._rng.random(),
                "truncate": self._rng.random(),
                "challenge": self._rng.random(),
            }
            five = [(status, self._rng.random(), p) for status, p in sorted(spec.p_5xx.items())]
        if draws["drop"] < spec.p_drop:
            return Decision("drop")
        if draws["429"] < spec.p_429:
            return Decision("429", 429)
        for status, draw, p in five:
            if draw < p:
                return Decision("5xx", status)
        if draws["truncate"] < spec.p_truncate:
            return Decision("truncate")
        if draws["challenge"] < spec.p_challenge:
            return Decision("challenge")
        return Decision()


CHALLENGE_HTML = (
    b'<!DOCTYPE html><html lang="en-US"><head><title>Just a moment...</title></head>'
    b"<body><noscript>Enable JavaScript and cookies to continue</noscript>"
    b'<div id="challenge-running">Checking if the site connection is secure</div>'
    b"</body></html>"
)
