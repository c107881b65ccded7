"""`index/rendered.jsonl`: what each thread directory was last rendered from.

`re-render --changed-only` skips a thread when its renderer version, language and flavour
(github/obsidian; a record without one was rendered as github) match and
every input file (raw files, the stored report body, thread.json, the assets manifest) is
unchanged. Like git's index, a file whose size and mtime match the record is trusted without
reading it; otherwise its SHA-256 decides (a `touch` alone does not force a render). The
inputs are fingerprinted after the render, so the rewritten thread.json is the recorded one.
The file is derived state: losing it only costs one full re-render.

A record: `{"renderer": V, "lang": L, "flavor": F, "files": {"raw_entries.json": [size,
mtime_ns, sha256], ...}, "page": [size, mtime_ns], "outputs": STAMP}`. `outputs` (optional)
is one digest over every derived file the render put (name, size, mtime_ns, bytes) and the
size and mtime of `turns/`. A full re-render whose rendered bytes and on-disk stats give the
same stamp knows every derived file already holds those bytes without reading one (the same
size+mtime trust as above), and that `turns/` holds no stale file (adding or removing one
changes the directory's mtime); any difference falls back to reading and comparing file by
file.

Layout: a header line `{"rendered": 2, "id": ⟨random hex⟩}`, then one line per directory,
`⟨the directory as a JSON string⟩ TAB ⟨its record, compact JSON⟩`, sorted by (account, mode,
directory): the order in which `archive/paths.walk_thread_dirs` lists an archive. A run
never loads the file: it reads it alongside the listing, one line per directory
(`RenderState.join`), so its memory does not grow with the archive (the earlier
`render_state.json`, one JSON object, had to be held whole: ~600 bytes per thread, 30 MB at
50,000; it is read once and replaced by the first run that writes).

A render appends its records to `index/rendered.journal` (archive/journal.py: one line per
thread, appended and fsynced every few hundred threads, against the snapshot's `id`), in the
listing's order, and never holds them; the end of the run merges the snapshot and the
journal, both sorted, into a new snapshot (`compact`). A journal left by a killed run (or
by exports, below) is replayed over the snapshot by the next run, which holds where each of
its records starts until it ends: the one case whose memory grows with the work, bounded
by `due`.

An online export (`batch`, `export`, `pplx-ask`) records each thread it writes the same
way, so the next `--changed-only` run skips it. Those records come in no order: `compact`
sorts them by their offsets in the journal. The exporter compacts only when the journal is
`due` (a cron `sync` that exports three threads does not rewrite a 50,000-line snapshot);
until then the journal is replayed by whoever reads the state next.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Container, Iterable, Iterator
from dataclasses import dataclass, field, make_dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

from pplx_export.archive import journal
from pplx_export.archive.journal import journal_path
from pplx_export.util.jsontypes import JSON

log = logging.getLogger(__name__)

STATE_NAME = "index/rendered.jsonl"
FORMAT = 2
# The one-object file of earlier versions (format 1), with its `render_state.journal`:
# read by the first run that finds no STATE_NAME, removed when that run writes STATE_NAME.
LEGACY_NAME = "index/render_state.json"
LEGACY_FORMAT = 1
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

C = TypeVar("C", bound=tuple[Any, ...])
# (sort key, directory, record): the record as a snapshot line holds it, None: forgotten.
Row = tuple[str, str, "bytes | None"]


def order(rel: str) -> str:
    """The sort key of a directory `⟨account⟩/⟨mode⟩/⟨dir⟩`, in the listing's order: by its
    parts, not as the string ("a-b/…" sorts before "a/…" as a string, after it as parts).
    The parts joined by NUL, which no file name holds, compare as the parts do."""
    return rel.replace("/", "\0")


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
    """A record as plain JSON: a record still in its bytes (a line of the snapshot, as the
    run hands it to the worker that renders the thread) is decoded here, where it is used
    (None when its bytes are not JSON: as if unrecorded)."""
    if isinstance(value, bytes):
        try:
            # The stdlib, not msgspec: a no-op run decodes a few small records, and
            # importing msgspec costs it more than it saves.
            return json.loads(value)
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


def _key_of(raw: bytes) -> str | None:
    """The directory of a snapshot line's first field (a JSON string), None if it is not."""
    if raw[:1] == b'"' and raw[-1:] == b'"' and b"\\" not in raw:
        try:
            return raw[1:-1].decode("utf-8")
        except UnicodeDecodeError:
            return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _line(rel: str, record: bytes) -> bytes:
    return (
        json.dumps(rel, ensure_ascii=False).encode("utf-8", "surrogatepass")
        + b"\t"
        + record
        + b"\n"
    )


def _snapshot_rows(fh: IO[bytes], path: Path, *, quiet: bool = False) -> Iterator[Row]:
    """The records of an open snapshot past its header, in order. A line that is garbled,
    or out of order (edited by hand), is skipped: that thread counts as unrecorded, which
    costs a render, never a wrong skip. One warning says how many and where the first was."""
    last = ""
    first, skipped = "", 0
    for number, line in enumerate(fh, 2):
        why = ""
        raw, tab, record = line[:-1].partition(b"\t")
        rel = _key_of(raw) if tab else None
        if not line.endswith(b"\n"):
            why = "unfinished"
        elif rel is None or not record:
            why = "garbled"
        elif (key := order(rel)) <= last:
            why = "out of order"
        else:
            last = key
            yield key, rel, record
            continue
        first = first or f"line {number} is {why}"
        skipped += 1
    if skipped and not quiet:
        more = f" (and {skipped - 1} more)" if skipped > 1 else ""
        log.warning("%s: %s%s; skipped, those threads count as changed", path, first, more)


def _overlay(base: Iterator[Row], over: Iterator[Row]) -> Iterator[Row]:
    """`base` with `over` laid on it (both sorted, each key once): a key in both takes
    `over`'s record, and an `over` record of None removes the key."""
    b = next(base, None)
    o = next(over, None)
    while b is not None or o is not None:
        if o is None or (b is not None and b[0] < o[0]):
            assert b is not None
            yield b
            b = next(base, None)
            continue
        if b is not None and b[0] == o[0]:
            b = next(base, None)
        if o[2] is not None:
            yield o
        o = next(over, None)


def _encoded(value: Any) -> bytes | None:
    """A record decoded from a journal or a format-1 file, as a snapshot line holds it."""
    from pplx_export.util.jsontext import dumps_compact  # a run that writes: imported

    if isinstance(value, _Raw):
        # A view of a format-1 file, which is indented: one line only once decoded and
        # encoded again.
        view: Any = value.raw  # its bytes through the buffer protocol
        value = entry_of(bytes(view))
    return None if value is None else dumps_compact(value)


def _header(raw: bytes) -> str | None:
    """The id in a snapshot's header line; None when the line is not a format-2 header."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(doc, dict) or doc.get("rendered") != FORMAT:
        return None
    ident = doc.get("id")
    return ident if isinstance(ident, str) and ident else None


@dataclass
class RenderState:
    """The recorded fingerprints (snapshot, journal) and the way to record new ones.

    Nothing per directory is held: `join` reads the snapshot alongside the listing, `record`
    appends to the journal (in batches, by `flush`), and `compact` (the end of a run) merges
    the two into the next snapshot. What is held: the directories `join` found gone (to be
    forgotten), and a killed run's journal records until they are folded in.
    """

    root: Path
    base: str = ""  # the snapshot's id ("" when there is none)
    changed: bool = False  # the snapshot lacks something (journal lines, removed records)
    vanished: set[str] = field(default_factory=set)  # recorded, no longer listed
    # A killed run's journal records, sorted: (key, dir, offset in the journal).
    _replay: list[tuple[str, str, int]] = field(default_factory=list)
    _legacy: dict[str, Any] | None = None  # a format-1 file's records, being migrated
    _buffer: list[tuple[str, Any]] = field(default_factory=list)
    _writer: journal.Writer | None = None
    _stale: bool = False
    _run_start: int = -1  # where this run's journal lines begin
    _last: str = ""
    _in_order: bool = True  # this run recorded its directories in the listing's order
    _read: bool = False  # the snapshot was read once (its damage reported)

    @property
    def path(self) -> Path:
        return self.root / STATE_NAME

    @classmethod
    def load(cls, root: Path) -> RenderState:
        """The state of `root`: its snapshot's id and any journal a killed run left."""
        state = cls(root=Path(root))
        try:
            with open(state.path, "rb") as fh:
                state.base = _header(fh.readline()) or ""
                if not state.base:
                    log.warning("%s unreadable: every thread counts as changed", state.path)
                    state.changed = True  # replaced by the next snapshot
        except FileNotFoundError:
            state._legacy = _load_legacy(state.root)
            state.changed = state._legacy is not None
        except OSError as exc:
            log.warning("%s unreadable (%s): every thread counts as changed", state.path, exc)
        jpath = journal_path(state.path)
        offsets = journal.latest_offsets(jpath, state.base)
        if offsets is None and jpath.exists():
            # Only a cache: a journal of another snapshot costs re-renders, nothing else.
            log.warning("%s belongs to another snapshot; not replayed", jpath)
            state._stale = True  # set aside by the first write (a dry run writes nothing)
        elif offsets:
            state._replay = sorted((order(rel), rel, at) for rel, at in offsets.items())
            state.changed = True
        return state

    def rows(self) -> Iterator[Row]:
        """Every record, sorted: the snapshot with a killed run's journal laid on it."""
        with contextlib.ExitStack() as stack:
            base: Iterator[Row] = iter(())
            if self._legacy is not None:
                base = (
                    (order(rel), rel, _encoded(self._legacy[rel]))
                    for rel in sorted(self._legacy, key=order)
                )
            elif self.base:
                try:
                    fh = stack.enter_context(open(self.path, "rb"))
                except FileNotFoundError:
                    fh = None
                if fh is not None and _header(fh.readline()) == self.base:
                    # Read twice in a run (the join, then `compact`): one warning.
                    base = _snapshot_rows(fh, self.path, quiet=self._read)
                    self._read = True
            if self._replay:
                jfh = stack.enter_context(open(journal_path(self.path), "rb"))
                replayed = (
                    (key, rel, _encoded(journal.read_change(jfh, at)))
                    for key, rel, at in self._replay
                )
                base = _overlay(base, replayed)
            yield from base

    def join(self, listing: Iterable[C], *, forget: bool) -> Iterator[tuple[C, bytes | None]]:
        """Each listed directory (an item whose first field is `⟨account⟩/⟨mode⟩/⟨dir⟩`,
        in the listing's order) with its record, None when it has none. With `forget`,
        the recorded directories the listing lacks go to `vanished` (dropped by `compact`)."""
        rows = self.rows()
        row = next(rows, None)
        for item in listing:
            key = order(item[0])
            while row is not None and row[0] < key:
                if forget:
                    self.vanished.add(row[1])
                row = next(rows, None)
            if row is not None and row[0] == key:
                yield item, row[2]
                row = next(rows, None)
            else:
                yield item, None
        while forget and row is not None:
            self.vanished.add(row[1])
            row = next(rows, None)
        if self.vanished:
            self.changed = True

    def record(self, rel: str, entry: JSON | None) -> None:
        """A new fingerprint for `rel` (None: forget it), written at the next `flush`."""
        key = order(rel)
        if key <= self._last:
            self._in_order = False  # `compact` then sorts this run's records itself
        self._last = key
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
            self._run_start = self._writer.tell()
        self._writer.append(self._buffer)
        self._buffer.clear()

    def compact(self) -> None:
        """Write the next snapshot: the records as `rows` gives them, this run's laid on
        them, the vanished ones left out; then remove the journal (and a format-1 file)."""
        if not self.changed:
            return
        self.flush()
        path, jpath = self.path, journal_path(self.path)
        ident = os.urandom(8).hex()  # not `secrets`: its imports cost a no-op run ~3 ms
        with contextlib.ExitStack() as stack:
            merged = self.rows()
            if self._writer is not None:
                jfh = stack.enter_context(open(jpath, "rb"))
                merged = _overlay(merged, self._run_rows(jfh))
            chunks = _snapshot_chunks(ident, merged, self.vanished)
            tmp, _ = journal.stage_stream(path, chunks, durable=False)
        try:
            if self._writer is None and not jpath.exists():
                os.replace(tmp, path)
            else:
                if self._writer is None:
                    self._writer = journal.Writer(path, self.base, durable=True)
                self._writer.compacted(ident, lambda: os.replace(tmp, path))
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        # A format-1 file and its journal: in the new snapshot when this run migrated them,
        # else left by an older version run since, whose renders the stats will notice.
        legacy = self.root / LEGACY_NAME
        for old in (legacy, journal_path(legacy)):
            old.unlink(missing_ok=True)
        self._legacy = None
        self.base = ident
        self._writer = None
        self._replay = []
        self.vanished = set()
        self.changed = False
        self._last, self._in_order = "", True

    def due(self) -> bool:
        """Has the journal grown enough to be folded into the snapshot? Past 1 MiB or an
        eighth of the snapshot: the snapshot is then rewritten at most once per eighth of
        its size appended (O(1) bytes per record, amortized), and what a reader holds of a
        journal it replays (~300 bytes per directory, in `_replay`) stays small: ~2 MB at
        50,000 threads (with the snapshot's whole size as the limit it could be 15 MB)."""
        if self._writer is None:
            return False
        try:
            snapshot = os.stat(self.path).st_size
        except OSError:
            snapshot = 0
        return self._writer.tell() > max(journal.MIN_COMPACT_BYTES, snapshot // 8)

    def _run_rows(self, fh: IO[bytes]) -> Iterator[Row]:
        """This run's journal records, sorted, each directory once (its last record)."""
        changes = _journal_changes(fh, self._run_start)
        if self._in_order:
            for rel, _at, value in changes:
                yield order(rel), rel, _encoded(value)
            return
        # Not a run over the listing (`batch`, an `export`): sorted here. Only where each
        # directory's last record starts is held, not the records (~1.5 KiB each decoded).
        offsets = {rel: at for rel, at, _value in changes}
        for rel in sorted(offsets, key=order):
            fh.seek(offsets[rel])
            yield order(rel), rel, _encoded(json.loads(fh.readline())["v"])


def _journal_changes(fh: IO[bytes], start: int) -> Iterator[tuple[str, int, Any]]:
    """(directory, offset, record) of each change line of an open journal from `start`."""
    fh.seek(start)
    at = start
    for line in iter(fh.readline, b""):
        here, at = at, at + len(line)
        if line.endswith(b"\n") and isinstance(obj := json.loads(line), dict) and "k" in obj:
            yield str(obj["k"]), here, obj["v"]


def _snapshot_chunks(
    ident: str, rows: Iterator[Row], vanished: Container[str]
) -> Iterator[str | bytes]:
    yield json.dumps({"rendered": FORMAT, "id": ident}) + "\n"
    batch: list[bytes] = []
    size = 0
    for _key, rel, record in rows:
        if record is None or rel in vanished:
            continue
        batch.append(_line(rel, record))
        size += len(batch[-1])
        if size >= 1 << 15:  # written out in pieces of ~32 KiB
            yield b"".join(batch)
            batch.clear()
            size = 0
    yield b"".join(batch)


@dataclass
class _Raw:
    """A record of a format-1 file left undecoded until it is migrated (a `msgspec.Raw`
    view of the file's bytes: ~100 bytes a record, where decoded it is ~2 KiB)."""

    raw: Any


def _load_legacy(root: Path) -> dict[str, Any] | None:
    """The records of a format-1 `render_state.json` (and its journal), None without one."""
    from pplx_export.util.jsontext import loads, loads_as

    path = root / LEGACY_NAME
    try:
        raw, replay = journal.read_consistent(path)
    except OSError as exc:
        log.warning("%s unreadable (%s): every thread counts as changed", path, exc)
        return None
    if raw is None:
        return None
    threads: dict[str, Any] = {}
    lazy = loads_as(raw, _lazy_snapshot_type())
    if lazy is not None:
        if lazy.format == LEGACY_FORMAT:
            threads = {rel: _Raw(view) for rel, view in lazy.threads.items()}
    else:
        try:
            doc = loads(raw)
        except ValueError as exc:  # UnicodeDecodeError included
            log.warning("%s unreadable (%s): every thread counts as changed", path, exc)
            doc = None
        found = doc.get("threads") if isinstance(doc, dict) else None
        if isinstance(doc, dict) and doc.get("format") == LEGACY_FORMAT and isinstance(found, dict):
            threads = found
    if not replay.stale:
        for rel, entry in replay.changes:
            if entry is None:
                threads.pop(rel, None)
            else:
                threads[rel] = entry
    return threads


def _lazy_snapshot_type() -> Any:
    """A format-1 file's shape with each record a `msgspec.Raw` (the stdlib path when
    msgspec is missing: `loads_as` then declines)."""
    try:
        import msgspec
    except ImportError:  # pragma: no cover - msgspec is a dependency
        return object

    # Real types, not this module's postponed annotations, which msgspec would resolve in
    # a namespace without msgspec.
    return make_dataclass("LazySnapshot", [("format", int), ("threads", dict[str, msgspec.Raw])])


def load_state(root: Path) -> dict[str, Any]:
    """Every recorded fingerprint by directory, decoded (tests, tools: a run uses `join`)."""
    return {rel: entry_of(record) for _, rel, record in RenderState.load(root).rows()}


def save_state(root: Path, threads: dict[str, Any]) -> None:
    """Replace the whole state with `threads` (snapshot written, journal dropped)."""
    state = RenderState.load(root)
    state.vanished = {rel for _, rel, _ in state.rows()} - set(threads)
    for rel in sorted(threads, key=order):
        state.record(rel, threads[rel])
    state.changed = True
    state.compact()
