"""`pplx-export spaces`: one Markdown page per space under `<archive>/spaces/` (product §4).

Offline by default: the pages come from the archive alone (`pipeline.space_catalog`), so the
command makes no request at all. `--fetch-meta` first asks the API for each space's
metadata (`commands.spaces.meta`) and stores it in the state store (`space_meta`); the pages
then show owner and members. Files are written only when their bytes change, and a page whose space
is gone is removed (only pages the previous `spaces.json` lists: nothing else under
`spaces/` is ours to delete).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pplx_export import __version__
from pplx_export.archive.paths import INDEX_DIR, ensure_inside
from pplx_export.context import RunOptions
from pplx_export.errors import UsageError
from pplx_export.models import JSON
from pplx_export.pipeline.space_catalog import (
    INDEX_FILE,
    Catalog,
    build_catalog,
    read_cache,
    scan_disk,
)
from pplx_export.render.spaces import (
    SpacePage,
    join_spaces_json,
    page_json_text,
    render_space_page,
    render_spaces_index,
)
from pplx_export.renderer_version import RENDERER_VERSION
from pplx_export.store.docs import load_bytes, save_bytes
from pplx_export.store.lock import archive_lock
from pplx_export.store.space_files import META_KEY, load_meta, save_meta
from pplx_export.util.atomic import write_if_changed
from pplx_export.util.gcpause import gc_paused
from pplx_export.util.jsonobj import attrs_json
from pplx_export.util.jsontext import dumps_compact, loads
from pplx_export.util.lenient import as_dict, as_str, dicts, lenient_int

if TYPE_CHECKING:
    # The client and the metadata fetch are needed by `--fetch-meta` only: writing the
    # pages (which export, batch and re-render do too) does without importing them.
    from pplx_export.commands.spaces.meta import MetaOutcome, Opener
    from pplx_export.site.api import PerplexityAPI

log = logging.getLogger(__name__)

SPACES_DIR = "spaces"
SPACES_JSON = "spaces.json"


@dataclass
class SpacesResult:
    directory: Path
    spaces: int = 0
    threads: int = 0
    no_space: int = 0
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    meta: MetaOutcome | None = None
    elapsed: float = 0.0

    visible: dict[str, str] = field(default_factory=dict)  # slug -> account that sees it

    def counts(self) -> JSON:
        return attrs_json(self, "spaces threads no_space visible")

    @classmethod
    def from_stamp(cls, directory: Path, stamp: JSON, meta: MetaOutcome | None) -> SpacesResult:
        counts = as_dict(stamp.get("counts"))
        visible = as_dict(counts.get("visible"))
        return cls(
            directory=directory,
            spaces=lenient_int(counts.get("spaces")),
            threads=lenient_int(counts.get("threads")),
            no_space=lenient_int(counts.get("no_space")),
            meta=meta,
            visible={str(k): str(v) for k, v in visible.items()},
        )

    def visible_to(self, account: str) -> list[str]:
        """Slugs of the spaces whose metadata `account` could read (sorted)."""
        return sorted(slug for slug, via in self.visible.items() if via == account)

    def to_json(self) -> JSON:
        keys = "directory spaces threads no_space written removed problems"
        doc = attrs_json(self, keys, directory=str(self.directory))
        if self.meta is not None:
            meta = self.meta
            keys = "fetched via_other_account failed requests"
            doc["meta"] = attrs_json(meta, keys, via_other_account=meta.via_other)
        return doc

    def line(self) -> str:
        text = (
            f"spaces: {self.spaces} spaces, {self.threads} threads ({self.no_space} in no space); "
            f"{len(self.written)} files written, {len(self.removed)} removed -> {self.directory}"
        )
        if self.meta is not None:
            text += (
                f"; metadata: {self.meta.fetched} fetched ({self.meta.via_other} through another "
                f"account), {self.meta.failed} unavailable, {self.meta.requests} requests"
            )
        return text


def require_archive(root: Path) -> None:
    """The offline commands work on an existing archive; a typo in --out must not create one."""
    if not root.is_dir():
        raise UsageError(f"no archive at {root} (pass --out, or run `pplx-export sync` first)")


def _previous_files(directory: Path) -> set[str]:
    """Page files the last run wrote (from its spaces.json); unreadable -> none."""
    try:
        doc = as_dict(loads((directory / SPACES_JSON).read_bytes()))
    except (OSError, ValueError, UnicodeDecodeError):
        return set()
    pages = dicts(doc.get("spaces"))
    loose = as_dict(doc.get("no_space"))
    if loose:
        pages.append(loose)
    names = {as_str(p.get("file")) for p in pages}
    # Only plain page names: a hand-edited spaces.json must not steer a delete elsewhere.
    return {n for n in names if n.endswith(".md") and "/" not in n and "\\" not in n
            and not n.startswith(".") and n != INDEX_FILE}  # fmt: skip


# A state store document (`index/spaces_pages.json` before).
MEMO_NAME = "spaces_pages"
MEMO_FORMAT = 1


def _page_key(page: SpacePage, lang: str, flavor: str) -> str:
    """A digest of everything a page's text and its part of spaces.json come from: the
    page's fields and threads (a dataclass repr spells every field), the language, the
    flavour and the versions of the code that renders them."""
    text = f"{__version__}|{RENDERER_VERSION}|{lang}|{flavor}|{page!r}"
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _load_memo(root: Path) -> dict[str, Any]:
    """{page file: [key, size, mtime_ns, spaces.json part]} of the last run; unreadable or
    of another format: empty (every page is rendered, as on a first run)."""
    return read_cache(root, MEMO_NAME, MEMO_FORMAT, "pages")


def write_pages(
    root: Path, catalog: Catalog, lang: str, flavor: str = "github"
) -> tuple[list[str], list[str]]:
    """Write every page, index.md and spaces.json; remove stale pages. (written, removed).

    A page whose inputs have the digest of the last run and whose file still has that
    run's size and mtime is neither rendered nor read: with one thread changed, one page
    is (the `spaces_pages` document holds the digests and each page's part of spaces.json)."""
    directory = ensure_inside(root, root / SPACES_DIR)
    memo = _load_memo(root)
    fresh: dict[str, list[Any]] = {}
    files: dict[str, str] = {}
    parts: list[tuple[bool, str]] = []
    for page in catalog.pages:
        key = _page_key(page, lang, flavor)
        held = memo.get(page.file)
        if (
            isinstance(held, list) and len(held) == 4 and held[0] == key
            and isinstance(held[3], str) and held[1:3] == _stat(directory / page.file)
        ):  # fmt: skip
            fresh[page.file] = held
            parts.append((page.no_space, held[3]))
            continue
        files[page.file] = render_space_page(page, lang, flavor)
        part = page_json_text(page)
        fresh[page.file] = [key, 0, 0, part]  # its stat once written, below
        parts.append((page.no_space, part))
    files[INDEX_FILE] = render_spaces_index(catalog.pages, lang, flavor)
    files[SPACES_JSON] = join_spaces_json(parts)
    stale = _previous_files(directory) - {p.file for p in catalog.pages} - set(files)
    written = []
    for name in sorted(files):
        path = ensure_inside(root, directory / name)
        if write_if_changed(path, files[name]):
            written.append(f"{SPACES_DIR}/{name}")
        if name in fresh:
            fresh[name][1:3] = _stat(path) or [0, 0]
    removed = []
    for name in sorted(stale):
        path = ensure_inside(root, directory / name)
        try:
            path.unlink()
            removed.append(f"{SPACES_DIR}/{name}")
        except FileNotFoundError:
            pass
    if fresh != memo:
        try:
            doc = {"format": MEMO_FORMAT, "pages": fresh}
            save_bytes(root, MEMO_NAME, dumps_compact(doc))
        except OSError as exc:  # derived state: the next run renders every page again
            log.warning("could not save %s: %s", MEMO_NAME, exc)
    return written, removed


def space_slugs(catalog: Catalog) -> list[str]:
    return sorted({p.slug for p in catalog.pages if p.slug and not p.no_space})


def refresh_meta(opts: RunOptions, opener: Opener, api: PerplexityAPI | None = None) -> MetaOutcome:
    """Fetch every known space's metadata and merge it into `space_meta`."""
    catalog = build_catalog(opts.out)
    from pplx_export.commands.spaces.meta import fetch_space_meta

    outcome = fetch_space_meta(opts, space_slugs(catalog), opener, api)
    records, _problem = load_meta(opts.out)
    records.update(outcome.records)
    save_meta(opts.out, records)
    return outcome


def run_spaces(
    opts: RunOptions,
    *,
    fetch_meta: bool = False,
    opener: Opener | None = None,
    api: PerplexityAPI | None = None,
) -> SpacesResult:
    """Build spaces/ (and first, with `fetch_meta`, the space metadata)."""
    started = time.monotonic()
    root = Path(opts.out)
    require_archive(root)
    meta = None
    with archive_lock(root, opts.held_locks), gc_paused():
        if fetch_meta:
            if opener is None:
                from pplx_export.site.session import open_session

                opener = open_session
            meta = refresh_meta(opts, opener, api)
        problems: list[str] = []
        changed: list[bool] = []
        disk = scan_disk(root, problems, disk_changed=changed)
        last = _load_stamp(root)
        if not any(changed) and not problems and last and _stamp(root, opts, last) == last:
            # Same thread.json files, same indexes, and the pages still as last written:
            # they hold the bytes this run would write.
            result = SpacesResult.from_stamp(root / SPACES_DIR, last, meta)
            result.elapsed = time.monotonic() - started
            return result
        catalog = build_catalog(root, disk, problems)
        for problem in catalog.problems:
            log.warning("spaces: %s", problem)
        written, removed = write_pages(root, catalog, opts.lang, opts.flavor)
        from pplx_export.commands.spaces.index_page import write_archive_index

        write_archive_index(root, opts.lang, opts.flavor)
        spaces = [p for p in catalog.pages if not p.no_space]
        result = SpacesResult(
            directory=root / SPACES_DIR,
            spaces=len(spaces),
            threads=sum(len(p.threads) for p in catalog.pages),
            no_space=sum(len(p.threads) for p in catalog.pages if p.no_space),
            written=written,
            removed=removed,
            problems=catalog.problems,
            meta=meta,
            visible={p.slug: p.meta_via for p in spaces if p.slug and p.meta_via},
        )
        files = [p.file for p in catalog.pages] + [INDEX_FILE, SPACES_JSON]
        _save_stamp(root, _stamp(root, opts, {"outputs": dict.fromkeys(files)}, result))
    result.elapsed = time.monotonic() - started
    return result


# A state store document (`index/spaces_stamp.json` before).
STAMP_NAME = "spaces_stamp"


def _stat(path: Path) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _stamp(root: Path, opts: RunOptions, last: JSON, result: SpacesResult | None = None) -> JSON:
    """What spaces/ was built from and holds: the language and flavour, the (size, mtime_ns)
    of every index file it read and of every file it wrote, a digest of the space metadata,
    and the counts of the summary."""
    index = root / INDEX_DIR
    inputs: JSON = {}
    for path in sorted(index.glob("library_*.json")) + sorted(index.glob("space_*.json")):
        inputs[path.name] = _stat(path)
    inputs[META_KEY] = _meta_digest(root)
    outputs = {name: _stat(root / SPACES_DIR / name) for name in as_dict(last.get("outputs"))}
    counts = last.get("counts") if result is None else result.counts()
    return {
        "lang": opts.lang,
        "flavor": opts.flavor,
        "inputs": inputs,
        "outputs": outputs,
        "counts": counts,
    }


def _meta_digest(root: Path) -> str | None:
    """The metadata is no file (no stat to compare): a digest of its bytes stands in."""
    try:
        data = load_bytes(root, META_KEY)
    except OSError:
        return "unreadable"
    return None if data is None else hashlib.blake2b(data, digest_size=16).hexdigest()


def _load_stamp(root: Path) -> JSON:
    try:
        return as_dict(loads(load_bytes(root, STAMP_NAME) or b"{}"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}


def _save_stamp(root: Path, stamp: JSON) -> None:
    text = json.dumps(stamp, ensure_ascii=False, sort_keys=True)
    try:
        save_bytes(root, STAMP_NAME, text)
    except OSError as exc:  # derived state: the pages are right without it
        log.warning("could not save %s: %s", STAMP_NAME, exc)
