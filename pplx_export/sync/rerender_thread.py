"""Re-render of one thread directory: read its raw files and thread.json, parse, render,
write in place (`archive.writer.write_thread`), and return what happened.

Never raises for a bad thread: a thread that fails (unreadable raw, SchemaError, a parser
bug) comes back as a "failed" outcome with its reason. Raw files are left alone, with one
exception: a raw file that still holds a thread write token (archives of the earlier tool)
is rewritten once with the token redacted, durably (product.md §2.5). The worker pool
(`sync/rerender_pool.py`) runs this in worker processes; the command (`sync/rerender.py`)
owns every shared file.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from pathlib import Path
from typing import Any

from pplx_export.archive.raw import RAW_BLOCKS, RAW_ENTRIES, has_live_token
from pplx_export.archive.render_state import fingerprint, recorded_file
from pplx_export.archive.report_body import load_report_body
from pplx_export.archive.sweep import sweep_temp_files
from pplx_export.archive.thread_json import THREAD_JSON
from pplx_export.archive.writer import FastPath, write_thread
from pplx_export.errors import ArchiveError, DiskFull, SchemaError
from pplx_export.models import JSON, Conversation
from pplx_export.parse.losses import LOSS_NOTE, loss_line
from pplx_export.search.index import fresh_rows
from pplx_export.sync.assemble import Engine, default_engine, render_files
from pplx_export.sync.relation_facts import facts_record
from pplx_export.sync.rerender_outcome import ThreadOutcome
from pplx_export.util.atomic import read_with_stat
from pplx_export.util.jsontext import loads

log = logging.getLogger(__name__)


def _read(base: str, name: str, *, optional: bool = False) -> tuple[bytes, tuple[int, int]]:
    """The bytes of `base + name` and the (size, mtime_ns) of what was read (for the
    fingerprint). A missing file raises FileNotFoundError when `optional`, else ArchiveError.
    Strings, not pathlib: three reads per thread."""
    try:
        return read_with_stat(base + name)
    except FileNotFoundError as exc:
        if optional:
            raise
        raise ArchiveError(f"{name} missing") from exc
    except OSError as exc:
        raise ArchiveError(f"{name} unreadable: {exc}") from exc


def _decode(name: str, data: bytes) -> Any:
    try:
        return loads(data)
    except ValueError as exc:
        raise ArchiveError(f"{name} unreadable: {exc}") from exc


def _decode_raw(name: str, data: bytes, web_uuid: str) -> Any:
    """A raw file, or an error naming the command that repairs it: raw files are the input,
    so only a fresh fetch can (the next batch refetches such threads by itself)."""
    try:
        return loads(data)
    except ValueError as exc:
        raise ArchiveError(
            f"{name} unreadable: {exc}; `pplx-export export {web_uuid} --force` fetches it "
            "again (so does the next `pplx-export batch`)"
        ) from exc


def rerender_thread(
    root: Path,
    rel: str,
    *,
    lang: str,
    dry_run: bool = False,
    engine: Engine | None = None,
    recorded: JSON | None = None,
    dir_checked: bool = False,
    indexed: str | None = None,
) -> ThreadOutcome:
    """Re-render one thread directory (`rel` to root). Never raises for a bad thread.

    `recorded` is the directory's render_state entry from the last run, if any: its digests
    spare reading derived files that have not changed since. `dir_checked` says the listing
    found no symlink on the way to the directory (see `iter_thread_rels`). `indexed` is the
    signature the search index holds for the directory ("" for none; None: no index to keep
    current): when the thread's files no longer match it, the outcome carries its new rows.
    """
    try:
        return _rerender_thread(
            root,
            rel,
            lang=lang,
            dry_run=dry_run,
            engine=engine,
            recorded=recorded,
            dir_checked=dir_checked,
            indexed=indexed,
        )
    except (ArchiveError, SchemaError, OSError) as exc:
        if isinstance(exc, OSError) and DiskFull.of(exc) is not None:
            # Told to the parent as a value: a worker's exception would travel pickled.
            where = str(exc.filename or root / rel)
            return ThreadOutcome(rel, "failed", error=str(exc), disk_full=where)
        return ThreadOutcome(rel, "failed", error=str(exc))
    except Exception as exc:
        # A parser or renderer bug on one thread must not cost the other thousands; it is
        # reported with its type so it can be fixed, and counted as a failure (exit 4).
        log.debug("re-render of %s crashed", rel, exc_info=True)
        return ThreadOutcome(rel, "failed", error=f"{type(exc).__name__}: {exc}")
    except BaseException:
        # Ctrl-C can land between a temp file's creation and the write that cleans it up
        # on failure: take this thread's debris along before going.
        sweep_temp_files(root / rel)
        raise


def _rerender_thread(
    root: Path,
    rel: str,
    *,
    lang: str,
    dry_run: bool,
    engine: Engine | None,
    recorded: JSON | None = None,
    dir_checked: bool = False,
    indexed: str | None = None,
) -> ThreadOutcome:
    engine = engine or default_engine()
    directory = root / rel
    account_folder, mode_folder, _ = rel.split("/", 2)
    base = f"{root}{os.sep}{rel}{os.sep}"
    doc_bytes, doc_stat = _read(base, THREAD_JSON)
    doc = _decode(THREAD_JSON, doc_bytes)
    if not isinstance(doc, dict) or not isinstance(doc.get("web_uuid"), str):
        raise ArchiveError("thread.json has no web_uuid")
    plain_bytes, plain_stat = _read(base, RAW_ENTRIES)
    plain = _decode_raw(RAW_ENTRIES, plain_bytes, doc["web_uuid"])
    if not isinstance(plain, dict):
        raise ArchiveError(f"{RAW_ENTRIES} is not a JSON object")
    stats = {RAW_ENTRIES: plain_stat}
    blocks_bytes: bytes | None = None
    with contextlib.suppress(FileNotFoundError):  # search threads have no blocks file
        blocks_bytes, stats[RAW_BLOCKS] = _read(base, RAW_BLOCKS, optional=True)
    blocks = (
        None if blocks_bytes is None else _decode_raw(RAW_BLOCKS, blocks_bytes, doc["web_uuid"])
    )
    if blocks_bytes is not None and not isinstance(blocks, dict):
        raise ArchiveError(f"{RAW_BLOCKS} is not a JSON object")
    # Walking the parsed tree for tokens costs as much as parsing it; a byte scan tells
    # whether there is anything to redact at all (almost never, after the first run).
    # A raw file whose size and mtime are still those recorded after the last render is
    # the file that render left (tokens redacted then): its recorded digest stands, and
    # there is nothing to scan (the size+mtime trust of `--changed-only`).
    redact = False
    known: dict[str, str] = {}
    for name, data in ((RAW_ENTRIES, plain_bytes), (RAW_BLOCKS, blocks_bytes)):
        if data is None:
            continue
        rec = recorded_file(recorded, name)
        if rec is not None and rec[:2] == stats[name]:
            known[name] = rec[2]
        else:
            known[name] = hashlib.sha256(data).hexdigest()
            redact = redact or has_live_token(data)
    # Kept only to redact in place (see FastPath.raw_bytes); otherwise freed before the parse.
    raw_bytes = {RAW_ENTRIES: plain_bytes} if redact else None
    if raw_bytes is not None and blocks_bytes is not None:
        raw_bytes[RAW_BLOCKS] = blocks_bytes
    del plain_bytes, blocks_bytes
    # Imported here: a --changed-only no-op run never parses, and the parser is not free to import.
    from pplx_export.archive.official import with_official
    from pplx_export.parse.thread import parse_archived

    web_uuid: str = doc["web_uuid"]
    # Turns only the data export holds go in here; raw_entries.json stays the API's.
    conv = parse_archived(engine.parse, with_official(base, plain), blocks, doc, mode_folder)
    if conv.web_uuid != web_uuid:
        raise ArchiveError(f"parsed web_uuid {conv.web_uuid!r} differs from thread.json")
    conv.raw_plain = plain  # the file's, never the merge: the writer may write it back
    if conv.raw_blocks is None and blocks is not None:
        conv.raw_blocks = blocks
    report_body = load_report_body(directory, conv)
    rendered = render_files(engine, conv, lang, report_body, directory)
    result = write_thread(
        root,
        conv,
        rendered,
        account_folder=account_folder,
        source="offline",
        dest=directory,
        redact=redact,
        log_variants=False,
        dry_run=dry_run,
        fast=FastPath(
            inside_root=dir_checked,
            thread_doc=doc,
            thread_stat=doc_stat,
            recorded=recorded,
            raw_bytes=raw_bytes,
        ),
    )
    # A raw file the writer rewrote (token redaction) has its new stat in result.stats.
    stats.update(result.stats)
    record = None
    if not dry_run:
        record = fingerprint(
            directory,
            engine.version,
            lang,
            {**known, **result.digests},
            stats=stats,
            outputs=result.outputs_stamp,
            absent=result.absent,
            flavor=engine.flavor,
        )
    outcome = ThreadOutcome(
        rel,
        "written" if result.changed else "unchanged",
        files_written=len(result.written),
        files_removed=len(result.removed),
        redacted_tokens=result.redacted_tokens,
        variant_hits=result.variant_hits,
        losses=[f"{LOSS_NOTE} turn {n}: {loss_line(loss)}" for n, loss in conv.losses],
        # Only a record that changed travels back (a worker's outcome is pickled).
        fingerprint=None if record == recorded else record,
        would_write=list(result.written) if dry_run else [],
        would_remove=list(result.removed) if dry_run else [],
    )
    if conv.losses:
        outcome.lossy_thread = (web_uuid, conv.url)
    if not dry_run and int(doc.get("losses") or 0) != len(conv.losses):
        outcome.losses_changed = (web_uuid, len(conv.losses))
    if not dry_run:
        now_doc = result.thread_doc or doc
        if indexed is not None:
            digests = {**known, **result.digests}
            _index_rows(outcome, root, conv, now_doc, indexed, digests)
        if outcome.fingerprint is not None:
            outcome.relation_facts = facts_record(root, rel, conv, now_doc)
    return outcome


def _index_rows(
    outcome: ThreadOutcome,
    root: Path,
    conv: Conversation,
    doc: JSON,
    indexed: str,
    digests: dict[str, str],
) -> None:
    """Fill the outcome's search-index fields. A failure here only costs the parent a
    re-read of the thread (it indexes a thread without rows the slow way)."""
    try:
        rows = fresh_rows(root, outcome.rel, conv, doc, indexed, digests)
    except Exception:
        log.debug("search rows of %s not computed", outcome.rel, exc_info=True)
        return
    outcome.index_rows = rows
    outcome.index_fresh = rows is None
