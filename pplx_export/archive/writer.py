"""The thread writer: the one place where a Conversation becomes files on disk.

Online export and offline re-render both end here (product.md §2.1); the writer never knows
where the raw came from beyond the `source` label. Every file is written atomically and only
when its bytes change. Files that cannot be regenerated (raw responses, the assets
manifest and thread.json when an online export changed their state, the report body as
downloaded) are durable; derived files skip the fsyncs. thread.json is written last: a
directory with a current thread.json has everything else on disk already.

Long because it is the one place the write rules live (atomic, only changed bytes, durable
or derived, thread.json last, earlier versions kept): the file sink, the re-render fast path
and each kind of file written share them, and a second module would be a second place to get
them wrong.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pplx_export.archive import assets as asset_files
from pplx_export.archive import history
from pplx_export.archive.fingerprint import outputs_stamp, recorded_file, recorded_outputs
from pplx_export.archive.migrate import merge_thread_dir, sweep_trash
from pplx_export.archive.paths import ensure_inside, find_thread_dirs, thread_dir
from pplx_export.archive.raw import (
    RAW_BLOCKS,
    RAW_ENTRIES,
    dump_raw,
    redact_signatures,
    redact_token_bytes,
    redact_tokens,
)
from pplx_export.archive.scan import ThreadDirs
from pplx_export.archive.thread_json import (
    THREAD_JSON,
    build_thread_json,
    dump_thread_json,
    load_json_dict,
)
from pplx_export.archive.variant_hits import variant_records, warn_variants
from pplx_export.errors import ArchiveError
from pplx_export.models import JSON, Conversation
from pplx_export.util.atomic import atomic_write_bytes, fsync_dir
from pplx_export.util.jsontext import identical
from pplx_export.util.timefmt import format_utc

log = logging.getLogger(__name__)

# The report body exactly as downloaded (before LaTeX normalisation): the raw input of
# report.md, so re-render can rebuild report.md offline. The earlier tool kept no such file;
# for its archives re-render leaves an existing report.md untouched.
REPORT_SOURCE = "assets/report_body.md"
DERIVED_FIXED = frozenset({"conversation.md", "sources.md", "sources.json", "report.md"})
_TURN_FILE = re.compile(r"turns/turn_\d{4,}\.md")
_OUR_TURN = re.compile(r"turn_\d{4,}\.md")
SOURCES = ("online", "offline")


@dataclass
class WriteResult:
    directory: Path
    written: list[str] = field(default_factory=list)  # relative paths (would be, in dry run)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    merged_from: list[Path] = field(default_factory=list)
    variant_hits: list[JSON] = field(default_factory=list)  # records worth a WARNING
    redacted_tokens: int = 0
    redacted_signatures: int = 0
    # sha256 of the files `put` handled (raw files, thread.json, the manifest), as they are
    # now on disk: spares the render fingerprint a re-read.
    digests: dict[str, str] = field(default_factory=dict)
    # (size, mtime_ns) of every file put, as it is now on disk (not in a dry run).
    stats: dict[str, tuple[int, int]] = field(default_factory=dict)
    # render_state.outputs_stamp of the derived files (not in a dry run).
    outputs_stamp: str = ""
    # Inputs the writer found missing (spares the fingerprint a stat).
    absent: set[str] = field(default_factory=set)
    # thread.json as it is now on disk (or would be, in a dry run): spares the search
    # index a re-read.
    thread_doc: JSON | None = None
    # The `history` entry of the version this write kept (the server lost or rewrote turns).
    kept_version: JSON | None = None

    @property
    def changed(self) -> bool:
        return bool(self.written or self.removed)


class _Sink:
    """Writes (or, in a dry run, compares) files of one thread directory."""

    def __init__(self, directory: Path, result: WriteResult, dry_run: bool) -> None:
        self.directory = directory
        self.base = str(directory) + os.sep
        self.result = result
        self.dry_run = dry_run

    def _stat(self, rel: str) -> os.stat_result | None:
        try:
            return os.stat(self.base + rel)
        except OSError:
            return None

    def put(
        self,
        rel: str,
        data: str | bytes,
        *,
        durable: bool,
        known: tuple[int, int, str] | None = None,
        sync_dir: bool = True,
    ) -> bool:
        """Write `rel` unless it holds `data` already; True when written (or, in a dry run,
        when it would be). `known` is a trusted `(size, mtime_ns, sha256)` record of the
        file: when size and mtime still match, the digest decides without reading the file.
        `sync_dir=False`: a durable write leaves the directory fsync to the caller."""
        raw = data.encode("utf-8") if isinstance(data, str) else data
        digest = hashlib.sha256(raw).hexdigest()
        self.result.digests[rel] = digest
        st = self._stat(rel)
        if st is not None and st.st_size == len(raw):
            stat = (st.st_size, st.st_mtime_ns)
            if known is not None and known == (*stat, digest):
                self._unchanged(rel, stat)
                return False
            try:
                same = (self.directory / rel).read_bytes() == raw
            except OSError:
                same = False
            if same:
                self._unchanged(rel, stat)
                return False
        self.result.written.append(rel)
        if self.dry_run:
            return True
        st = atomic_write_bytes(self.base + rel, raw, durable=durable, sync_dir=sync_dir)
        self.result.stats[rel] = (st.st_size, st.st_mtime_ns)
        return True

    def still(
        self, rel: str, known: tuple[int, int, str], stat: tuple[int, int] | None = None
    ) -> bool:
        """True (and `rel` counted unchanged, with the recorded digest) when the file is
        still at the recorded `(size, mtime_ns)`; `stat` is that of the file as just read,
        if the caller has it (else the file is stat'ed)."""
        if stat is None:
            st = self._stat(rel)
            stat = (st.st_size, st.st_mtime_ns) if st is not None else None
        if stat != known[:2]:
            return False
        self.result.digests[rel] = known[2]
        self._unchanged(rel, known[:2])
        return True

    def _unchanged(self, rel: str, stat: tuple[int, int]) -> None:
        self.result.unchanged.append(rel)
        self.result.stats[rel] = stat

    def put_derived(self, files: list[tuple[str, bytes]], recorded_stamp: str) -> bool:
        """Put the derived files; when the stamp of their bytes and on-disk stats equals the
        one recorded after the last render, every file is known unchanged without a read.

        The stamp also covers the `(size, mtime_ns)` of `turns/`: a file added to or removed
        from it changes the directory's mtime. Returns True when the stamp matched, which
        also means `turns/` holds no file this render did not put.
        """
        if recorded_stamp:
            stats = []
            for rel, raw in files:
                st = self._stat(rel)
                if st is None or st.st_size != len(raw):
                    break
                stats.append((st.st_size, st.st_mtime_ns))
            else:
                if self._stamp(files, stats) == recorded_stamp:
                    for (rel, _), stat in zip(files, stats, strict=True):
                        self._unchanged(rel, stat)
                    self.result.outputs_stamp = recorded_stamp
                    return True
        for rel, raw in files:
            self.put(rel, raw, durable=False)
        return False

    def stamp_outputs(self, files: list[tuple[str, bytes]]) -> None:
        """Record the stamp of the derived files as they are now (after stale turn files
        are gone, so the stamp holds the final mtime of `turns/`)."""
        if self.dry_run:
            return
        stats = [self.result.stats.get(rel) for rel, _ in files]
        if None in stats:
            return  # vanished under us: record no stamp, the next run compares bytes
        self.result.outputs_stamp = self._stamp(files, stats)  # type: ignore[arg-type]

    def _stamp(self, files: list[tuple[str, bytes]], stats: list[tuple[int, int]]) -> str:
        st = self._stat("turns")
        turns = (st.st_size, st.st_mtime_ns) if st is not None else (0, 0)
        return outputs_stamp(files, stats, turns)

    def remove(self, rel: str) -> None:
        self.result.removed.append(rel)
        if not self.dry_run:
            (self.directory / rel).unlink(missing_ok=True)


def _as_path(p: Path | str) -> Path:
    # Path(p) parses p again even when it is a Path already; twice per thread adds up.
    return p if isinstance(p, Path) else Path(p)


def _check_rel(rel: str) -> None:
    if rel not in DERIVED_FIXED and not _TURN_FILE.fullmatch(rel):
        raise ArchiveError(f"renderer produced an unexpected file name: {rel!r}")


def prepare_thread_dir(
    root: Path,
    conv: Conversation,
    account_folder: str,
    *,
    dry_run: bool,
    dirs: ThreadDirs | None = None,
) -> tuple[Path, list[Path]]:
    """The canonical directory, after merging every other directory of this thread into it.

    The online pipeline calls this before downloading assets (they go to
    `⟨dir⟩/assets/files/`), then `write_thread(..., dest=dir)`; without `dest`,
    write_thread calls it itself. `dirs` is the run's listing of the archive (no glob per
    thread); it learns of the directory created and of those merged away.
    """
    target = thread_dir(
        root, account_folder, conv.mode, conv.last_updated, conv.title, conv.web_uuid
    )
    merged: list[Path] = []
    candidates = dirs.named_for(conv.web_uuid) if dirs is not None else None
    for old in find_thread_dirs(root, conv.web_uuid, candidates):
        if old.resolve() == target.resolve():
            continue
        if dry_run:
            merged.append(old)
            continue
        sweep_trash(old.parent)
        if merge_thread_dir(old, target, conv.web_uuid).removed_src:
            merged.append(old)
            if dirs is not None:
                dirs.discard(old)
    if dirs is not None and not dry_run:
        dirs.add(target)
    return target, merged


@dataclass(frozen=True)
class FastPath:
    """What re-render has already read from, or checked about, the directory it writes in
    place, so that the writer does not do it again (the fast path of a no-change re-render).

    `inside_root`: the listing reached the directory without a symlink, so it lies plainly
    inside the root (spares `ensure_inside`). `thread_doc`: the thread.json on disk, as
    parsed (not read twice), and `thread_stat` the `(size, mtime_ns)` it was read at.
    `recorded`: the directory's render_state entry, whose digests let unchanged files be
    recognised without reading them. `raw_bytes`: the raw files as read (name -> bytes),
    when they hold tokens to redact: redacted in the bytes, not decoded and encoded again.
    """

    inside_root: bool = False
    thread_doc: JSON | None = None
    thread_stat: tuple[int, int] | None = None
    recorded: JSON | None = None
    raw_bytes: Mapping[str, bytes] | None = None


NO_FAST_PATH = FastPath()


def write_thread(
    root: Path,
    conv: Conversation,
    rendered: Mapping[str, str],
    *,
    account_folder: str,
    source: str,
    report_body: str | None = None,
    dest: Path | None = None,
    redact: bool = True,
    log_variants: bool = True,
    dry_run: bool = False,
    now: datetime | None = None,
    fast: FastPath = NO_FAST_PATH,
) -> WriteResult:
    """Write one thread's directory and return what changed.

    `rendered` maps relative paths (conversation.md, turns/turn_NNNN.md, sources.md,
    sources.json, report.md) to text. `source` is "online" (raw files are (re)written from
    `conv.raw_plain`/`conv.raw_blocks`, exported_at is stamped now) or "offline" (raw files are
    left alone unless they still hold a write token, exported_at is kept). `dest` pins the
    directory (re-render writes in place); otherwise it is derived from the conversation and
    older directories of the same thread are merged into it. With `log_variants` the
    answer-variant warnings are emitted here (the caller appends `variant_hits` to the
    store's log); a parallel re-render passes False and does both in the parent. `fast` is
    what re-render already knows about `dest` (see `FastPath`).
    """
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, not {source!r}")
    for rel in rendered:
        _check_rel(rel)
    root = _as_path(root)
    if dest is None:
        directory, merged = prepare_thread_dir(root, conv, account_folder, dry_run=dry_run)
    else:
        directory, merged = _as_path(dest), []
        if not fast.inside_root:
            ensure_inside(root, directory)
    result = WriteResult(directory=directory, merged_from=merged)
    sink = _Sink(directory, result, dry_run)
    existing = fast.thread_doc if fast.thread_doc is not None else _read_thread_json(directory)
    if existing is not None and existing.get("web_uuid") not in (None, conv.web_uuid):
        # Same date, slug and uuid8 as another thread: never write over its files.
        raise ArchiveError(
            f"{directory} belongs to thread {existing.get('web_uuid')}, not {conv.web_uuid}"
        )
    # 0. A new export that would lose turns (or change archived ones) keeps the raw files
    # as they are in history/ first: they are the archive's only copy of what was lost.
    versions = history.entries_of(existing)
    if source == "online" and existing is not None and not dry_run:
        kept = _keep_earlier_version(directory, conv, now)
        if kept is not None:
            result.kept_version = kept
            versions = [*versions, kept]
    if versions and "conversation.md" in rendered:
        rendered = {**rendered, "conversation.md": rendered["conversation.md"]}
        rendered["conversation.md"] += history.footer(versions)
    # 1. Raw files first: they are the fidelity anchor.
    _write_raw(sink, conv, source=source, redact=redact, raw_bytes=fast.raw_bytes)
    if report_body is not None:
        sink.put(REPORT_SOURCE, report_body, durable=True)
    # 2. Inline assets, derived files, stale turn files.
    _write_derived(sink, conv, rendered, recorded_outputs(fast.recorded))
    # 3. Manifest (state: downloads and expiry flags), then thread.json. Online they record
    # new state (export stamp, downloads) and are durable; offline only their derived keys
    # change, which a re-render can redo.
    online = source == "online"
    _write_manifest(sink, conv, durable=online, recorded=fast.recorded)
    doc = build_thread_json(conv, existing, exported_at=_exported_at(conv, existing, source, now))
    if versions:
        doc[history.HISTORY_KEY] = versions
    result.thread_doc = doc
    _put_json(
        sink,
        THREAD_JSON,
        doc,
        existing,
        dump_thread_json,
        durable=online,
        known=recorded_file(fast.recorded, THREAD_JSON),
        on_disk_stat=fast.thread_stat,
    )
    # 4. Answer variants: warn on every online fetch, offline only when the list changed.
    result.variant_hits = _variant_hits(conv, existing, online)
    if log_variants and result.variant_hits and not dry_run:
        warn_variants(result.variant_hits)
    return result


def _keep_earlier_version(directory: Path, conv: Conversation, now: datetime | None) -> JSON | None:
    """Copy the archived raw files into history/ when `conv` would lose any of their turns;
    the history entry, or None when nothing would be lost. Warns once, naming the thread."""
    old_plain = history.read_raw_entries(directory)
    if old_plain is None:
        return None
    reason = history.loss_reason(old_plain, conv.raw_plain)
    if not reason:
        return None
    turns = history.turn_count(old_plain)
    dir_value = history.keep_version(directory, reason=reason, turns=turns, now=now)
    log.warning(
        "thread %s “%s”: the server's copy differs from the archive (%s); "
        "the earlier version is kept in %s",
        conv.web_uuid[:8],
        conv.title,
        reason,
        (directory / dir_value).as_posix(),
    )
    return history.history_entry(dir_value, reason=reason, turns=turns, now=now)


def _variant_hits(conv: Conversation, existing: JSON | None, online: bool) -> list[JSON]:
    records = variant_records(conv.web_uuid, conv.title, conv.answer_variants)
    old_variants = (existing or {}).get("answer_variants") or []
    if records and (online or old_variants != conv.answer_variants):
        return records
    return []


def _read_thread_json(directory: Path) -> JSON | None:
    """The thread.json in `directory` as a dict; None when missing or not a JSON object."""
    try:
        text = (directory / THREAD_JSON).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ArchiveError(f"cannot read {directory / THREAD_JSON}: {exc}") from exc
    doc = load_json_dict(text)
    if doc is None:
        log.warning("%s: thread.json is not a JSON object, rebuilding it", directory)
    return doc


def _write_derived(
    sink: _Sink, conv: Conversation, rendered: Mapping[str, str], recorded_stamp: str
) -> None:
    """Inline assets and the rendered files; turn files this render did not produce go."""
    derived: list[tuple[str, bytes]] = []
    names = asset_files.inline_file_names(conv.assets)
    for a in asset_files.inline_assets(conv.assets):
        rel = f"{asset_files.FILES_DIR}/{names[id(a)]}"
        derived.append((rel, asset_files.inline_text(a).encode("utf-8")))
        a.downloaded_to = rel
    derived += [(rel, rendered[rel].encode("utf-8")) for rel in sorted(rendered)]
    if sink.put_derived(derived, recorded_stamp):
        return
    try:
        turn_names = os.listdir(sink.base + "turns")
    except (FileNotFoundError, NotADirectoryError):
        turn_names = []
    # Only our own names go: a `turn_NNNN.md` this render did not write (numbered above the
    # turn count: the thread had more turns once). Anything else in turns/ was put there by
    # someone else and stays (`verify` lists it as not ours).
    for name in sorted(turn_names):
        if _OUR_TURN.fullmatch(name) and f"turns/{name}" not in rendered:
            sink.remove(f"turns/{name}")
    sink.stamp_outputs(derived)


def _write_manifest(
    sink: _Sink, conv: Conversation, *, durable: bool, recorded: JSON | None
) -> None:
    old_manifest, manifest_stat = asset_files.read_manifest(sink.directory)
    manifest = asset_files.build_manifest(conv.assets, sink.directory, old_manifest)
    if manifest is not None:
        _put_json(
            sink,
            asset_files.MANIFEST,
            manifest,
            old_manifest,
            asset_files.dump_manifest,
            durable=durable,
            known=recorded_file(recorded, asset_files.MANIFEST),
            on_disk_stat=manifest_stat,
        )
    elif manifest_stat is None:
        sink.result.absent.add(asset_files.MANIFEST)


def _exported_at(
    conv: Conversation, existing: JSON | None, source: str, now: datetime | None
) -> str | None:
    """Online: stamped now (unless the conversation carries one). Offline: kept as on disk;
    an old archive without one gets the conversation's, or null (never invented)."""
    if source == "online":
        return conv.exported_at or format_utc(now or datetime.now(UTC))
    if existing is not None and "exported_at" in existing:
        value: str | None = existing["exported_at"]
        return value
    return conv.exported_at or None


def _put_json(
    sink: _Sink,
    rel: str,
    doc: JSON,
    on_disk: JSON | None,
    dump: Callable[[JSON], str],
    *,
    durable: bool,
    known: tuple[int, int, str] | None,
    on_disk_stat: tuple[int, int] | None = None,
) -> None:
    """Put `dump(doc)`, where `on_disk` is the document parsed from the file now at `rel`.

    A file still at its recorded size and mtime is the one the last render wrote (or found
    equal), so it holds `dump(on_disk)`; a new document identical to that one is the same
    text, and is known unchanged without being dumped and hashed again. `on_disk_stat` is
    the `(size, mtime_ns)` of the file `on_disk` was read from, when the caller has it.
    """
    if (
        on_disk is not None
        and known is not None
        and identical(doc, on_disk)
        and sink.still(rel, known, on_disk_stat)
    ):
        return
    sink.put(rel, dump(doc), durable=durable, known=known)


def _write_raw(
    sink: _Sink,
    conv: Conversation,
    *,
    source: str,
    redact: bool,
    raw_bytes: Mapping[str, bytes] | None = None,
) -> None:
    """Online: the raw files as fetched (tokens redacted). Offline: rewritten only to take
    a write token out; from `raw_bytes` (the file as read) by replacing the token values in
    place when it can, so the rest of the file keeps the earlier tool's bytes exactly."""
    docs: list[tuple[str, JSON]] = []
    if conv.raw_plain:
        docs.append((RAW_ENTRIES, conv.raw_plain))
    elif source == "online":
        raise ArchiveError(f"thread {conv.web_uuid}: no raw plain response to store")
    if conv.raw_blocks is not None:
        docs.append((RAW_BLOCKS, conv.raw_blocks))
    written = False
    for rel, doc in docs:
        count = 0
        data: bytes | None = None
        if redact:
            on_disk = raw_bytes.get(rel) if raw_bytes is not None and source == "offline" else None
            in_place = redact_token_bytes(on_disk) if on_disk is not None else None
            if in_place is None:
                # Not the bytes json.dumps writes (or no bytes): encode the document, which
                # is needed anyway, and redact those bytes; a walk of the tree for tokens
                # costs as much again. The walk remains for what the byte scan declines.
                in_place = redact_token_bytes(dump_raw(doc))
            if in_place is not None:
                data, count = in_place
            else:
                doc, count = redact_tokens(doc)
            sink.result.redacted_tokens += count
        # Offline, raw files are the input: rewritten only to take a write token out.
        if source == "online" or count:
            data = data if data is not None else dump_raw(doc)
            if redact and source == "online":
                # A signed URL's signature is a credential for hours: the URL stays.
                data, signed = redact_signatures(data)
                sink.result.redacted_signatures += signed
            # Both raw files live in one directory: one fsync of it after both renames.
            written = sink.put(rel, data, durable=True, sync_dir=False) or written
    if written and not sink.dry_run:
        fsync_dir(sink.directory)
