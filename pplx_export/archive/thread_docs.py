"""The exported threads on disk with their whole `thread.json`, for the backfill commands.

`ArchivedThread` is one UUID: its directories (several while a date move is pending a
merge), the newest one, and that directory's thread.json document. The backfills need the
keys beyond identity (`export_via`, `psc_uuid`, `mode`, `url`), so the document is kept
whole. Unreadable thread.json files are left out with a warning: they are `verify`'s
business, and a backfill must not stop on one bad file.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pplx_export.archive.paths import INDEX_DIR
from pplx_export.archive.thread_json import (
    KEY_ORDER,
    THREAD_JSON,
    dump_thread_json,
    load_json_dict,
)
from pplx_export.util.atomic import atomic_write_text
from pplx_export.util.lenient import as_str
from pplx_export.util.timefmt import parse_time

log = logging.getLogger(__name__)

REMOTE_DELETED = "remote_deleted"
# The fixed key order (protocol §6.9) up to the tombstone: it goes after these and before
# any unknown key a newer tool wrote.
_BEFORE_TOMBSTONE = KEY_ORDER[: KEY_ORDER.index(REMOTE_DELETED)]


@dataclass
class ArchivedThread:
    uuid: str
    dirs: list[Path] = field(default_factory=list)
    docs: list[dict[str, Any]] = field(default_factory=list)  # thread.json, same order as dirs

    def _newest_index(self) -> int:
        floor = datetime.min.replace(tzinfo=UTC)
        stamps = [parse_time(d.get("lastUpdated")) or floor for d in self.docs]
        return max(range(len(self.docs)), key=lambda i: stamps[i])

    @property
    def dir(self) -> Path:
        return self.dirs[self._newest_index()]

    @property
    def doc(self) -> dict[str, Any]:
        return self.docs[self._newest_index()]

    def get(self, key: str) -> str:
        return as_str(self.doc.get(key))

    @property
    def mode(self) -> str:
        return self.get("mode") or self.dir.parent.name

    @property
    def account_folder(self) -> str:
        """The archive folder the thread is filed under (its author's display name)."""
        return self.dir.parent.parent.name


def archived_threads(root: Path) -> dict[str, ArchivedThread]:
    """Every `<root>/*/*/*/thread.json` by web UUID (see module doc)."""
    found: dict[str, ArchivedThread] = {}
    for path in sorted(Path(root).glob(f"*/*/*/{THREAD_JSON}")):
        if path.parts[-4] == INDEX_DIR:
            continue
        try:
            doc = load_json_dict(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            doc = None
        uuid = as_str(doc.get("web_uuid")) if doc else ""
        if doc is None or not uuid:
            log.warning("unreadable thread.json skipped: %s", path)
            continue
        thread = found.setdefault(uuid, ArchivedThread(uuid))
        thread.dirs.append(path.parent)
        thread.docs.append(doc)
    return found


def add_remote_deleted(directory: Path, stamp: str) -> bool:
    """Tombstone one thread directory: add `remote_deleted` to its thread.json in place.

    Never overwrites an existing value and touches no other file. Durable (fsynced): it is
    the only record of when the deletion was seen. True when the file was changed.
    """
    path = directory / THREAD_JSON
    doc = load_json_dict(path.read_text(encoding="utf-8"))
    if doc is None:
        log.warning("%s is not a JSON object: no tombstone written there", path)
        return False
    if REMOTE_DELETED in doc:
        return False
    out: dict[str, Any] = {k: doc[k] for k in _BEFORE_TOMBSTONE if k in doc}
    out[REMOTE_DELETED] = stamp
    out.update((k, v) for k, v in doc.items() if k not in out)
    atomic_write_text(path, dump_thread_json(out), durable=True)
    return True
