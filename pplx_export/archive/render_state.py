"""`index/render_state.json`: what each thread directory was last rendered from.

`re-render --changed-only` skips a thread when its renderer version, language and flavour
(github/obsidian; a record without one was rendered as github) match and
every input file (raw files, the stored report body, thread.json, the assets manifest) is
unchanged. Like git's index, a file whose size and mtime match the record is trusted without
reading it; otherwise its SHA-256 decides (a `touch` alone does not force a render). The
inputs are fingerprinted after the render, so the rewritten thread.json is the recorded one.

Layout: `{"format": 1, "threads": {"⟨account⟩/⟨mode⟩/⟨dir⟩": {"renderer": V, "lang": L,
"flavor": F, "files": {"raw_entries.json": [size, mtime_ns, sha256], ...},
"outputs": STAMP}}}`. The file is derived state: losing it only costs one full re-render.

`outputs` (optional) is one digest over every derived file the render put (name, size,
mtime_ns, bytes) and the size and mtime of `turns/`. A full re-render whose rendered bytes
and on-disk stats give the same stamp knows every derived file already holds those bytes
without reading one (the same size+mtime trust as above), and that `turns/` holds no stale
file (adding or removing one changes the directory's mtime); any difference falls back to
reading and comparing file by file. One digest per thread rather than one per file keeps
this file, which every `--changed-only` run loads, small.

A render records each thread in `index/render_state.journal` (archive/journal.py: one line
per thread, appended and fsynced every few hundred threads) rather than rewriting this file;
the end of the run folds the journal back in. Loading replays the journal over the file.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from collections.abc import Container, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from pplx_export.archive import journal
from pplx_export.archive.journal import journal_path
from pplx_export.util.jsontext import dumps_indented, loads, loads_as
from pplx_export.util.jsontypes import JSON

try:
    import msgspec

    @dataclass
    class _LazySnapshot:
        """The snapshot with each record left undecoded: a `msgspec.Raw` is a view of the
        file's bytes, so a record costs ~100 bytes until a run looks at it (a re-render of
        50,000 threads would otherwise hold ~2 KiB of decoded dicts and lists per thread)."""

        format: int
        threads: dict[str, msgspec.Raw]

    _RAW: type | None = msgspec.Raw
except ImportError:  # pragma: no cover - msgspec is a dependency; records are then decoded
    _RAW = None

log = logging.getLogger(__name__)

STATE_NAME = "index/render_state.json"
FORMAT = 1
INPUTS = (
    "raw_entries.json",
    "raw_blocks.json",
    "thread.json",
    "assets/report_body.md",
    "assets/assets_manifest.json",
)
# The page every render writes, whatever changed. Its (size, mtime_ns) is recorded too: a
# thread that something else rendered since (an online `export` in another flavour or
# language, within the second its thread.json's stamp was already written in, so with the
# same inputs) is then not taken as fresh. One stat more per thread in a no-op run.
PAGE = "conversation.md"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fingerprint(
    thread_dir: Path,
    renderer: str,
    lang: str,
    known: dict[str, str] | None = None,
    *,
    stats: dict[str, tuple[int, int]] | None = None,
    outputs: str = "",
    absent: Container[str] = (),
    flavor: str = "github",
) -> JSON:
    """The record for `thread_dir` now. `known` holds sha256 digests the caller just
    computed from the bytes on disk (the writer's, the raw files it read), to skip re-reads;
    `stats` their `(size, mtime_ns)` as they are now (skips the stat); `outputs` the writer's
    stamp of the derived files; `absent` inputs the caller just found missing."""
    files: dict[str, list[Any]] = {}
    known = known or {}
    stats = stats or {}
    base = str(thread_dir) + os.sep
    for rel in INPUTS:
        digest = known.get(rel)
        stat = stats.get(rel) if digest else None
        if stat is None and rel in absent:
            continue
        if stat is None:
            try:
                st = os.stat(base + rel)
                digest = digest or _sha256(Path(base + rel))
            except FileNotFoundError:
                continue
            stat = (st.st_size, st.st_mtime_ns)
        files[rel] = [stat[0], stat[1], digest]
    record: JSON = {"renderer": renderer, "lang": lang, "flavor": flavor, "files": files}
    try:
        st = os.stat(base + PAGE)
        record["page"] = [st.st_size, st.st_mtime_ns]
    except FileNotFoundError:
        pass
    if outputs:
        record["outputs"] = outputs
    return record


def recorded_file(entry: Any, rel: str) -> tuple[int, int, str] | None:
    """`(size, mtime_ns, sha256)` recorded for input `rel` in a state entry, if well formed."""
    files = entry.get("files") if isinstance(entry, dict) else None
    rec = files.get(rel) if isinstance(files, dict) else None
    if not isinstance(rec, list) or len(rec) != 3:
        return None
    size, mtime_ns, digest = rec
    if isinstance(size, int) and isinstance(mtime_ns, int) and isinstance(digest, str):
        return size, mtime_ns, digest
    return None


def recorded_outputs(entry: Any) -> str:
    value = entry.get("outputs") if isinstance(entry, dict) else None
    return value if isinstance(value, str) else ""


def outputs_stamp(
    files: list[tuple[str, bytes]], stats: list[tuple[int, int]], turns: tuple[int, int]
) -> str:
    """One digest over every derived file's name, `(size, mtime_ns)` and bytes, in order, and
    the `(size, mtime_ns)` of the `turns/` directory."""
    h = hashlib.sha256()
    for (rel, raw), (size, mtime_ns) in zip(files, stats, strict=True):
        h.update(f"{rel}\0{size}\0{mtime_ns}\n".encode())
        h.update(raw)
    h.update(f"turns/\0{turns[0]}\0{turns[1]}\n".encode())
    return h.hexdigest()


def entry_of(value: Any) -> Any:
    """A record of `RenderState.threads` as plain JSON: a record of the snapshot is decoded
    here, where it is used (None when its bytes are not JSON: as if unrecorded)."""
    if _RAW is not None and isinstance(value, _RAW):
        view: Any = value  # a msgspec.Raw: its bytes through the buffer protocol
        try:
            return loads(bytes(view))
        except ValueError:
            return None
    return value


def is_fresh(
    entry: Any, thread_dir: Path | str, renderer: str, lang: str, flavor: str = "github"
) -> bool:
    """True when `thread_dir` would render exactly as recorded in `entry`."""
    entry = entry_of(entry)
    if not isinstance(entry, dict) or entry.get("renderer") != renderer:
        return False
    if entry.get("lang") != lang or not isinstance(entry.get("files"), dict):
        return False
    if entry.get("flavor", "github") != flavor:
        return False
    recorded: dict[str, Any] = entry["files"]
    base = str(thread_dir) + os.sep
    page = entry.get("page")
    if page is not None:  # records of earlier versions have none
        try:
            st = os.stat(base + PAGE)
        except FileNotFoundError:
            return False
        if page != [st.st_size, st.st_mtime_ns]:
            return False
    # Plain os.stat on strings: this is the whole cost of a no-op `--changed-only` run.
    for rel in INPUTS:
        try:
            st = os.stat(base + rel)
        except FileNotFoundError:
            if rel in recorded:
                return False
            continue
        rec = recorded.get(rel)
        if not isinstance(rec, list) or len(rec) != 3:
            return False
        if rec[0] == st.st_size and rec[1] == st.st_mtime_ns:
            continue
        if rec[0] != st.st_size or rec[2] != _sha256(Path(thread_dir) / rel):
            return False
    return True


def _parse_snapshot(raw: bytes | None, path: Path) -> dict[str, Any]:
    """The snapshot's records by directory: undecoded (see `_LazySnapshot`) where msgspec
    can, else decoded; {} when the file is unreadable or of another format."""
    if raw is None:
        return {}
    lazy = loads_as(raw, _LazySnapshot) if _RAW is not None else None
    if lazy is not None:
        return lazy.threads if lazy.format == FORMAT else {}
    try:
        doc = loads(raw)  # json.loads' value, through msgspec: read on every run
    except ValueError as exc:  # UnicodeDecodeError included
        log.warning("%s unreadable (%s): every thread counts as changed", path, exc)
        return {}
    threads = doc.get("threads") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(threads, dict):
        return {}
    return threads


@dataclass
class RenderState:
    """The recorded fingerprints (snapshot + journal) and the way to record new ones.

    A render's new records go to the journal only (`record`, appended in batches by
    `flush`), never into `threads`: a first render of 50,000 threads then holds no record in
    memory, and no checkpoint rewrites the whole file. `compact` (the end of a run) streams
    the snapshot back out of `threads` and the journal.
    """

    root: Path
    threads: dict[str, Any] = field(default_factory=dict)
    base: str = ""  # digest of the snapshot on disk ("" when there is none)
    changed: bool = False  # the snapshot lacks something (journal lines, removed records)
    _buffer: list[tuple[str, Any]] = field(default_factory=list)
    _writer: journal.Writer | None = None
    _stale: bool = False

    @property
    def path(self) -> Path:
        return self.root / STATE_NAME

    @classmethod
    def load(cls, root: Path) -> RenderState:
        """The recorded fingerprints by directory; empty (and a warning) when unreadable."""
        state = cls(root=Path(root))
        try:
            raw, replay = journal.read_consistent(state.path)
        except OSError as exc:
            log.warning("%s unreadable (%s): every thread counts as changed", state.path, exc)
            return state
        state.threads = _parse_snapshot(raw, state.path)
        state.base = journal.digest(raw)
        if replay.stale:
            # Only a cache: a journal of another snapshot costs re-renders, nothing else.
            log.warning("%s belongs to another snapshot; not replayed", journal_path(state.path))
            state._stale = True  # set aside by the first write (a dry run writes nothing)
            return state
        for rel, entry in replay.changes:
            if entry is None:
                state.threads.pop(rel, None)
            else:
                state.threads[rel] = entry
        state.changed = bool(replay.changes)
        return state

    def record(self, rel: str, entry: JSON | None) -> None:
        """A new fingerprint for `rel` (None: forget it), written at the next `flush`."""
        self._buffer.append((rel, entry))
        self.changed = True

    def flush(self) -> None:
        """Append the buffered records (one write, one fsync)."""
        if self._stale:
            journal.set_aside(journal_path(self.path), "stale")
            self._stale = False
        if not self._buffer:
            return
        if self._writer is None:
            self._writer = journal.Writer(self.path, self.base, durable=True)
        self._writer.append(self._buffer)
        self._buffer.clear()

    def compact(self, keep: Container[str] | None = None) -> None:
        """Rewrite the snapshot from `threads` and the journal (only the rels in `keep`, when
        given), sorted, without holding the new records in memory; remove the journal."""
        if not self.changed:
            return
        self.flush()
        path, jpath = self.path, journal_path(self.path)
        offsets = journal.latest_offsets(jpath, self.base) or {}
        keys = sorted(set(self.threads).union(offsets))
        if keep is not None:
            keys = [k for k in keys if k in keep]
        with contextlib.ExitStack() as stack:
            fh = stack.enter_context(open(jpath, "rb")) if offsets else None
            chunks = _snapshot_chunks(keys, self.threads, offsets, fh)
            tmp, digest = journal.stage_stream(path, chunks, durable=False)
        try:
            if self._writer is None and not jpath.exists():
                os.replace(tmp, path)
            else:
                if self._writer is None:
                    self._writer = journal.Writer(path, self.base, durable=True)
                self._writer.compacted(digest, lambda: os.replace(tmp, path))
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        self.base = digest
        self.changed = False


def _snapshot_chunks(
    keys: list[str],
    threads: dict[str, Any],
    offsets: dict[str, int],
    fh: BinaryIO | None,
) -> Iterator[str]:
    """The text of `dumps_indented({"format": 1, "threads": {...}}, 0)`, entry by entry (at
    indent 0 a nested value dumps the same wherever it sits)."""
    yield f'{{\n"format": {FORMAT},\n"threads": {{'
    first = True
    for key in keys:
        offset = offsets.get(key)
        entry = (
            entry_of(threads.get(key))
            if offset is None or fh is None
            else journal.read_change(fh, offset)
        )
        if entry is None:
            continue
        yield ("\n" if first else ",\n") + dumps_indented(key, 0) + ": " + dumps_indented(entry, 0)
        first = False
    yield "}\n}" if first else "\n}\n}"


def load_state(root: Path) -> dict[str, Any]:
    """The recorded fingerprints by directory (snapshot + journal); empty when unreadable."""
    return {rel: entry_of(v) for rel, v in RenderState.load(root).threads.items()}


def save_state(root: Path, threads: dict[str, Any]) -> None:
    """Replace the whole state with `threads` (snapshot written, journal dropped)."""
    state = RenderState(root=Path(root), threads=threads, changed=True)
    state.base = journal.digest(_read_or_none(state.path))
    state.compact(keep=threads)


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
