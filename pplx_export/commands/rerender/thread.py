"""Re-render of one thread directory: read its raw files and thread.json, parse, render,
write in place (`archive.writer.write_thread`), and return what happened.

Never raises for a bad thread: a thread that fails (unreadable raw, SchemaError, a parser
bug) comes back as a "failed" outcome with its reason. Raw files are left alone, with one
exception: a raw file that still holds a thread write token (archives of the earlier tool)
is rewritten once with the token redacted, durably (product.md §2.5). The worker pool
(`commands/rerender/pool.py`) runs this in worker processes; the command
(`commands/rerender/run.py`) owns every shared file.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

from pplx_export.archive.fingerprint import recorded_file
from pplx_export.archive.loader import parse_read, read_thread
from pplx_export.archive.raw import RAW_BLOCKS, RAW_ENTRIES, has_live_token
from pplx_export.archive.sweep import sweep_temp_files
from pplx_export.archive.thread_json import THREAD_JSON
from pplx_export.archive.writer import FastPath
from pplx_export.commands.rerender.outcome import ThreadOutcome
from pplx_export.errors import ArchiveError, DiskFull, SchemaError
from pplx_export.models import JSON
from pplx_export.parse.losses import LOSS_NOTE, loss_line
from pplx_export.pipeline.after_write import Derived, after_write
from pplx_export.pipeline.assemble import Engine, default_engine, rewrite_conversation

log = logging.getLogger(__name__)


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
    # ThreadUnreadable (an ArchiveError) says which file and why: the outcome's reason.
    thread = read_thread(root, rel)
    doc = thread.doc
    doc_stat = thread.stats[THREAD_JSON]
    stats = {name: st for name, st in thread.stats.items() if name != THREAD_JSON}
    # Walking the parsed tree for tokens costs as much as parsing it; a byte scan tells
    # whether there is anything to redact at all (almost never, after the first run).
    # A raw file whose size and mtime are still those recorded after the last render is
    # the file that render left (tokens redacted then): its recorded digest stands, and
    # there is nothing to scan (the size+mtime trust of `--changed-only`).
    redact = False
    known: dict[str, str] = {}
    for name in (RAW_ENTRIES, RAW_BLOCKS):
        data = thread.data.get(name)
        if data is None:
            continue
        rec = recorded_file(recorded, name)
        if rec is not None and rec[:2] == stats[name]:
            known[name] = rec[2]
        elif has_live_token(data):
            # Rewritten redacted: the writer's digest of the new bytes is the one recorded,
            # so these bytes are not hashed (each raw file is hashed once).
            redact = True
        else:
            known[name] = hashlib.sha256(data).hexdigest()
    # Kept only to redact in place (see FastPath.raw_bytes); otherwise freed before the parse.
    raw_bytes = (
        {name: thread.data[name] for name in (RAW_ENTRIES, RAW_BLOCKS) if name in thread.data}
        if redact
        else None
    )
    thread.release()
    web_uuid = thread.web_uuid
    # Turns only the data export holds are parsed in; raw_entries.json stays the API's.
    conv = parse_read(thread, engine.parse)
    if conv.web_uuid != web_uuid:
        raise ArchiveError(f"parsed web_uuid {conv.web_uuid!r} differs from thread.json")
    result = rewrite_conversation(
        root,
        rel,
        conv,
        engine,
        lang,
        redact=redact,
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
    derived = Derived()
    if not dry_run:
        derived = after_write(
            root,
            rel,
            conv,
            result,
            engine=engine,
            lang=lang,
            doc=result.thread_doc or doc,
            digests={**known, **result.digests},
            stats=stats,
            indexed=indexed,
            recorded=recorded,
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
        fingerprint=derived.fingerprint,
        would_write=list(result.written) if dry_run else [],
        would_remove=list(result.removed) if dry_run else [],
    )
    if conv.losses:
        outcome.lossy_thread = (web_uuid, conv.url)
    if not dry_run and int(doc.get("losses") or 0) != len(conv.losses):
        outcome.losses_changed = (web_uuid, len(conv.losses))
    outcome.index_rows = derived.index_rows
    outcome.index_fresh = derived.index_fresh
    outcome.relation_facts = derived.relation_facts
    return outcome
