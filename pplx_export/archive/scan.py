"""The thread directories of an archive, as their thread.json files describe them.

`scan_thread_dirs` reads every `<root>/<account>/<mode>/<dir>/thread.json`: the batch state
is rebuilt from it when corrupt (`store/batch_state.py`), `status` counts from it, and
`store/state_check.py` compares it with the state.

`ThreadDirs` is the archive's directories by uuid8 (the `_⟨uuid8⟩` suffix of their names),
listed once per run and kept current by the run as it creates, merges and removes
directories: finding the directories of a thread to export (`archive/writer.py`) and the
debris of a killed export (`archive/sweep.py`) then costs no walk of the archive per
thread. Like the glob it replaces, it lists names only; callers still check each candidate
on disk (is it a directory, whose thread.json?), so a stale entry costs one stat.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pplx_export.archive.paths import INDEX_DIR, RESERVED_TOP, TRASH_PREFIX, uuid8
from pplx_export.util.lenient import as_str
from pplx_export.util.timefmt import parse_time


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


def newest(threads: list[DiskThread]) -> DiskThread:
    return max(
        threads,
        key=lambda t: parse_time(t.last_updated) or datetime.min.replace(tzinfo=UTC),
    )


# The suffix `_⟨uuid8⟩` of a thread directory name: 9 characters for every real UUID.
_KEY = 9


def _subdir_names(path: str) -> list[str]:
    """Names of the directories in `path` (symlinks to directories included, as a glob)."""
    try:
        with os.scandir(path) as it:
            return [e.name for e in it if e.is_dir()]
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return []


@dataclass
class ThreadDirs:
    """`⟨account⟩/⟨mode⟩/⟨dir⟩` directories of an archive by name suffix, listed once.

    What `⟨root⟩.glob("*/*/*_⟨uuid8⟩")` finds, minus the reserved top-level folders and
    hidden account/mode folders (which every caller skipped): the thread directories and the
    trash directories of killed merges (`.pplx-trash-…`). Other hidden names are left out.
    """

    root: Path
    _by_key: dict[str, set[Path]] = field(default_factory=dict)

    @classmethod
    def build(cls, root: Path) -> ThreadDirs:
        """One walk of the archive's first three levels (a run that sweeps the archive
        fills its listing during that walk instead: `archive/sweep.sweep_archive`)."""
        dirs = cls(root=Path(root))
        top = str(dirs.root)
        for account in _subdir_names(top):
            if not dirs.wants(account):
                continue
            for mode in _subdir_names(os.path.join(top, account)):
                if not dirs.wants(account, mode):
                    continue
                for name in _subdir_names(os.path.join(top, account, mode)):
                    dirs.take(account, mode, name)
        return dirs

    @staticmethod
    def wants(account: str, mode: str = "") -> bool:
        """Is the folder `account` (or `account/mode`) one whose subfolders are listed?"""
        if account in RESERVED_TOP or account.startswith("."):
            return False
        return not mode.startswith(".")

    def take(self, account: str, mode: str, name: str) -> None:
        """The directory `account/mode/name`, found on disk, if it is one to list."""
        if self.wants(account, mode) and (
            not name.startswith(".") or name.startswith(TRASH_PREFIX)
        ):
            self.add(self.root / account / mode / name)

    def add(self, path: Path) -> None:
        """A directory the run created (or is about to create)."""
        self._by_key.setdefault(path.name[-_KEY:], set()).add(path)

    def discard(self, path: Path) -> None:
        """A directory the run removed or renamed away."""
        self._by_key.get(path.name[-_KEY:], set()).discard(path)

    def rels(self) -> list[str]:
        """`⟨account⟩/⟨mode⟩/⟨dir⟩` of every listed thread directory (no trash), sorted: what
        a later step of the run reads instead of listing the archive again."""
        out = []
        for paths in self._by_key.values():
            for p in paths:
                if not p.name.startswith(TRASH_PREFIX):
                    out.append(p.relative_to(self.root).as_posix())
        return sorted(out)

    def named_for(self, web_uuid: str) -> list[Path]:
        """Every listed directory whose name ends in `_⟨uuid8⟩`, sorted (the glob's answer)."""
        suffix = f"_{uuid8(web_uuid)}"
        if len(suffix) == _KEY:
            found = self._by_key.get(suffix, set())
        else:  # a UUID shorter than 8 characters: rare, look at every name
            found = {p for paths in self._by_key.values() for p in paths}
        return sorted(p for p in found if p.name.endswith(suffix))
