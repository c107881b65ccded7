"""Around the assembly seam (`pipeline/assemble.py`): what follows the write of a thread.

`after_write` is the one step every writer of a thread takes once its files are on disk
(the online export, pplx-ask through it, and re-render): from the Conversation already
parsed, it computes what the derived stores need — the search index's rows and signature,
the relations cache record, the render fingerprint — without reading back or parsing
again the files just written. It only computes: the caller stores (the export at once;
a re-render worker hands the records to the parent, which owns every shared file).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pplx_export.archive.fingerprint import fingerprint

if TYPE_CHECKING:
    from pplx_export.archive.writer import WriteResult
    from pplx_export.models import JSON, Conversation
    from pplx_export.pipeline.assemble import Engine
    from pplx_export.search.index import Fresh

log = logging.getLogger(__name__)


@dataclass
class Derived:
    """What the derived stores need of one thread just written."""

    # The render_state record (None: not computed, or the same as `recorded`).
    fingerprint: JSON | None = None
    # The search index: the new rows and signature (None: not computed; the index then
    # reads the thread itself), or `index_fresh` when what it holds is current.
    index_rows: Fresh | None = None
    index_fresh: bool = False
    # The relations cache record (pipeline/relation_facts.py), when the render record changed.
    relation_facts: JSON | None = None


def after_write(
    root: Path,
    rel: str,
    conv: Conversation,
    result: WriteResult,
    *,
    engine: Engine,
    lang: str,
    doc: JSON,
    digests: Mapping[str, str],
    stats: dict[str, tuple[int, int]],
    indexed: str | None,
    recorded: JSON | None = None,
    strict: bool = True,
) -> Derived:
    """The derived records of the thread `conv` just written to `root/rel` (`result`).

    `doc` is thread.json as now on disk; `digests` and `stats` the sha256 and (size,
    mtime_ns) of its input files as now on disk (the writer's, plus the raw files the caller
    read itself). `indexed`: the signature the search index holds ("" none; None: no index
    to keep current). `recorded`: the thread's last render record; relation facts are
    computed only when the new one differs (a thread rendered as last time has them).
    `strict=False`: a fingerprint that cannot be taken is skipped (it is only a cache), not
    raised."""
    from pplx_export.pipeline.relation_facts import facts_record

    out = Derived()
    try:
        record = fingerprint(
            root / rel,
            engine.version,
            lang,
            dict(digests),
            stats=stats,
            outputs=result.outputs_stamp,
            absent=result.absent,
            flavor=engine.flavor,
        )
    except OSError as exc:
        if strict:
            raise
        log.debug("render fingerprint of %s not taken: %s", rel, exc)
        record = None
    if record is not None and record != recorded:
        out.fingerprint = record
    if indexed is not None:
        # The search-index fields. A failure here only costs the index a re-read of the
        # thread (it indexes a thread without rows the slow way).
        from pplx_export.search.index import fresh_rows

        try:
            rows = fresh_rows(root, rel, conv, doc, indexed, digests)
        except Exception:
            log.debug("search rows of %s not computed", rel, exc_info=True)
        else:
            out.index_rows = rows
            out.index_fresh = rows is None
    if out.fingerprint is not None or record is None:
        out.relation_facts = facts_record(root, rel, conv, doc)
    return out
