"""Emulator facts for the archive-upkeep commands (sync-deleted and the backfills).

* Per-thread failures: the thread detail of a marked thread answers a fixed status (401, 403
  `VIEW_THREAD_NOT_ALLOWED`, 404, 5xx): a deletion check that meets a dead session or a
  flaky server.
* Owners: a thread belongs to the primary account unless `_emulator.json` `"owners"`
  (`{email: [thread uuids]}`) or a mutation gives it to another signed-in account. Credit
  usage of a thread that is not the session's answers 403 `thread_usage_forbidden`; asset
  data of such a thread 403 `ASSET_ACCESS_DENIED`. Thread detail stays readable (a thread
  shared through a space is).
* Signed URL lifetime: with `"url_ttl": N` (or the mutation) every asset URL handed out
  (schematized pages, asset data) carries `Expires=<now + N>` and the CDN stand-in answers
  403 after that. The emulator's clock can be moved forward, so links expire without waiting.

Everything lives in memory, like the other mutations.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from pplx_export.util.lenient import as_dict, as_list, as_str

JSON = dict[str, Any]


@dataclass
class Upkeep:
    owners: dict[str, str] = field(default_factory=dict)  # thread uuid -> owner email
    thread_status: dict[str, int] = field(default_factory=dict)  # thread uuid -> HTTP status
    url_ttl: float | None = None  # seconds a handed-out asset URL stays valid; None: forever
    clock_offset: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def from_manifest(cls, manifest: JSON) -> Upkeep:
        owners = {
            as_str(uuid): as_str(email)
            for email, uuids in as_dict(manifest.get("owners")).items()
            for uuid in as_list(uuids)
        }
        ttl = manifest.get("url_ttl")
        return cls(owners=owners, url_ttl=float(ttl) if isinstance(ttl, int | float) else None)

    def now(self) -> float:
        return time.time() + self.clock_offset

    def owner(self, thread_uuid: str, primary: str) -> str:
        with self.lock:
            return self.owners.get(thread_uuid, primary)

    def expires(self) -> int | None:
        """The `Expires` stamp of a URL handed out now (None: URLs do not expire)."""
        with self.lock:
            ttl = self.url_ttl
        return None if ttl is None else int(self.now() + ttl)

    def expired(self, stamp: str) -> bool:
        try:
            return int(stamp) <= self.now()
        except ValueError:
            return False
