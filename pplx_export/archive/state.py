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

The state is saved durably after every change, and a thread is marked ok only by the caller
after all its files are on disk (mark done after the write is durable). A corrupt file is
moved to `batch_state.json.corrupt-<epoch>` and the state is rebuilt from the `thread.json`
files on disk, with a warning: losing the state must never mean losing track of exported
threads, and a blank state would silently re-export the whole library.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pplx_export.archive.library_index import INDEX_DIR, move_aside
from pplx_export.errors import ArchiveError
from pplx_export.parse.last_updated import normalize_last_updated
from pplx_export.util.atomic import write_if_changed
from pplx_export.util.lenient import as_str
from pplx_export.util.timefmt import format_utc, parse_time

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


# ------------------------------------------------------------------ thread.json on disk


@dataclass
class DiskThread:
    uuid: str
    dir: Path
    last_updated: str
    title: str
    mode: str
    exported_at: str


def scan_thread_dirs(root: Path) -> tuple[dict[str, list[DiskThread]], list[Path]]:
    """Every `<root>/*/*/*/thread.json`: {web_uuid: [threads]} and the unreadable files.

    A UUID may own several directories (the date part of the name moved); callers decide.
    """
    found: dict[str, list[DiskThread]] = {}
    unreadable: list[Path] = []
    for path in sorted(Path(root).glob("*/*/*/thread.json")):
        if path.parts[-4] == INDEX_DIR:
            continue
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            unreadable.append(path)
            continue
        uuid = as_str(doc.get("web_uuid")) if isinstance(doc, dict) else ""
        if not uuid or not isinstance(doc, dict):
            unreadable.append(path)
            continue
        found.setdefault(uuid, []).append(
            DiskThread(
                uuid=uuid,
                dir=path.parent,
                last_updated=as_str(doc.get("lastUpdated")),
                title=as_str(doc.get("title")),
                mode=as_str(doc.get("mode")) or path.parts[-3],
                exported_at=as_str(doc.get("exported_at")),
            )
        )
    return found, unreadable


def _newest(threads: list[DiskThread]) -> DiskThread:
    return max(
        threads,
        key=lambda t: parse_time(t.last_updated) or datetime.min.replace(tzinfo=UTC),
    )


def rebuild_from_disk(root: Path, *, now: datetime | None = None) -> dict[str, Record]:
    """State records (status ok) for every exported thread found on disk."""
    found, unreadable = scan_thread_dirs(root)
    for path in unreadable:
        log.warning("unreadable thread.json left out of the rebuilt state: %s", path)
    stamp = _now(now)
    records: dict[str, Record] = {}
    for uuid, threads in found.items():
        thread = _newest(threads)
        records[uuid] = {
            "status": "ok",
            "lastUpdated": thread.last_updated,
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

    @classmethod
    def load(cls, root: Path, *, repair: bool = True, now: datetime | None = None) -> BatchState:
        """Read the state of the archive at `root`.

        Missing -> rebuilt from the thread.json files on disk (empty for a new archive): a
        deleted or lost state file must not cost a re-download of every archived thread.

        Corrupt (bad JSON, wrong shape) -> moved aside, rebuilt from the thread.json files on
        disk (plus any record of the old file that still parses, for threads not on disk:
        errors and tombstones), saved, and a warning logged. With `repair=False` the same
        rebuild happens in memory only and nothing on disk changes (read-only commands).
        """
        path = state_path(root)
        state = cls(path=path)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            state.threads = rebuild_from_disk(root, now=now)
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
            return state
        rebuilt = rebuild_from_disk(root, now=now)
        for uuid, record in _salvage(text).items():
            rebuilt.setdefault(uuid, record)
        state.threads = rebuilt
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

    # -- writing: every change is saved at once

    def save(self) -> bool:
        doc = {"version": VERSION, "threads": self.threads}
        text = json.dumps(doc, ensure_ascii=False, indent=1) + "\n"
        written = write_if_changed(self.path, text, durable=True)
        self.legacy = False
        return written

    def _set(self, uuid: str, record: Record, keep_dir: bool = True) -> None:
        old = self.threads.get(uuid) or {}
        if keep_dir and "dir" not in record and old.get("dir"):
            record["dir"] = old["dir"]
        self.threads[uuid] = record
        self.save()

    def mark_ok(
        self,
        uuid: str,
        *,
        last_updated: str,
        title: str,
        dir: str | None = None,
        now: datetime | None = None,
        note: str = "",
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
        self._set(uuid, record)

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


# ------------------------------------------------------------------ state vs directories


@dataclass
class StateCheck:
    """Disagreements between the state file and the thread directories."""

    ok_without_dir: list[str] = field(default_factory=list)  # state ok, no thread.json
    untracked: list[str] = field(default_factory=list)  # thread.json on disk, no state record
    stale: list[str] = field(default_factory=list)  # state ok, lastUpdated differs from disk
    duplicates: list[str] = field(default_factory=list)  # one UUID, several directories
    unreadable: list[str] = field(default_factory=list)  # thread.json that does not parse

    @property
    def ok(self) -> bool:
        return not (
            self.ok_without_dir
            or self.untracked
            or self.stale
            or self.duplicates
            or self.unreadable
        )

    def to_json(self) -> dict[str, list[str]]:
        return {
            "ok_without_dir": self.ok_without_dir,
            "untracked": self.untracked,
            "stale": self.stale,
            "duplicates": self.duplicates,
            "unreadable": self.unreadable,
        }


def check_state_vs_dirs(root: Path, threads: Mapping[str, Mapping[str, Any]]) -> StateCheck:
    """Do the state records and the thread directories under `root` agree?

    Tombstoned threads (`deleted`) keep their files on purpose and errors may have an older
    export on disk, so only `ok` is required to match a directory; a directory whose thread
    is `deleted`/`expired`/`error` in the state is not a disagreement.
    """
    found, unreadable = scan_thread_dirs(root)
    check = StateCheck(unreadable=[p.relative_to(root).as_posix() for p in unreadable])
    for uuid, record in sorted(threads.items()):
        if as_str(record.get("status")) != "ok":
            continue
        on_disk = found.get(uuid)
        if not on_disk:
            check.ok_without_dir.append(uuid)
        elif normalize_last_updated(record.get("lastUpdated")) != normalize_last_updated(
            _newest(on_disk).last_updated
        ):
            check.stale.append(uuid)
    for uuid, on_disk in sorted(found.items()):
        if uuid not in threads:
            check.untracked.append(uuid)
        if len(on_disk) > 1:
            check.duplicates.append(uuid)
    return check
