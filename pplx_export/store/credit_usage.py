"""Credit usage per thread (protocol.md §2.10): the state store's `credit_usage/<account>`
documents (`index/credit_usage_<account>.json` before; `status` shows them).

Shape (the earlier tool's): a flat `{web_uuid: record}` object, indent 1, UTF-8 unescaped.
A record is `{psc_uuid, usage_cents, meter_usage, mode, title[:80], fetched_at}`, or, when the
API said the thread is not this account's (403 `thread_usage_forbidden`),
`{psc_uuid, error, mode, fetched_at}`; both are final and never fetched again. Other failures
are not recorded: the next run retries them.

A corrupt document is set aside (`.corrupt-<epoch>`) with a warning, never silently blanked.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from pplx_export.store.docs import delete_doc, doc_keys, load_bytes, save_bytes
from pplx_export.store.library_index import safe_account_name
from pplx_export.util.lenient import as_str

log = logging.getLogger(__name__)

PREFIX = "credit_usage/"
TITLE_MAX = 80
FORBIDDEN = "forbidden (not this account's thread)"

Record = dict[str, Any]


def usage_key(account: str) -> str:
    return f"{PREFIX}{safe_account_name(account)}"


def usage_accounts(root: Path) -> list[str]:
    """The (file-safe) account names that have usage records, sorted."""
    try:
        keys = doc_keys(root, PREFIX)
    except OSError as exc:
        log.warning("credit usage unreadable: %s", exc)
        return []
    return [k[len(PREFIX) :] for k in keys if len(k) > len(PREFIX) and "." not in k[len(PREFIX) :]]


def is_final(record: Record | None) -> bool:
    """A record that needs no other request: usage known, or forbidden for this account."""
    if not isinstance(record, dict):
        return False
    return "usage_cents" in record or as_str(record.get("error")).startswith("forbidden")


def load_usage(root: Path, account: str, *, repair: bool = True) -> dict[str, Record]:
    """The account's records. Missing -> empty; corrupt -> set aside (unless read-only)."""
    key = usage_key(account)
    raw = load_bytes(root, key)
    if raw is None:
        return {}
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        doc = None
    if isinstance(doc, dict) and all(isinstance(v, dict) for v in doc.values()):
        return {str(k): v for k, v in doc.items()}
    if repair:
        aside = f"{key}.corrupt-{int(time.time())}"
        save_bytes(root, aside, raw)
        delete_doc(root, key)
        log.warning("credit usage of %s is corrupt; set aside as %s", account, aside)
    else:
        log.warning("credit usage of %s is corrupt; ignoring it", account)
    return {}


def save_usage(root: Path, account: str, records: dict[str, Record]) -> bool:
    """Commit the records (sorted by UUID); only when the bytes change."""
    doc = {key: records[key] for key in sorted(records)}
    text = json.dumps(doc, ensure_ascii=False, indent=1) + "\n"
    return save_bytes(root, usage_key(account), text)


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
