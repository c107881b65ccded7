"""The thread directories of an archive, as their thread.json files describe them.

`scan_thread_dirs` reads every `<root>/<account>/<mode>/<dir>/thread.json`: the batch state
is rebuilt from it when corrupt (`archive/state.py`), `status` counts from it, and
`archive/state_check.py` compares it with the state.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pplx_export.archive.library_index import INDEX_DIR
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
