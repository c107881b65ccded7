"""A thread directory's render fingerprint: the size, mtime and SHA-256 of every file a render
reads, and one stamp over the files it wrote. Pure file logic, here beside the writer that
computes it; the render state (store/render_state.py) keeps the records and decides from them
which thread a `re-render --changed-only` may skip.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Container
from pathlib import Path
from typing import Any

from pplx_export.util.jsontypes import JSON

INPUTS = (
    "raw_entries.json",
    "raw_blocks.json",
    "thread.json",
    "assets/report_body.md",
    "assets/assets_manifest.json",
)
# The page every render writes, whatever changed. Its (size, mtime_ns) is recorded too: a
# thread that something else rendered since (an online `export` in another flavour or
# language, within the second its thread.json's stamp was already written in, so with the
# same inputs) is then not taken as fresh. One stat more per thread in a no-op run.
PAGE = "conversation.md"


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fingerprint(
    thread_dir: Path,
    renderer: str,
    lang: str,
    known: dict[str, str] | None = None,
    *,
    stats: dict[str, tuple[int, int]] | None = None,
    outputs: str = "",
    absent: Container[str] = (),
    flavor: str = "github",
) -> JSON:
    """The record for `thread_dir` now. `known` holds sha256 digests the caller just
    computed from the bytes on disk (the writer's, the raw files it read), to skip re-reads;
    `stats` their `(size, mtime_ns)` as they are now (skips the stat); `outputs` the writer's
    stamp of the derived files; `absent` inputs the caller just found missing."""
    files: dict[str, list[Any]] = {}
    known = known or {}
    stats = stats or {}
    base = str(thread_dir) + os.sep
    for rel in INPUTS:
        digest = known.get(rel)
        stat = stats.get(rel) if digest else None
        if stat is None and rel in absent:
            continue
        if stat is None:
            try:
                st = os.stat(base + rel)
                digest = digest or sha256_of(Path(base + rel))
            except FileNotFoundError:
                continue
            stat = (st.st_size, st.st_mtime_ns)
        files[rel] = [stat[0], stat[1], digest]
    record: JSON = {"renderer": renderer, "lang": lang, "flavor": flavor, "files": files}
    try:
        st = os.stat(base + PAGE)
        record["page"] = [st.st_size, st.st_mtime_ns]
    except FileNotFoundError:
        pass
    if outputs:
        record["outputs"] = outputs
    return record


def recorded_file(entry: Any, rel: str) -> tuple[int, int, str] | None:
    """`(size, mtime_ns, sha256)` recorded for input `rel` in a state entry, if well formed."""
    files = entry.get("files") if isinstance(entry, dict) else None
    rec = files.get(rel) if isinstance(files, dict) else None
    if not isinstance(rec, list) or len(rec) != 3:
        return None
    size, mtime_ns, digest = rec
    if isinstance(size, int) and isinstance(mtime_ns, int) and isinstance(digest, str):
        return size, mtime_ns, digest
    return None


def recorded_outputs(entry: Any) -> str:
    value = entry.get("outputs") if isinstance(entry, dict) else None
    return value if isinstance(value, str) else ""


def outputs_stamp(
    files: list[tuple[str, bytes]], stats: list[tuple[int, int]], turns: tuple[int, int]
) -> str:
    """One digest over every derived file's name, `(size, mtime_ns)` and bytes, in order, and
    the `(size, mtime_ns)` of the `turns/` directory."""
    h = hashlib.sha256()
    for (rel, raw), (size, mtime_ns) in zip(files, stats, strict=True):
        h.update(f"{rel}\0{size}\0{mtime_ns}\n".encode())
        h.update(raw)
    h.update(f"turns/\0{turns[0]}\0{turns[1]}\n".encode())
    return h.hexdigest()
