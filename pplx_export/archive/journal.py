"""An append-only journal of changes next to a snapshot (`batch_state`, `rendered.jsonl`).

Rewriting a whole state file after every change costs O(N) bytes per change (2.9 MB per
exported thread at 10,000 threads). Instead each change is one JSON line appended to
`⟨snapshot stem⟩.journal` (`{"k": key, "v": value}`, `"v": null` removes the key), fsynced
when the caller asks; the snapshot is rewritten ("compacted") only at the end of a run and
when the journal outgrows it, and the journal is then removed. The snapshot keeps its
format, so older code and `status` read it as before (older code only misses the changes
still in the journal).

The first line names the snapshot the journal applies to (`{"journal": 1, "base": sha256}`):
a snapshot replaced behind the journal's back (an older tool, a restored backup) makes the
journal stale rather than silently replayed over newer data. Compaction appends
`{"compacted": sha256}` before writing the new snapshot, then removes the journal: a crash
between the two leaves a journal whose changes up to that marker are already in the snapshot.

Loading replays the lines after the last point matching the snapshot. A last line without
its newline is a torn append (a crash mid-write): it is ignored, logged, and cut off before
the next append. A garbled line in the middle is reported and skipped; the rest is kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from pplx_export.util.atomic import TEMP_PREFIX, atomic_write_bytes, fsync_dir

log = logging.getLogger(__name__)

SUFFIX = ".journal"
FORMAT = 1
# Compact once the journal is this big, or as big as the snapshot if that is bigger: the
# snapshot is then rewritten at most once per its own size of appended changes, so the
# bytes written per change stay O(1) amortized whatever the number of threads.
MIN_COMPACT_BYTES = 1 << 20
# A reader racing a compaction (snapshot replaced between its two reads) tries again.
READ_ATTEMPTS = 3


def journal_path(snapshot: Path) -> Path:
    """`index/batch_state.json` -> `index/batch_state.journal`."""
    return snapshot.with_suffix(SUFFIX)


def digest(data: bytes | None) -> str:
    """The name of a snapshot's content in the journal ("" for no snapshot)."""
    return hashlib.sha256(data).hexdigest() if data is not None else ""


@dataclass
class Replay:
    """What a journal holds for a given snapshot."""

    changes: list[tuple[str, Any]] = field(default_factory=list)  # (key, value or None)
    exists: bool = False
    stale: bool = False  # written against another snapshot: not replayed
    garbled: int = 0  # lines skipped in the middle
    torn: bool = False  # an unfinished last line, ignored
    size: int = 0
    notes: list[str] = field(default_factory=list)  # what was skipped, for the log


def _lines(data: bytes, path: Path, replay: Replay) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of every well-formed line; counts the others in `replay`."""
    lines = data.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline
    if tail:
        # A run killed mid-append, or (for a reader such as `status`) one appending right
        # now: the writer, which holds the lock, says which when it cuts the line off.
        replay.torn = True
        log.debug("%s: the last line is unfinished; ignored", path)
    for number, line in enumerate(lines, 1):
        try:
            obj = json.loads(line)
        except ValueError:
            obj = None
        if not isinstance(obj, dict):
            replay.garbled += 1
            replay.notes.append(f"{path}: line {number} is garbled; skipped")
            continue
        yield number, obj


def parse(data: bytes, base: str, path: Path) -> Replay:
    """The changes in journal bytes `data` that apply on top of the snapshot named `base`."""
    replay = Replay(exists=True, size=len(data))
    changes: list[tuple[str, Any]] = []
    matched = False
    for number, obj in _lines(data, path, replay):
        if "journal" in obj:
            # The header (the first line; a header further down is only garbage).
            if number == 1 and obj.get("base") == base:
                matched = True
            continue
        if "compacted" in obj:
            if obj.get("compacted") == base:
                # Everything up to here is in the snapshot already.
                changes.clear()
                matched = True
            continue
        key = obj.get("k")
        if not isinstance(key, str) or "v" not in obj:
            replay.garbled += 1
            replay.notes.append(f"{path}: line {number} is not a change; skipped")
            continue
        changes.append((key, obj["v"]))
    if matched:
        replay.changes = changes
    else:
        replay.stale = True
        replay.changes = changes  # for a caller that has no snapshot to trust (rebuilt)
    return replay


def read_consistent(snapshot: Path) -> tuple[bytes | None, Replay]:
    """The snapshot's bytes (None when missing) and its journal, read consistently.

    A writer compacting between the two reads (another process: `status` during a batch)
    shows up as a journal that does not match the snapshot; reading both again settles it.
    """
    journal = journal_path(snapshot)
    for attempt in range(READ_ATTEMPTS):
        last = attempt == READ_ATTEMPTS - 1
        before = _identity(snapshot)
        try:
            data: bytes | None = snapshot.read_bytes()
        except FileNotFoundError:
            data = None
        try:
            raw = journal.read_bytes()
        except FileNotFoundError:
            raw = None
        if _identity(snapshot) != before and not last:
            # Replaced meanwhile (compacted, and the journal maybe removed): read again.
            time.sleep(0.01 * (attempt + 1))
            continue
        if raw is None:
            return data, Replay()
        replay = parse(raw, digest(data), journal)
        if not replay.stale or last:
            for note in replay.notes:
                log.warning("%s", note)
            return data, replay
        time.sleep(0.01 * (attempt + 1))
    raise AssertionError("unreachable")  # pragma: no cover


def _identity(path: Path) -> tuple[int, int, int] | None:
    """What changes when a file is replaced (an atomic write is a new inode)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


class Writer:
    """Appends changes to one snapshot's journal (the caller holds the archive lock)."""

    def __init__(self, snapshot: Path, base: str, *, durable: bool) -> None:
        self.snapshot = snapshot
        self.path = journal_path(snapshot)
        self.base = base  # the digest of the snapshot on disk
        self.durable = durable
        self.size = -1  # unknown until the first append looks

    def append(self, changes: Iterable[tuple[str, Any]]) -> int:
        """Append changes (one write, one fsync); returns the bytes written."""
        payload = b"".join(
            json.dumps({"k": key, "v": value}, ensure_ascii=False).encode("utf-8") + b"\n"
            for key, value in changes
        )
        if not payload:
            return 0
        if self.size < 0:
            self._open()
        return self._write(payload)

    def tell(self) -> int:
        """Where the next append will start (opening or starting the journal first)."""
        if self.size < 0:
            self._open()
        return self.size

    def _open(self) -> None:
        """Start a journal for `base`, or continue the one on disk (cutting a torn tail)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            data = b""
        if not data:
            self.start(self.base)
            return
        keep = data.rfind(b"\n") + 1
        if keep < len(data):
            # A torn last line: cut it, or the next record would be glued onto it.
            log.warning(
                "%s: the last line is unfinished (a run was killed mid-append); dropped",
                self.path,
            )
            with open(self.path, "r+b") as fh:
                fh.truncate(keep)
                fh.flush()
                os.fsync(fh.fileno())
        self.size = keep

    def _write(self, payload: bytes) -> int:
        with open(self.path, "ab") as fh:
            fh.write(payload)
            fh.flush()
            if self.durable:
                os.fsync(fh.fileno())
        self.size += len(payload)
        return len(payload)

    def start(self, base: str) -> None:
        """A new, empty journal for the snapshot named `base` (atomic, replaces any other)."""
        header = json.dumps({"journal": FORMAT, "base": base}).encode() + b"\n"
        atomic_write_bytes(self.path, header, durable=self.durable)
        self.base = base
        self.size = len(header)

    def due(self, snapshot_size: int) -> bool:
        """Has the journal grown enough to be compacted into a snapshot of this size?"""
        return self.size > max(MIN_COMPACT_BYTES, snapshot_size)

    def compacted(self, base: str, write: Any) -> None:
        """Compaction: mark the journal, let `write()` replace the snapshot (whose new digest
        is `base`), remove the journal (the next append starts one on the new snapshot)."""
        if self.size < 0:
            self._open()
        self._write(json.dumps({"compacted": base}).encode() + b"\n")
        write()
        self.path.unlink(missing_ok=True)
        if self.durable:
            fsync_dir(self.path.parent)
        self.base = base
        self.size = -1


def set_aside(path: Path, what: str) -> Path | None:
    """Move a journal that cannot be used to `⟨name⟩.<what>-<epoch>` (kept for a person)."""
    target = path.with_name(f"{path.name}.{what}-{int(time.time())}")
    try:
        os.replace(path, target)
    except FileNotFoundError:
        return None
    fsync_dir(path.parent)
    return target


def stage_stream(path: Path, chunks: Iterable[str | bytes], *, durable: bool) -> tuple[Path, str]:
    """Write chunks (text, or its UTF-8 bytes) to a temp file next to `path` without
    holding them all; (the temp file, the digest of its bytes). `os.replace` it onto
    `path` to commit."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{TEMP_PREFIX}{path.name}.{os.getpid()}")
    h = hashlib.sha256()
    try:
        with open(tmp, "wb") as fh:
            for chunk in chunks:
                raw = chunk if isinstance(chunk, bytes) else chunk.encode("utf-8")
                h.update(raw)
                fh.write(raw)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return tmp, h.hexdigest()


def latest_offsets(path: Path, base: str) -> dict[str, int] | None:
    """{key: byte offset of its last change line} of the journal at `path` on top of the
    snapshot `base`, read line by line (the journal may be as big as the snapshot; only the
    offsets are kept). None when there is no journal or it is stale."""
    offsets: dict[str, int] = {}
    matched = False
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below, read line by line
    except FileNotFoundError:
        return None
    with fh:
        offset = 0
        for number, line in enumerate(iter(fh.readline, b""), 1):
            here, offset = offset, offset + len(line)
            if not line.endswith(b"\n"):
                log.debug("%s: the last line is unfinished; ignored", path)
                break  # torn
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if not isinstance(obj, dict):
                continue
            if "journal" in obj:
                matched = matched or (number == 1 and obj.get("base") == base)
            elif "compacted" in obj:
                if obj.get("compacted") == base:
                    offsets.clear()
                    matched = True
            elif isinstance(obj.get("k"), str) and "v" in obj:
                offsets[obj["k"]] = here
    return offsets if matched else None


def read_change(fh: BinaryIO, offset: int) -> Any:
    """The value of the change line at `offset` of an open journal (see `latest_offsets`)."""
    fh.seek(offset)
    return json.loads(fh.readline())["v"]
