"""The render state: what each thread directory was last rendered from, in the `rendered`
table of `index/state.sqlite` (store/db.py; imported from the release's `rendered.jsonl` by
store/rendered_import.py).

`re-render --changed-only` skips a thread when its renderer version, language and flavour
(github/obsidian; a record without one was rendered as github) match and
every input file (raw files, the stored report body, thread.json, the assets manifest) is
unchanged. Like git's index, a file whose size and mtime match the record is trusted without
reading it; otherwise its SHA-256 decides (a `touch` alone does not force a render). The
inputs are fingerprinted after the render, so the rewritten thread.json is the recorded one.
The table is derived state: losing it only costs one full re-render.

A record: `{"renderer": V, "lang": L, "flavor": F, "files": {"raw_entries.json": [size,
mtime_ns, sha256], ...}, "page": [size, mtime_ns], "outputs": STAMP}`. `outputs` (optional)
is one digest over every derived file the render put (name, size, mtime_ns, bytes) and the
size and mtime of `turns/`. A full re-render whose rendered bytes and on-disk stats give the
same stamp knows every derived file already holds those bytes without reading one (the same
size+mtime trust as above), and that `turns/` holds no stale file (adding or removing one
changes the directory's mtime); any difference falls back to reading and comparing file by
file.

A row per directory, keyed by the directory as a sort key (`rendered_import.sort_key`) whose
byte order is the order in which `archive/paths.walk_thread_dirs` lists an archive, the record
as compact JSON bytes. A run never loads the table: `RenderState.join` reads it in one ordered
scan beside the listing (in pages, by key), and hands each record on still in its bytes, so
its memory does not grow with the archive. A render records in batches: `record` buffers,
`flush` (every few hundred threads, and at the end) writes the batch in one transaction. An
online export (`batch`, `export`, `pplx-ask`) records each thread it writes the same way, so
the next `--changed-only` run skips it.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pplx_export.archive.fingerprint import INPUTS, PAGE, sha256_of
from pplx_export.store.db import STATE_DB, db_path, transaction
from pplx_export.store.recover import disk_errors, open_checked
from pplx_export.store.rendered_import import sort_key
from pplx_export.util.jsontypes import JSON

log = logging.getLogger(__name__)

# Where the render state lives (the state store, shared with the rest of the state).
STATE_NAME = f"index/{STATE_DB}"
# Rows read per query of the ordered scan: each page is a complete statement, so nothing is
# left pending on the connection when the caller records between two items of the join. A
# page holds its records' bytes (~700 each): small pages keep a run's memory flat (the cost,
# one index seek per page, is ~1 ms per 3,000 threads).
PAGE_ROWS = 64

C = TypeVar("C", bound=tuple[Any, ...])
# (sort key, directory, record): the record as the table holds it.
Row = tuple[str, str, bytes]


def order(rel: str) -> str:
    """The sort key of a directory `⟨account⟩/⟨mode⟩/⟨dir⟩`, in the listing's order: by its
    parts, not as the string ("a-b/…" sorts before "a/…" as a string, after it as parts).
    The parts joined by NUL, which no file name holds, compare as the parts do."""
    return rel.replace("/", "\0")


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
        if rec[0] != st.st_size or rec[2] != sha256_of(Path(thread_dir) / rel):
            return False
    return True


def _select(db: sqlite3.Connection) -> Iterator[tuple[str, bytes]]:
    """(directory, record) of every row by key: one ordered scan of the primary key, a page
    at a time."""
    after = b""
    while True:
        page = db.execute(
            "SELECT key, rel, record FROM rendered WHERE key > ? ORDER BY key LIMIT ?",
            (after, PAGE_ROWS),
        ).fetchall()
        for _key, rel, record in page:
            yield rel, bytes(record)
        if len(page) < PAGE_ROWS:
            return
        after = page[-1][0]


def _probe(db: sqlite3.Connection) -> None:
    """A first read at the open: damage shows here rather than mid-run."""
    db.execute("SELECT count(*) FROM rendered").fetchone()


@dataclass
class RenderState:
    """The recorded fingerprints and the way to record new ones.

    Nothing per directory is held but this run's records not yet flushed and the directories
    `join` found gone (to be forgotten by `compact`).
    """

    root: Path
    readonly: bool = False  # a dry run: read, never written (nor migrated on disk)
    changed: bool = False  # records were made or directories found gone
    vanished: set[str] = field(default_factory=set)  # recorded, no longer listed
    _db: sqlite3.Connection | None = field(default=None, repr=False)
    _buffer: list[tuple[str, Any]] = field(default_factory=list, repr=False)

    @property
    def path(self) -> Path:
        return self.root / STATE_NAME

    @classmethod
    def load(cls, root: Path, *, readonly: bool = False) -> RenderState:
        """The render state of `root` (its store opened, migrated as needed)."""
        state = cls(root=Path(root), readonly=readonly)
        state._store()
        return state

    def _store(self) -> sqlite3.Connection:
        if self._db is None:
            # A dry run opens an existing store as any run does and writes nothing: a
            # read-only connection would leave its -wal and -shm files behind, a writer
            # removes them when it closes. Without a store it works from one in memory.
            readonly = self.readonly and not db_path(self.root).exists()
            self._db, _, _ = open_checked(self.root, _probe, readonly=readonly)
        return self._db

    def rows(self) -> Iterator[Row]:
        """Every record, sorted as the listing is."""
        for rel, record in _select(self._store()):
            yield order(rel), rel, record

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
        self._buffer.append((rel, entry))
        self.changed = True

    def flush(self) -> None:
        """Write the buffered records: one transaction (one fsync of the WAL)."""
        if not self._buffer:
            return
        from pplx_export.util.jsontext import dumps_compact  # a run that writes: imported

        puts = [(sort_key(rel), rel, dumps_compact(e)) for rel, e in self._buffer if e is not None]
        drops = [(sort_key(rel),) for rel, e in self._buffer if e is None]
        with disk_errors(self.path), transaction(self._store()) as db:
            db.executemany("DELETE FROM rendered WHERE key = ?", drops)
            db.executemany(
                "INSERT OR REPLACE INTO rendered (key, rel, record) VALUES (?, ?, ?)", puts
            )
        self._buffer.clear()

    def compact(self) -> None:
        """The end of a run: flush, and forget the directories `join` found gone."""
        if not self.changed:
            return
        for rel in self.vanished:
            self._buffer.append((rel, None))
        self.flush()
        self.vanished = set()
        self.changed = False

    def due(self) -> bool:
        """Kept for the exporter, which compacted a file-based state when its journal had
        grown: each `flush` is a commit now, so there is never anything to fold in."""
        return False

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def load_state(root: Path) -> dict[str, Any]:
    """Every recorded fingerprint by directory, decoded (tests, tools: a run uses `join`)."""
    state = RenderState.load(root)
    try:
        return {rel: entry_of(record) for _, rel, record in state.rows()}
    finally:
        state.close()


def save_state(root: Path, threads: dict[str, Any]) -> None:
    """Replace the whole state with `threads`."""
    state = RenderState.load(root)
    try:
        state.vanished = {rel for _, rel, _ in state.rows()} - set(threads)
        for rel in sorted(threads, key=order):
            state.record(rel, threads[rel])
        state.changed = True
        state.compact()
    finally:
        state.close()
