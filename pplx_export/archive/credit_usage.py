"""`index/credit_usage_<account>.json`: credit usage per thread (protocol.md §2.10).

Shape (the earlier tool's): a flat `{web_uuid: record}` object, indent 1, UTF-8 unescaped.
A record is `{psc_uuid, usage_cents, meter_usage, mode, title[:80], fetched_at}`, or, when the
API said the thread is not this account's (403 `thread_usage_forbidden`),
`{psc_uuid, error, mode, fetched_at}`; both are final and never fetched again. Other failures
are not recorded: the next run retries them.

A corrupt file is moved aside (`.corrupt-<epoch>`) with a warning, never silently blanked.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from pplx_export.archive.library_index import INDEX_DIR, move_aside, safe_account_name
from pplx_export.util.atomic import write_if_changed
from pplx_export.util.lenient import as_str

log = logging.getLogger(__name__)

PREFIX = "credit_usage_"
SUFFIX = ".json"
TITLE_MAX = 80
FORBIDDEN = "forbidden (not this account's thread)"

Record = dict[str, Any]


def usage_path(root: Path, account: str) -> Path:
    return Path(root) / INDEX_DIR / f"{PREFIX}{safe_account_name(account)}{SUFFIX}"


def usage_accounts(root: Path) -> list[str]:
    """The (file-safe) account names that have a usage file, sorted."""
    directory = Path(root) / INDEX_DIR
    if not directory.is_dir():
        return []
    return sorted(
        p.name[len(PREFIX) : -len(SUFFIX)]
        for p in directory.glob(f"{PREFIX}*{SUFFIX}")
        if p.is_file() and len(p.name) > len(PREFIX) + len(SUFFIX)
    )


def is_final(record: Record | None) -> bool:
    """A record that needs no other request: usage known, or forbidden for this account."""
    if not isinstance(record, dict):
        return False
    return "usage_cents" in record or as_str(record.get("error")).startswith("forbidden")


def load_usage(root: Path, account: str, *, repair: bool = True) -> dict[str, Record]:
    """The account's records. Missing -> empty; corrupt -> moved aside (unless read-only)."""
    path = usage_path(root, account)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        doc = None
    if isinstance(doc, dict) and all(isinstance(v, dict) for v in doc.values()):
        return {str(k): v for k, v in doc.items()}
    if repair:
        aside = move_aside(path)
        log.warning("credit usage file %s is corrupt; moved to %s", path, aside.name)
    else:
        log.warning("credit usage file %s is corrupt; ignoring it", path)
    return {}


def save_usage(root: Path, account: str, records: dict[str, Record]) -> bool:
    """Write atomically and durably (sorted by UUID); only when the bytes change."""
    doc = {key: records[key] for key in sorted(records)}
    text = json.dumps(doc, ensure_ascii=False, indent=1) + "\n"
    return write_if_changed(usage_path(root, account), text, durable=True)


def usage_record(
    psc_uuid: str, data: dict[str, Any], *, mode: str, title: str, fetched_at: str
) -> Record:
    return {
        "psc_uuid": psc_uuid,
        "usage_cents": data.get("usage_cents"),
        "meter_usage": data.get("meter_usage") if isinstance(data.get("meter_usage"), list) else [],
        "mode": mode,
        "title": title[:TITLE_MAX],
        "fetched_at": fetched_at,
    }


def forbidden_record(psc_uuid: str, *, mode: str, fetched_at: str) -> Record:
    return {"psc_uuid": psc_uuid, "error": FORBIDDEN, "mode": mode, "fetched_at": fetched_at}
