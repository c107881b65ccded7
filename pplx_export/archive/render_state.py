"""`index/render_state.json`: what each thread directory was last rendered from.

`re-render --changed-only` skips a thread when its renderer version, language and flavour
(github/obsidian; a record without one was rendered as github) match and
every input file (raw files, the stored report body, thread.json, the assets manifest) is
unchanged. Like git's index, a file whose size and mtime match the record is trusted without
reading it; otherwise its SHA-256 decides (a `touch` alone does not force a render). The
inputs are fingerprinted after the render, so the rewritten thread.json is the recorded one.

Layout: `{"format": 1, "threads": {"⟨account⟩/⟨mode⟩/⟨dir⟩": {"renderer": V, "lang": L,
"flavor": F, "files": {"raw_entries.json": [size, mtime_ns, sha256], ...},
"outputs": STAMP}}}`. The file is derived state: losing it only costs one full re-render.

`outputs` (optional) is one digest over every derived file the render put (name, size,
mtime_ns, bytes) and the size and mtime of `turns/`. A full re-render whose rendered bytes
and on-disk stats give the same stamp knows every derived file already holds those bytes
without reading one (the same size+mtime trust as above), and that `turns/` holds no stale
file (adding or removing one changes the directory's mtime); any difference falls back to
reading and comparing file by file. One digest per thread rather than one per file keeps
this file, which every `--changed-only` run loads, small.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Container
from pathlib import Path
from typing import Any

from pplx_export.models import JSON
from pplx_export.util.atomic import write_if_changed
from pplx_export.util.jsontext import dumps_indented

log = logging.getLogger(__name__)

STATE_NAME = "index/render_state.json"
FORMAT = 1
INPUTS = (
    "raw_entries.json",
    "raw_blocks.json",
    "thread.json",
    "assets/report_body.md",
    "assets/assets_manifest.json",
)


def _sha256(path: Path) -> str:
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
                digest = digest or _sha256(Path(base + rel))
            except FileNotFoundError:
                continue
            stat = (st.st_size, st.st_mtime_ns)
        files[rel] = [stat[0], stat[1], digest]
    record: JSON = {"renderer": renderer, "lang": lang, "flavor": flavor, "files": files}
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


def is_fresh(
    entry: Any, thread_dir: Path | str, renderer: str, lang: str, flavor: str = "github"
) -> bool:
    """True when `thread_dir` would render exactly as recorded in `entry`."""
    if not isinstance(entry, dict) or entry.get("renderer") != renderer:
        return False
    if entry.get("lang") != lang or not isinstance(entry.get("files"), dict):
        return False
    if entry.get("flavor", "github") != flavor:
        return False
    recorded: dict[str, Any] = entry["files"]
    base = str(thread_dir) + os.sep
    # Plain os.stat on strings: this is the whole cost of a no-op `--changed-only` run.
    for rel in INPUTS:
        try:
            st = os.stat(base + rel)
        except FileNotFoundError:
            if rel in recorded:
                return False
            continue
        rec = recorded.get(rel)
        if not isinstance(rec, list) or len(rec) != 3:
            return False
        if rec[0] == st.st_size and rec[1] == st.st_mtime_ns:
            continue
        if rec[0] != st.st_size or rec[2] != _sha256(Path(thread_dir) / rel):
            return False
    return True


def load_state(root: Path) -> dict[str, Any]:
    """The recorded fingerprints by directory; empty (and a warning) when unreadable."""
    path = Path(root) / STATE_NAME
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("%s unreadable (%s): every thread counts as changed", path, exc)
        return {}
    threads = doc.get("threads") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(threads, dict):
        return {}
    return threads


def save_state(root: Path, threads: dict[str, Any]) -> None:
    doc = {"format": FORMAT, "threads": dict(sorted(threads.items()))}
    write_if_changed(Path(root) / STATE_NAME, dumps_indented(doc, 0))
