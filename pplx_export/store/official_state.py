"""The `official_import` document of the state store (`index/official_import.json` before,
store/docs.py): the threads `import` recovered from Perplexity's data
export, the imports run, and what the API said of each recovered thread since (the next
sync asks it; a deleted or expired thread is not asked again). Read by `status`, so it
imports nothing heavy.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pplx_export.models import JSON
from pplx_export.store.docs import StoreError, delete_doc, load_bytes, save_bytes
from pplx_export.util.jsontext import dumps_indented, loads

log = logging.getLogger(__name__)

STATE_KEY = "official_import"


def load_state(root: Path, *, repair: bool = True) -> dict[str, Any]:
    """The document ({} when none); an unreadable one is set aside (with `repair`) and
    counts as none: it lists what can be recovered again by importing the export again."""
    try:
        data = load_bytes(root, STATE_KEY)
        if data is None:
            return {}
        doc = loads(data)
    except (OSError, ValueError) as exc:
        if not repair or isinstance(exc, StoreError):
            return {}
        broken = f"{STATE_KEY}.corrupt-{int(datetime.now(UTC).timestamp())}"
        log.warning("%s unreadable (%s); set aside as %s", STATE_KEY, exc, broken)
        with contextlib.suppress(OSError):
            save_bytes(root, broken, data or b"")
            delete_doc(root, STATE_KEY)
        return {}
    return doc if isinstance(doc, dict) else {}


def save_state(root: Path, doc: dict[str, Any]) -> None:
    save_bytes(root, STATE_KEY, dumps_indented(doc, 1) + "\n")


def recovered_summary(root: Path) -> JSON | None:
    """For `status`: how many threads were recovered from an export, how many of them hold
    only the export's copy still (with what the API said of each), None before any import."""
    doc = load_state(root, repair=False)
    if not doc:
        return None
    recovered = doc.get("recovered") or {}
    counts: dict[str, int] = {}
    waiting = []
    for uuid, record in sorted(recovered.items()):
        api = str((record or {}).get("api") or "not asked yet")
        counts[api] = counts.get(api, 0) + 1
        if api != "served":
            waiting.append({"uuid": uuid, "title": (record or {}).get("title"), "api": api})
    imports = doc.get("imports") or []
    return {
        "recovered": len(recovered),
        "api": counts,
        "export_only": waiting,
        "last_import": imports[-1] if imports else None,
    }
