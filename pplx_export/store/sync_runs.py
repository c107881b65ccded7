"""The `sync_runs` document of the state store (`index/sync_runs.json` before): when each
account's `sync` last ran, last succeeded, and how.

`status` warns (and `status --check` fails) when an account's last successful sync is older
than the schedule's interval plus a day; `schedule --status` shows the last result. It
lives in the archive (not the config) so degraded mode and a read-only config keep it too.
Shape: `{"accounts": {"<name>": {"last_run_at", "last_ok_at", "last_result"}}}`, UTC ISO.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from pathlib import Path
from typing import Any

from pplx_export.store.docs import load_bytes, save_bytes
from pplx_export.util.lenient import as_dict, as_str
from pplx_export.util.timefmt import format_utc

log = logging.getLogger(__name__)

RUNS_KEY = "sync_runs"


def load_runs(root: Path) -> dict[str, dict[str, str]]:
    """account -> its record; {} when there is none or it is unreadable (said once)."""
    try:
        raw = load_bytes(root, RUNS_KEY)
        if raw is None:
            return {}
        data = json.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        log.warning("ignoring unreadable %s (%s)", RUNS_KEY, type(exc).__name__)
        return {}
    accounts = as_dict(as_dict(data).get("accounts"))
    return {
        str(name): {key: as_str(as_dict(rec).get(key)) for key in _KEYS}
        for name, rec in accounts.items()
    }


_KEYS = ("last_run_at", "last_ok_at", "last_result")


def record_run(root: Path, account: str, *, now: datetime, result: str) -> None:
    """Stamp one account's run; `result` "ok" also moves `last_ok_at`. Never raises on I/O:
    a run that worked must not fail because its bookkeeping could not be written."""
    runs = load_runs(root)
    rec = runs.setdefault(account, dict.fromkeys(_KEYS, ""))
    stamp = format_utc(now)
    rec["last_run_at"] = stamp
    rec["last_result"] = result
    if result == "ok":
        rec["last_ok_at"] = stamp
    doc: dict[str, Any] = {"accounts": dict(sorted(runs.items()))}
    try:
        save_bytes(root, RUNS_KEY, json.dumps(doc, indent=1) + "\n")
    except OSError as exc:
        log.warning("could not record the sync run: %s", exc)
