"""Write the archive's `index.md` (and its year pages) from the thread.json files on disk.

`re-render`, `spaces` and `export` call it after their writes, so a person opening the
archive folder (on GitHub, in Obsidian) finds every thread from one page. Zero network;
the thread.json fields come from `space_catalog.scan_disk` (its cache spares re-reading
unchanged files). Year pages no longer produced are removed.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from pplx_export.archive.paths import ensure_inside
from pplx_export.pipeline.space_catalog import DiskThread, newest, scan_disk
from pplx_export.render.archive_index import (
    INDEX_FILE,
    SPACES_INDEX,
    IndexThread,
    render_archive_index,
)
from pplx_export.util.atomic import write_if_changed
from pplx_export.util.timefmt import format_utc, parse_time

log = logging.getLogger(__name__)

_YEAR_LINK = re.compile(r"\b(index-(?:\d{4}|unknown)\.md)\b")
_DIR_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def index_threads(root: Path, rels: list[str] | None = None) -> list[IndexThread]:
    problems: list[str] = []
    found = scan_disk(root, problems, rels=rels)
    for line in problems:
        log.warning("index.md: %s", line)
    return _from_disk(found)


def _from_disk(found: dict[str, list[DiskThread]]) -> list[IndexThread]:
    out = []
    for dirs in found.values():
        t = newest(dirs)
        moment = parse_time(t.last_updated)
        stamp = format_utc(moment) if moment is not None else ""
        name = t.rel.rsplit("/", 1)[-1]
        day = stamp[:10] or (name[:10] if _DIR_DATE.match(name) else "")
        space = (t.space or {}).get("title", "") or (t.space or {}).get("slug", "")
        out.append(IndexThread(t.rel, t.title, t.mode, t.author, space, day, stamp or day))
    return out


def write_archive_index(
    root: Path,
    lang: str = "en",
    flavor: str = "github",
    threads: list[IndexThread] | None = None,
) -> list[str]:
    """Write index.md (and index-YYYY.md pages); return the names written or removed.
    The year pages the previous index.md linked and this one does not are removed (the
    root is not listed for them)."""
    spaces = (root / SPACES_INDEX).is_file()
    threads = index_threads(root) if threads is None else threads
    files = render_archive_index(threads, lang, flavor, spaces)
    index = root / INDEX_FILE
    try:
        before = set(_YEAR_LINK.findall(index.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError):
        before = set()
    changed = []
    for name, text in sorted(files.items()):
        if write_if_changed(ensure_inside(root, root / name), text):
            changed.append(name)
    for name in sorted(before - set(files)):
        try:
            ensure_inside(root, root / name).unlink()
            changed.append(name)
        except FileNotFoundError:
            pass
    return changed


def write_front_door(
    root: Path, lang: str = "en", flavor: str = "github", rels: list[str] | None = None
) -> None:
    """spaces/ (the page each thread links as its space's) and index.md, from the archive
    alone: what export, batch and re-render leave behind, so that no link of a thread page
    points at a page not written yet. `spaces --fetch-meta` adds the spaces' metadata."""
    from pplx_export.commands.spaces.pages import write_pages
    from pplx_export.pipeline.space_catalog import build_catalog

    problems: list[str] = []
    disk = scan_disk(root, problems, rels=rels)
    catalog = build_catalog(root, disk, problems)
    for problem in catalog.problems:
        log.warning("spaces: %s", problem)
    write_pages(root, catalog, lang, flavor)
    write_archive_index(root, lang, flavor, _from_disk(disk))


__all__ = ["INDEX_FILE", "index_threads", "write_archive_index", "write_front_door"]
