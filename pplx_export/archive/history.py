"""Earlier versions of a thread: `history/<stamp>/` inside its directory (issue 33).

The raw files are the archive's only irreplaceable copy of a conversation. When a new export
would remove turns or change the content of archived turns (the server lost or rewrote
them), the raw files as they were, and the thread.json that describes them, are copied into
`history/<YYYYMMDDTHHMMSSZ>/` first (`-2`, `-3` on a clash). A version holds the raw files,
so it can be re-rendered like any thread. thread.json lists the versions under `"history"`,
oldest first: `{"at", "dir", "reason", "turns"}`.

The contract is shared with the import of Perplexity's data export (issue 37): callers
call `keep_version` and add the returned entry to the thread.json they write next.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pplx_export.models import JSON
from pplx_export.util.atomic import atomic_write_bytes, fsync_dir
from pplx_export.util.timefmt import format_utc

log = logging.getLogger(__name__)

HISTORY_DIR = "history"
HISTORY_KEY = "history"
THREAD_JSON = "thread.json"
_STAMP = "%Y%m%dT%H%M%SZ"
_VERSION_DIR = re.compile(r"\d{8}T\d{6}Z(?:-\d+)?")


def _stamp_dir(thread_dir: Path, now: datetime) -> Path:
    base = now.astimezone(UTC).strftime(_STAMP)
    parent = thread_dir / HISTORY_DIR
    candidate = parent / base
    n = 2
    while candidate.exists():
        candidate = parent / f"{base}-{n}"
        n += 1
    return candidate


def version_files(thread_dir: Path) -> list[str]:
    """The files a version keeps: every `raw*` file of the directory, then thread.json."""
    try:
        names = sorted(n for n in os.listdir(thread_dir) if n.startswith("raw"))
    except FileNotFoundError:
        return []
    names = [n for n in names if (thread_dir / n).is_file()]
    if (thread_dir / THREAD_JSON).is_file():
        names.append(THREAD_JSON)
    return names


def keep_version(thread_dir: Path, *, reason: str, turns: int, now: datetime | None = None) -> str:
    """Copy the thread's raw files and thread.json, as they are now, into a new
    `history/<stamp>/` durably (temp, fsync, rename; then the directories), raw first.
    Returns the `dir` value of the history entry (`history/<stamp>`)."""
    now = now or datetime.now(UTC)
    target = _stamp_dir(thread_dir, now)
    target.mkdir(parents=True)
    for name in version_files(thread_dir):
        data = (thread_dir / name).read_bytes()
        atomic_write_bytes(target / name, data, durable=True, sync_dir=False)
    fsync_dir(target)
    fsync_dir(target.parent)
    fsync_dir(thread_dir)
    # The Markdown as rendered then, so the version reads without a re-render (and a
    # `search --history` hit names a file that exists). Derived: no fsync.
    for rel in _rendered_files(thread_dir):
        try:
            data = (thread_dir / rel).read_bytes()
        except OSError:
            continue
        atomic_write_bytes(target / rel, data)
    log.debug("%s: kept the version of %d turns (%s) in %s", thread_dir, turns, reason, target)
    return f"{HISTORY_DIR}/{target.name}"


def history_entry(dir_value: str, *, reason: str, turns: int, now: datetime | None = None) -> JSON:
    """The thread.json `history` list item for a version kept at `dir_value`."""
    return {
        "at": format_utc(now or datetime.now(UTC)),
        "dir": dir_value,
        "reason": reason,
        "turns": turns,
    }


def entries_of(doc: JSON | None) -> list[JSON]:
    """The `history` list of a thread.json document (only well-formed items)."""
    value = (doc or {}).get(HISTORY_KEY)
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, dict) and isinstance(v.get("dir"), str)]


_RENDERED = ("conversation.md", "sources.md", "sources.json", "report.md")
_TURN_FILE = re.compile(r"turn_\d{4,}\.md")


def _rendered_files(thread_dir: Path) -> list[str]:
    names = [n for n in _RENDERED if (thread_dir / n).is_file()]
    try:
        turns = sorted(os.listdir(thread_dir / "turns"))
    except (FileNotFoundError, NotADirectoryError):
        turns = []
    return names + [f"turns/{n}" for n in turns if _TURN_FILE.fullmatch(n)]


def iter_versions(thread_dir: Path) -> Iterator[Path]:
    """The version directories under `thread_dir/history/`, oldest first."""
    try:
        names = sorted(os.listdir(thread_dir / HISTORY_DIR))
    except (FileNotFoundError, NotADirectoryError):
        return
    for name in names:
        path = thread_dir / HISTORY_DIR / name
        if _VERSION_DIR.fullmatch(name) and path.is_dir():
            yield path


# -- what changed ----------------------------------------------------------------------------

# The fields of a raw entry that carry its content: who asked what and what was answered.
# Counters, timestamps and access flags may move without the conversation changing.
_CONTENT_KEYS = ("query_str", "text", "blocks", "answer")


def _entry_id(entry: Any) -> str:
    if not isinstance(entry, dict):
        return ""
    for key in ("uuid", "backend_uuid", "frontend_uuid"):
        value = entry.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


# A signed URL's query (signature, expiry) changes on every fetch without the content
# changing: compared without the values of its query parameters.
_URL_QUERY = re.compile(r"(https?://[^\s\"'<>?]+\?)[^\s\"'<>]*")


def _content(entry: Any) -> str:
    if not isinstance(entry, dict):
        text = json.dumps(entry, sort_keys=True, ensure_ascii=False)
    else:
        picked = {k: entry.get(k) for k in _CONTENT_KEYS if k in entry}
        text = json.dumps(picked, sort_keys=True, ensure_ascii=False)
    return _URL_QUERY.sub(r"\1", text)


def _entries(plain: Any) -> list[Any]:
    entries = plain.get("entries") if isinstance(plain, dict) else None
    return entries if isinstance(entries, list) else []


def loss_reason(old_plain: Any, new_plain: Any) -> str:
    """Why a new raw response would lose something the archived one holds ("" when it
    would not): turns removed, or the content of archived turns changed (a rewritten
    answer, an edited question). New turns alone are not a loss."""
    old, new = _entries(old_plain), _entries(new_plain)
    if not old:
        return ""
    new_by_id = {_entry_id(e): e for e in new if _entry_id(e)}
    removed = 0
    changed: list[int] = []
    for n, entry in enumerate(old, 1):
        if isinstance(entry, dict) and entry.get("imported_from"):
            # A turn recovered from the user's data export has its own uuid and the
            # export's thin text: the API's version of it is the upgrade, not a change.
            # Only a shorter thread loses one (counted below).
            continue
        key = _entry_id(entry)
        # Matched by the entry's uuid; an entry without one, by its place.
        other = new_by_id.get(key) if key else (new[n - 1] if n - 1 < len(new) else None)
        if other is None:
            removed += 1
        elif _content(other) != _content(entry):
            changed.append(n)
    if not removed and len(new) < len(old):
        removed = len(old) - len(new)
    parts: list[str] = []
    if removed:
        parts.append(
            f"{len(old)} turns became {len(new)}"
            if len(new) < len(old)
            else f"{removed} turn{'s' if removed != 1 else ''} replaced"
        )
    if changed:
        shown = ", ".join(str(n) for n in changed[:5]) + (", ..." if len(changed) > 5 else "")
        parts.append(f"turn{'s' if len(changed) != 1 else ''} {shown} changed")
    return "; ".join(parts)


def turn_count(plain: Any) -> int:
    return len(_entries(plain))


def read_raw_entries(thread_dir: Path) -> Any:
    """The archived raw_entries.json as parsed; None when missing or unreadable (then there
    is nothing a new export could lose that a history copy could keep)."""
    try:
        return json.loads((thread_dir / "raw_entries.json").read_bytes())
    except (OSError, ValueError):
        return None


def footer(entries: list[JSON]) -> str:
    """The lines conversation.md ends with when earlier versions are kept: one link each."""
    if not entries:
        return ""
    lines = ["", "---", "", "Earlier versions of this thread (raw files, re-renderable):", ""]
    for e in entries:
        turns = e.get("turns")
        count = f", {turns} turns" if isinstance(turns, int) else ""
        lines.append(f"- [{e.get('at', '')}]({e['dir']}/) ({e.get('reason', '')}{count})")
    return "\n".join(lines) + "\n"
