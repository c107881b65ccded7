"""Reading the snapshot + journal files that `index/` held before the state store.

Releases up to 0.1 kept `batch_state.json` and `rendered.jsonl` (and the earlier
`render_state.json`) as a snapshot plus an append-only `<stem>.journal` of changes: one JSON
line each (`{"k": key, "v": value}`, `"v": null` removes the key), after a header naming the
snapshot it applies to (`{"journal": 1, "base": ...}`); a compaction appended
`{"compacted": base}` before it replaced the snapshot. Only the migrations read them now, once,
so this keeps just the reading side: which changes apply on top of a given snapshot.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pplx_export.util.jsonobj import loads_if

log = logging.getLogger(__name__)

SUFFIX = ".journal"


def journal_path(snapshot: Path) -> Path:
    """`index/batch_state.json` -> `index/batch_state.journal`."""
    return snapshot.with_suffix(SUFFIX)


def digest(data: bytes) -> str:
    """How a journal named the snapshot it applies to (batch state, format-1 render state)."""
    return hashlib.sha256(data).hexdigest()


@dataclass
class Replay:
    """What a journal holds for a given snapshot."""

    changes: list[tuple[str, Any]] = field(default_factory=list)  # (key, value or None)
    exists: bool = False
    stale: bool = False  # written against another snapshot: its changes do not apply


def parse(data: bytes, base: str, path: Path) -> Replay:
    """The changes in journal bytes `data` that apply on top of the snapshot named `base`.

    A torn last line (a run killed mid-append) and garbled lines are skipped with a warning:
    the tables they fed are rebuilt or re-derived, never trusted from half a line. A stale
    journal still returns its changes, for a caller without a snapshot to trust."""
    replay = Replay(exists=True)
    lines = data.split(b"\n")
    if lines.pop():
        log.debug("%s: the last line is unfinished; ignored", path)
    matched = False
    for number, line in enumerate(lines, 1):
        obj = loads_if(line, dict)
        if obj is None:
            log.warning("%s: line %d is garbled; skipped", path, number)
            continue
        if "journal" in obj:
            matched = matched or (number == 1 and obj.get("base") == base)
        elif "compacted" in obj:
            if obj.get("compacted") == base:
                replay.changes.clear()  # everything up to here is in the snapshot already
                matched = True
        elif isinstance(obj.get("k"), str) and "v" in obj:
            replay.changes.append((obj["k"], obj["v"]))
        else:
            log.warning("%s: line %d is not a change; skipped", path, number)
    replay.stale = not matched
    return replay


def read(path: Path) -> bytes | None:
    """A file's bytes, None when it is missing."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
