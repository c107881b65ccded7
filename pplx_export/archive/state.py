"""`index/batch_state.json`: what happened to every thread (protocol.md App. A).

Version 1 on disk: `{"version": 1, "threads": {web_uuid: record}}`; a record is
`{status, lastUpdated, title[:80], ...}` plus, by status:

    ok       exported_at, dir? (thread directory relative to the archive root), note? (kept
             but flagged: e.g. its schematized listing ended early)
    error    failed_at, error[:300]
    expired  expired_at, note
    deleted  deleted_at, note

The earlier tool wrote the same records as a flat `{web_uuid: record}` dict without a
version; it is read as-is and written back as version 1 on the next change.

Every change is durable at once, and a thread is marked ok only by the caller after all its
files are on disk (mark done after the write is durable). A change is one fsynced line appended
to `index/batch_state.journal` (archive/journal.py), not a rewrite of the whole file: the file
(the snapshot, same format as ever) is rewritten at the end of a run (`save`) and when the
journal outgrows it, so a thread costs O(1) bytes whatever the size of the library. Loading
reads the snapshot and replays the journal. A corrupt file is
moved to `batch_state.json.corrupt-<epoch>` and the state is rebuilt from the `thread.json`
files on disk, with a warning: losing the state must never mean losing track of exported
threads, and a blank state would silently re-export the whole library. The directories are
read by `archive/scan.py`; `archive/state_check.py` says where state and disk disagree.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pplx_export.archive import journal
from pplx_export.archive.library_index import INDEX_DIR, move_aside
from pplx_export.archive.scan import newest, scan_thread_dirs
from pplx_export.errors import ArchiveError
from pplx_export.util.atomic import write_if_changed
from pplx_export.util.lenient import as_str
from pplx_export.util.timefmt import canonical_time, format_utc

log = logging.getLogger(__name__)

STATE_FILE = "batch_state.json"
VERSION = 1
STATUSES = ("ok", "error", "expired", "deleted")
TITLE_MAX = 80
ERROR_MAX = 300

Record = dict[str, Any]


def state_path(root: Path) -> Path:
    return Path(root) / INDEX_DIR / STATE_FILE


def _now(now: datetime | None) -> str:
    return format_utc(now if now is not None else datetime.now(UTC))


# ------------------------------------------------------------------ rebuilt from disk


def rebuild_from_disk(root: Path, *, now: datetime | None = None) -> dict[str, Record]:
    """State records (status ok) for every exported thread found on disk."""
    found, unreadable = scan_thread_dirs(root)
    for path in unreadable:
        log.warning("unreadable thread.json left out of the rebuilt state: %s", path)
    stamp = _now(now)
    records: dict[str, Record] = {}
    for uuid, threads in found.items():
        thread = newest(threads)
        records[uuid] = {
            "status": "ok",
            "lastUpdated": canonical_time(thread.last_updated),
            "title": thread.title[:TITLE_MAX],
            "exported_at": thread.exported_at or stamp,
            "dir": thread.dir.relative_to(root).as_posix(),
        }
    return records


# ------------------------------------------------------------------ the state file


def _parse(text: str) -> tuple[dict[str, Record], bool] | None:
    """(records, legacy?) of a v1 or legacy document; None when it is not a state file."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    if "version" in doc and isinstance(doc.get("threads"), dict):
        version = doc["version"]
        if not isinstance(version, int) or isinstance(version, bool):
            return None
        if version > VERSION:
            # Written by a newer tool: neither corrupt nor ours to overwrite.
            raise ArchiveError(
                f"batch state is version {version}, newer than this tool understands ({VERSION})"
            )
        threads, legacy = doc["threads"], False
    else:
        threads, legacy = doc, True  # the earlier tool's flat {uuid: record}
    if not all(isinstance(key, str) and isinstance(rec, dict) for key, rec in threads.items()):
        return None
    return dict(threads), legacy


def _salvage(text: str) -> dict[str, Record]:
    """From a corrupt but parseable file: the records that still look like records."""
    try:
        doc = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(doc, dict):
        return {}
    inner = doc.get("threads")
    threads: dict[Any, Any] = inner if isinstance(inner, dict) else doc
    return {
        key: rec
        for key, rec in threads.items()
        if isinstance(key, str) and isinstance(rec, dict) and rec.get("status") in STATUSES
    }


@dataclass
class BatchState:
    path: Path
    threads: dict[str, Record] = field(default_factory=dict)
    legacy: bool = False  # read from the earlier tool's unversioned format
    corrupt_copy: Path | None = None  # where a corrupt file was moved (or found)
    rebuilt: bool = False
    replayed: int = 0  # changes read from the journal on top of the snapshot
    # The digest of the snapshot on disk (None: no snapshot yet) and the journal writer.
    _base: str | None = field(default=None, repr=False)
    _snapshot_size: int = field(default=0, repr=False)
    _journal: journal.Writer | None = field(default=None, repr=False)
    _pending: int = field(default=0, repr=False)  # changes in the journal, not the snapshot

    @classmethod
    def load(cls, root: Path, *, repair: bool = True, now: datetime | None = None) -> BatchState:
        """Read the state of the archive at `root`: the snapshot, then its journal.

        Missing -> rebuilt from the thread.json files on disk (empty for a new archive): a
        deleted or lost state file must not cost a re-download of every archived thread.

        Corrupt (bad JSON, wrong shape) -> moved aside, rebuilt from the thread.json files on
        disk (plus any record of the old file that still parses, for threads not on disk:
        errors and tombstones), saved, and a warning logged. With `repair=False` the same
        rebuild happens in memory only and nothing on disk changes (read-only commands).

        A missing or corrupt snapshot keeps the changes of its journal (they are newer than
        anything on disk); a journal written against another snapshot (one replaced behind
        its back, e.g. by an older tool) is stale: set aside with a warning, not replayed.
        """
        path = state_path(root)
        state = cls(path=path)
        raw, replay = journal.read_consistent(path)
        if raw is None:
            state.threads = rebuild_from_disk(root, now=now)
            state._apply(replay.changes)
            state._pending = len(replay.changes)
            if state.threads:
                state.rebuilt = True
                log.warning(
                    "batch state %s is missing; rebuilt from disk (%d threads)",
                    path,
                    len(state.threads),
                )
                if repair:
                    state.save()
            return state
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = ""
        parsed = _parse(text) if text else None
        if parsed is not None:
            state.threads, state.legacy = parsed
            state._base, state._snapshot_size = journal.digest(raw), len(raw)
            if replay.stale:
                state._stale_journal(repair)
            else:
                state._apply(replay.changes)
                state._pending = len(replay.changes)
            if state._canonicalise() and repair:
                log.info("batch state %s: lastUpdated brought to the canonical clock", path)
                state.save()
            return state
        rebuilt = rebuild_from_disk(root, now=now)
        for uuid, record in _salvage(text).items():
            rebuilt.setdefault(uuid, record)
        state.threads = rebuilt
        state._apply(replay.changes)
        state.rebuilt = True
        if repair:
            state.corrupt_copy = move_aside(path)
            log.warning(
                "batch state %s is corrupt; moved to %s and rebuilt from disk (%d threads)",
                path,
                state.corrupt_copy.name,
                len(rebuilt),
            )
            state.save()
        else:
            state.corrupt_copy = path
            log.warning(
                "batch state %s is corrupt; using a state rebuilt from disk (%d threads)",
                path,
                len(rebuilt),
            )
        return state

    def _apply(self, changes: list[tuple[str, Any]]) -> None:
        for uuid, record in changes:
            if isinstance(record, dict):
                self.threads[uuid] = record
            elif record is None:
                self.threads.pop(uuid, None)
        self.replayed += len(changes)

    def _canonicalise(self) -> int:
        """Bring every record's `lastUpdated` to the canonical clock (UTC, µs, `Z`): the
        migration of state files written before it, so an upgraded archive compares its
        records with either listing's rows and re-downloads nothing. Returns the changes."""
        changed = 0
        for record in self.threads.values():
            value = record.get("lastUpdated")
            if isinstance(value, str) and value:
                canonical = canonical_time(value)
                if canonical != value:
                    record["lastUpdated"] = canonical
                    changed += 1
        return changed

    def _stale_journal(self, repair: bool) -> None:
        where = journal.journal_path(self.path)
        if not repair:
            log.warning("%s belongs to another %s; not replayed", where.name, self.path.name)
            return
        aside = journal.set_aside(where, "stale")
        log.warning(
            "%s belongs to another %s (replaced by another tool?); moved to %s, not replayed",
            where.name,
            self.path.name,
            aside.name if aside else "?",
        )

    # -- reading

    def get(self, uuid: str) -> Record | None:
        return self.threads.get(uuid)

    def status(self, uuid: str) -> str:
        record = self.threads.get(uuid)
        return as_str(record.get("status")) if record else ""

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(STATUSES, 0)
        for record in self.threads.values():
            status = as_str(record.get("status")) or "unknown"
            out[status] = out.get(status, 0) + 1
        return out

    # -- writing: every change is durable at once

    def save(self) -> bool:
        """Compact: write every record to the snapshot (atomically, durably) and start a new,
        empty journal. Done at the end of a run; a change alone only appends (`_record`)."""
        doc = {"version": VERSION, "threads": self.threads}
        data = (json.dumps(doc, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
        base = journal.digest(data)
        written = False

        def write() -> None:
            nonlocal written
            written = write_if_changed(self.path, data, durable=True)

        if self._journal is not None or journal.journal_path(self.path).exists():
            self._writer().compacted(base, write)
        else:
            write()
        self._base, self._snapshot_size = base, len(data)
        self._pending = 0
        self.legacy = False
        return written

    def compact(self) -> bool:
        """`save` if the journal holds changes the snapshot lacks (the end of a run)."""
        return self.save() if self._pending else False

    def _writer(self) -> journal.Writer:
        if self._journal is None:
            self._journal = journal.Writer(self.path, self._base or "", durable=True)
        return self._journal

    def _record(self, uuid: str, record: Record) -> None:
        """One change, durable before this returns: a journal line (a whole snapshot for the
        first change of a new archive or of a legacy file, and when the journal is due)."""
        if self._base is None or self.legacy:
            self.save()
            return
        writer = self._writer()
        writer.append([(uuid, record)])
        self._pending += 1
        if writer.due(self._snapshot_size):
            self.save()

    def _set(self, uuid: str, record: Record, keep_dir: bool = True) -> None:
        if record.get("lastUpdated"):
            record["lastUpdated"] = canonical_time(record["lastUpdated"])
        old = self.threads.get(uuid) or {}
        if keep_dir and "dir" not in record and old.get("dir"):
            record["dir"] = old["dir"]
        self.threads[uuid] = record
        self._record(uuid, record)

    def mark_ok(
        self,
        uuid: str,
        *,
        last_updated: str,
        title: str,
        dir: str | None = None,
        now: datetime | None = None,
        note: str = "",
        losses: int = 0,
        versions: int = 0,
    ) -> None:
        record: Record = {
            "status": "ok",
            "lastUpdated": last_updated,
            "title": title[:TITLE_MAX],
            "exported_at": _now(now),
        }
        if dir:
            record["dir"] = dir
        if note:  # kept but flagged, e.g. a schematized listing that ended early
            record["note"] = note[:ERROR_MAX]
        if losses:  # turns that lost content to a shape this version does not read (§9.1)
            record["losses"] = losses
        if versions:  # earlier versions kept in the thread's history/ (archive/history.py)
            record["versions"] = versions
        self._set(uuid, record)

    def set_losses(self, uuid: str, losses: int) -> bool:
        """Record a re-render's count of content not read (0 clears it); False when the
        thread has no record or the count is unchanged."""
        old = self.threads.get(uuid)
        if old is None or int(old.get("losses") or 0) == losses:
            return False
        record = {k: v for k, v in old.items() if k != "losses"}
        if losses:
            record["losses"] = losses
        self._set(uuid, record)
        return True

    def mark_error(
        self,
        uuid: str,
        *,
        error: str,
        last_updated: str = "",
        title: str = "",
        now: datetime | None = None,
    ) -> None:
        self._set(
            uuid,
            {
                "status": "error",
                "lastUpdated": last_updated,
                "title": title[:TITLE_MAX],
                "failed_at": _now(now),
                "error": error[:ERROR_MAX],
            },
        )

    def mark_expired(
        self,
        uuid: str,
        *,
        note: str = "ENTRY_EXPIRED",
        last_updated: str = "",
        title: str = "",
        now: datetime | None = None,
    ) -> None:
        self._mark_terminal("expired", uuid, note, last_updated, title, now)

    def mark_deleted(
        self,
        uuid: str,
        *,
        note: str = "ENTRY_DELETED",
        last_updated: str = "",
        title: str = "",
        now: datetime | None = None,
    ) -> None:
        self._mark_terminal("deleted", uuid, note, last_updated, title, now)

    def _mark_terminal(
        self,
        status: str,
        uuid: str,
        note: str,
        last_updated: str,
        title: str,
        now: datetime | None,
    ) -> None:
        """`expired` / `deleted`: terminal states, stamped `<status>_at` with a note."""
        self._set(
            uuid,
            {
                "status": status,
                "lastUpdated": last_updated,
                "title": title[:TITLE_MAX],
                f"{status}_at": _now(now),
                "note": note,
            },
        )
