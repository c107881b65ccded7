"""`index/sync_runs.json`: when each account's `sync` last ran, last succeeded, and how.

`status` warns (and `status --check` fails) when an account's last successful sync is older
than the schedule's interval plus a day; `schedule --status` shows the last result. The file
lives in the archive (not the config) so degraded mode and a read-only config keep it too.
Shape: `{"accounts": {"<name>": {"last_run_at", "last_ok_at", "last_result"}}}`, UTC ISO.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from pathlib import Path
from typing import Any

from pplx_export.util.atomic import atomic_write_text
from pplx_export.util.lenient import as_dict, as_str
from pplx_export.util.timefmt import format_utc

log = logging.getLogger(__name__)

RUNS_NAME = "sync_runs.json"


def runs_path(root: Path) -> Path:
    return Path(root) / "index" / RUNS_NAME


def load_runs(root: Path) -> dict[str, dict[str, str]]:
    """account -> its record; {} when the file is missing or unreadable (said once)."""
    path = runs_path(root)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        log.warning("ignoring unreadable %s (%s)", path, type(exc).__name__)
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
        atomic_write_text(runs_path(root), json.dumps(doc, indent=1) + "\n")
    except OSError as exc:
        log.warning("could not record the sync run in %s: %s", runs_path(root), exc)
