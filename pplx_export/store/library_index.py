"""`index/library_<account>.json`: the stored library listing of one account.

Shape (protocol.md §2.2): `{"account": name, "count": N, "threads": [rows]}`, indent 1,
UTF-8 unescaped, trailing newline. Rows hold only the stable listing fields, always in the
same key order, plus `search_mode` once it is known; nothing volatile (fetch time, cursor)
goes in, so a refresh that changed nothing rewrites nothing and `git diff` stays quiet.
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pplx_export.archive.paths import INDEX_DIR
from pplx_export.util.atomic import write_if_changed
from pplx_export.util.jsonobj import loads_if
from pplx_export.util.lenient import as_dict, as_str
from pplx_export.util.timefmt import canonical_time

log = logging.getLogger(__name__)

PREFIX = "library_"
SUFFIX = ".json"

# Order matters: it is the on-disk key order of every row.
ROW_KEYS = (
    "title",
    "entryUUID",
    "href",
    "mode",
    "displayModel",
    "lastUpdated",
    "status",
    "space",
)
SEARCH_MODE_KEY = "search_mode"
# What the REST listing adds (protocol.md §9.3), kept when the listing sends it, in this
# order after ROW_KEYS and `search_mode`. Volatile row keys (`unread`, `expiry_time`,
# `answer_preview`, signed asset URLs) are left out: an unchanged library must not rewrite
# the index.
EXTRA_KEYS = ("context_uuid", "query_count", "thread_status", "locked_reason", "source", "assets")
# Keys of an asset that change on every listing (signed links); dropped at any depth.
_VOLATILE_ASSET_KEYS = frozenset({"url", "signed_url", "expires_at", "expiry_time"})

# Path separators, Windows-reserved characters and control characters; whitespace runs too,
# so the name survives shell scripts and cron lines unquoted.
_UNSAFE = re.compile(r'[\\/:*?"<>|\x00-\x1f\x7f\s]+')


def safe_account_name(account: str) -> str:
    """A file-name-safe form of an account name (identity for ordinary names like `alice`)."""
    name = _UNSAFE.sub("_", account.strip()).strip("_")
    # A leading dot would hide the file, and "." / ".." are not names at all.
    name = name.lstrip(".")
    return name or "default"


def index_path(root: Path, account: str) -> Path:
    return Path(root) / INDEX_DIR / f"{PREFIX}{safe_account_name(account)}{SUFFIX}"


def indexed_accounts(root: Path) -> list[str]:
    """The (file-safe) account names that have an index file under `<root>/index/`, sorted."""
    directory = Path(root) / INDEX_DIR
    if not directory.is_dir():
        return []
    names = []
    for path in directory.glob(f"{PREFIX}*{SUFFIX}"):
        name = path.name[len(PREFIX) : -len(SUFFIX)]
        if name and path.is_file():
            names.append(name)
    return sorted(names)


def _space(value: Any) -> dict[str, str] | None:
    space = as_dict(value)
    if not space:
        return None
    # The GraphQL node says `spaceUuid`; stored rows say `uuid`. Accept both.
    uuid = as_str(space.get("uuid")) or as_str(space.get("spaceUuid"))
    return {"uuid": uuid, "title": as_str(space.get("title")), "slug": as_str(space.get("slug"))}


def _stable(value: Any) -> Any:
    """An asset without its links (signed: they change on every listing, and expire)."""
    if isinstance(value, dict):
        return {
            k: _stable(v)
            for k, v in value.items()
            if k not in _VOLATILE_ASSET_KEYS
            and not (isinstance(v, str) and v.startswith(("http://", "https://")))
        }
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _extra(key: str, value: Any) -> Any:
    """A REST extra in its stored form, or None when absent/empty (then it is not stored)."""
    if key == "query_count":
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if key == "assets":
        assets = (
            _stable([a for a in value if isinstance(a, dict)]) if isinstance(value, list) else []
        )
        return assets or None
    return as_str(value) or None


def normalize_row(row: dict[str, Any]) -> dict[str, Any]:
    """The stable form of an index row: ROW_KEYS in order, `lastUpdated` on the canonical clock
    (UTC, µs, `Z`, whichever listing it came from), then `search_mode` and the REST extras
    only when known."""
    out: dict[str, Any] = {
        key: _space(row.get(key)) if key == "space" else as_str(row.get(key)) for key in ROW_KEYS
    }
    out["lastUpdated"] = canonical_time(out["lastUpdated"])
    search_mode = as_str(row.get(SEARCH_MODE_KEY))
    if search_mode:
        out[SEARCH_MODE_KEY] = search_mode
    for key in EXTRA_KEYS:
        value = _extra(key, row.get(key))
        if value is not None:
            out[key] = value
    return out


@dataclass
class LibraryIndex:
    account: str
    threads: list[dict[str, Any]] = field(default_factory=list)
    path: Path | None = None
    # Set when the file on disk was unreadable and has been moved aside (or would have been).
    corrupt_copy: Path | None = None


def dumps_index(account: str, rows: list[dict[str, Any]]) -> str:
    doc = {"account": account, "count": len(rows), "threads": [normalize_row(r) for r in rows]}
    return json.dumps(doc, ensure_ascii=False, indent=1) + "\n"


def save_index(root: Path, account: str, rows: list[dict[str, Any]]) -> bool:
    """Write the index durably and atomically; only when its bytes change. True if written."""
    return write_if_changed(index_path(root, account), dumps_index(account, rows), durable=True)


def move_aside(path: Path, epoch: int | None = None) -> Path:
    """Rename an unreadable file to `<name>.corrupt-<epoch>` (never overwriting an earlier one)."""
    stamp = int(time.time()) if epoch is None else epoch
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
        n += 1
    path.rename(target)
    return target


def _parse(text: str) -> tuple[list[dict[str, Any]], bool] | None:
    """(rows, migrated?) of an index document, or None when it is not an index at all.

    `migrated` says a row's `lastUpdated` was not on the canonical clock yet (an index
    written before it, or by the earlier tool)."""
    doc = loads_if(text, dict)
    if doc is None or not isinstance(doc.get("threads"), list):
        return None
    rows = doc["threads"]
    if not all(isinstance(row, dict) for row in rows):
        return None
    out = [normalize_row(row) for row in rows]
    migrated = any(
        as_str(old.get("lastUpdated")) != new["lastUpdated"]
        for old, new in zip(rows, out, strict=True)
    )
    return out, migrated


def load_index(root: Path, account: str, *, repair: bool = True) -> LibraryIndex:
    """Read an account's index. Missing -> empty.

    Rows whose `lastUpdated` is not on the canonical clock yet are migrated: rewritten in it
    (with `repair`; read-only callers only see the canonical rows). A corrupt file (bad JSON,
    not an index document) is never silently treated as empty: it
    is renamed to `<name>.corrupt-<epoch>` with a warning first, so the next save cannot
    overwrite the only copy. With `repair=False` (read-only callers such as `status`) the
    file is left in place and only the warning is logged.
    """
    path = index_path(root, account)
    result = LibraryIndex(account=account, path=path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return result
    try:
        parsed = _parse(raw.decode("utf-8"))
    except UnicodeDecodeError:
        parsed = None
    if parsed is None:
        if repair:
            result.corrupt_copy = move_aside(path)
            log.warning(
                "index file %s is corrupt; moved to %s, starting from an empty index",
                path,
                result.corrupt_copy.name,
            )
        else:
            result.corrupt_copy = path
            log.warning("index file %s is corrupt; treating it as empty", path)
        return result
    rows, migrated = parsed
    result.threads = rows
    if migrated and repair:
        # First read after the upgrade: store the canonical clock, so every later comparison
        # (and `git diff` of the archive) sees one form.
        save_index(root, account, rows)
        log.info("index %s: lastUpdated brought to the canonical clock", path.name)
    return result
