"""`pplx-export sync-space`: patch `thread.json` space fields from the indexes. Zero network.

A thread moved to another space (or out of one) keeps its old `space` in thread.json until
it is exported again, which may be never for an unchanged thread. The indexes know better
(`pipeline.space_catalog` decides what they say). Only the `space` key changes: the document is
re-serialised exactly as the writer does (same key order, same bytes elsewhere) and
replaced atomically. Threads no index lists are left alone. When anything changed, spaces/
is rebuilt; the Markdown of a patched thread shows its new space after the next
`re-render` (its thread.json changed, so `--changed-only` picks it up).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from pplx_export.archive.thread_json import THREAD_JSON, dump_thread_json
from pplx_export.commands.spaces.pages import require_archive, write_pages
from pplx_export.context import RunOptions
from pplx_export.models import JSON
from pplx_export.pipeline.space_catalog import DiskThread, IndexFact, SpaceRef, build_catalog
from pplx_export.store.lock import archive_lock
from pplx_export.util.atomic import atomic_write_text, read_with_stat
from pplx_export.util.jsonobj import attrs_json, pairs_json
from pplx_export.util.jsontext import loads
from pplx_export.util.lenient import as_str
from pplx_export.util.tally import RunTally

log = logging.getLogger(__name__)


@dataclass
class SpaceChange:
    uuid: str
    dir: str
    title: str
    before: SpaceRef | None
    after: SpaceRef | None

    def to_json(self) -> JSON:
        return {**attrs_json(self, "uuid dir title"), "from": self.before, "to": self.after}


@dataclass
class SyncSpaceResult(RunTally):
    checked: int = 0
    changes: list[SpaceChange] = field(default_factory=list)
    spaces_written: list[str] = field(default_factory=list)

    def to_json(self) -> JSON:
        return {
            "checked": self.checked,
            "changed": [c.to_json() for c in self.changes],
            "failures": pairs_json(self.failures, "dir", "reason"),
            "spaces_written": self.spaces_written,
        }

    def line(self) -> str:
        text = f"sync-space: {self.checked} threads checked, {len(self.changes)} patched"
        if self.failures:
            text += f", {self.failed} failed"
        if self.changes:
            text += f"; spaces/ rebuilt ({len(self.spaces_written)} files written)"
        return text


def _name(ref: SpaceRef | None) -> str:
    return (ref.get("title") or ref.get("slug") or ref.get("uuid") or "?") if ref else "(none)"


def _same_space(a: SpaceRef, b: SpaceRef) -> bool:
    if a["uuid"] and b["uuid"]:
        return a["uuid"] == b["uuid"]
    return bool(a["slug"]) and a["slug"] == b["slug"]


def wanted_space(have: SpaceRef | None, fact: IndexFact) -> SpaceRef | None:
    """The space thread.json should hold, or `have` itself when it already agrees.

    A library row carries the whole `{uuid, title, slug}` and is taken as is (that covers a
    renamed space too); a space listing knows its space by slug only, so it can move a
    thread into that space but says nothing about the title beyond what was known.
    """
    want = fact.space
    if fact.source.startswith("library:"):
        if want is None or have is None:
            return want
        return have if want == have else dict(want)
    if want is None or (have is not None and _same_space(have, want)):
        return have
    return dict(want)


def _patch(root: Path, disk: DiskThread, space: SpaceRef | None) -> None:
    path = f"{root}{os.sep}{disk.rel}{os.sep}{THREAD_JSON}"
    data, _stat = read_with_stat(path)
    doc = loads(data)
    if not isinstance(doc, dict) or as_str(doc.get("web_uuid")).lower() != disk.uuid:
        raise ValueError("thread.json changed under us")
    doc["space"] = (
        {"uuid": space["uuid"], "title": space["title"], "slug": space["slug"]} if space else None
    )
    atomic_write_text(Path(path), dump_thread_json(doc), durable=True)


def run_sync_space(opts: RunOptions) -> SyncSpaceResult:
    root = Path(opts.out)
    require_archive(root)
    with archive_lock(root, opts.held_locks):
        return _sync_space(root, opts.lang, opts.flavor)


def _sync_space(root: Path, lang: str, flavor: str) -> SyncSpaceResult:
    started = time.monotonic()
    result = SyncSpaceResult()
    catalog = build_catalog(root)
    for problem in catalog.problems:
        log.warning("sync-space: %s", problem)
    for uuid in sorted(catalog.disk):
        fact = catalog.index.get(uuid)
        for disk in sorted(catalog.disk[uuid], key=lambda d: d.rel):
            result.checked += 1
            if fact is None:
                continue
            want = wanted_space(disk.space, fact)
            if want == disk.space:
                continue
            try:
                _patch(root, disk, want)
            except (OSError, ValueError, UnicodeDecodeError) as exc:
                result.failures.append((disk.rel, str(exc)))
                log.error("sync-space: %s not patched: %s", disk.rel, exc)
                continue
            result.changes.append(SpaceChange(uuid, disk.rel, disk.title, disk.space, want))
            log.info(
                "sync-space: %s (%s): %s -> %s [%s]",
                disk.title,
                uuid[:8],
                _name(disk.space),
                _name(want),
                disk.rel,
            )
    if result.changes:
        result.spaces_written, _removed = write_pages(root, build_catalog(root), lang, flavor)
    result.elapsed = time.monotonic() - started
    return result
