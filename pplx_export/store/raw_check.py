"""Exported threads whose raw files no longer parse: the next batch fetches them again.

Raw files are the archive's source of truth (every other file is rendered from them), so
a truncated or garbled `raw_entries.json` / `raw_blocks.json` of a thread in state `ok`
cannot be repaired offline. `find_damaged` names those threads; `batch`/`sync` refetch them
although their `lastUpdated` did not change, `export` does not call them unchanged, and
`status` lists them (principle: the next run repairs).

Checking costs a stat per raw file: a file whose size and mtime are those recorded in the
state store's `raw_check` document (`index/raw_check.json` before) when it last parsed is
trusted without reading it (as git trusts its index); any other file is read and parsed
once, then recorded. The record is derived state: losing it costs one parse of every raw
file.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pplx_export.store.docs import load_bytes, save_bytes
from pplx_export.util.jsontext import loads

log = logging.getLogger(__name__)

CHECK_KEY = "raw_check"
RAW_ENTRIES = "raw_entries.json"
RAW_BLOCKS = "raw_blocks.json"


def _load_record(root: Path) -> dict[str, list[int]]:
    try:
        doc = json.loads(load_bytes(root, CHECK_KEY) or b"{}")
    except (OSError, ValueError):
        return {}
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, dict):
        return {}
    return {
        k: v
        for k, v in files.items()
        if isinstance(v, list) and len(v) == 2 and all(isinstance(x, int) for x in v)
    }


def _problem(path: Path, *, required: bool) -> str | None:
    """Why `path` is not a usable raw file, or None when it parses as a JSON object."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return f"{path.name} is missing" if required else None
    except OSError as exc:
        return f"{path.name} unreadable: {exc.strerror or exc}"
    try:
        doc: Any = loads(data)
    except ValueError as exc:
        return f"{path.name} does not parse: {exc}"
    if not isinstance(doc, dict):
        return f"{path.name} is not a JSON object"
    return None


def find_damaged(
    root: Path, records: Mapping[str, Mapping[str, Any]], *, save: bool = True
) -> dict[str, tuple[str, str]]:
    """`{web_uuid: (dir, reason)}` for threads in state ok whose raw files do not parse.

    Threads without a recorded directory (state written by the earlier tool) are not
    checked. `save=False` for read-only callers (`status`).
    """
    root = Path(root)
    known = _load_record(root)
    fresh: dict[str, list[int]] = {}
    damaged: dict[str, tuple[str, str]] = {}
    for uuid, record in records.items():
        rel = record.get("dir")
        if record.get("status") != "ok" or not isinstance(rel, str) or not rel:
            continue
        directory = root / rel
        if not directory.is_dir():
            continue  # a directory gone altogether is the state check's business
        for name, required in ((RAW_ENTRIES, True), (RAW_BLOCKS, False)):
            key = f"{rel}/{name}"
            path = directory / name
            try:
                st = os.stat(path)
            except FileNotFoundError:
                if required:
                    damaged[uuid] = (rel, f"{name} is missing")
                    break
                continue
            except OSError as exc:
                damaged[uuid] = (rel, f"{name} unreadable: {exc.strerror or exc}")
                break
            stamp = [st.st_size, st.st_mtime_ns]
            if known.get(key) == stamp:
                fresh[key] = stamp
                continue
            problem = _problem(path, required=required)
            if problem is not None:
                damaged[uuid] = (rel, problem)
                break
            fresh[key] = stamp
    if save and fresh != known and (root / "index").is_dir():
        doc = {"format": 1, "files": dict(sorted(fresh.items()))}
        try:
            save_bytes(root, CHECK_KEY, json.dumps(doc, indent=0) + "\n")
        except OSError as exc:  # only a cache: the next run parses again
            log.debug("could not save %s: %s", CHECK_KEY, exc)
    return damaged
