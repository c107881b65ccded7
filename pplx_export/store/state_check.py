"""Do the batch state and the thread directories on disk agree? (tests, status checks)"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pplx_export.archive.scan import newest, scan_thread_dirs
from pplx_export.parse.last_updated import normalize_last_updated
from pplx_export.util.lenient import as_str


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
            newest(on_disk).last_updated
        ):
            check.stale.append(uuid)
    for uuid, on_disk in sorted(found.items()):
        if uuid not in threads:
            check.untracked.append(uuid)
        if len(on_disk) > 1:
            check.duplicates.append(uuid)
    return check
