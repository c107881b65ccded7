"""The exception tree. Each class knows its CLI exit code; the CLI maps them once, at the edge.

    PplxError (1)
    ├── UsageError (2)
    ├── ConfigError (2)
    ├── ArchiveError (1)          a file in the archive could not be read or written safely
    │   ├── ArchiveBusy (5)          another run holds the archive's lock (try again later)
    │   ├── DiskFull (1)             ENOSPC / EDQUOT: the run stops at once, nothing is lost
    │   ├── CommitFailed (1)         auto_commit was due and git did not commit (files on disk)
    │   └── ThreadUnreadable (1)     an archived thread's files cannot be read or parsed
    ├── SchemaError (1)          a payload could not be parsed at all (names thread + JSON path)
    ├── Interrupted (130)
    └── ApiError (1)             every error that came back from (or on the way to) the API
        ├── AuthError (3)            401, Cloudflare 403 challenge, no usable session cookie
        ├── PermissionDenied (1)     403 *_NOT_ALLOWED JSON, 200 status:failed: per-object
        ├── EntryExpired (1)         400 ENTRY_EXPIRED: platform purged the thread (terminal)
        │   └── EntryDeleted (1)     400 ENTRY_DELETED: the user deleted it (terminal)
        ├── NotFound (1)             404: never terminal outside sync-deleted
        ├── RateLimited (1)          429 after every retry was spent
        ├── ServerError (1)          5xx after every retry was spent
        └── TransportError (1)       network failure or a 200 whose body is not JSON

`ThreadsFailed` (4) is raised by long runs that finished but lost some threads;
`AccountsFailed` (the failed account's code) by runs over several accounts where one failed.
"""

from __future__ import annotations

import errno

_DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


class PplxError(Exception):
    """Base of every error the tool raises on purpose."""

    exit_code = 1


class UsageError(PplxError):
    exit_code = 2


class ConfigError(PplxError):
    exit_code = 2


class ArchiveError(PplxError):
    exit_code = 1


class ArchiveBusy(ArchiveError):
    """Another pplx-export run holds the archive's lock. Its own exit code, so a cron
    wrapper can tell "try again later" from a failure."""

    exit_code = 5


class DiskFull(ArchiveError):
    """The disk (or quota) is full. The run stops at once: every later write, saving the state
    included, would fail the same way. Atomic writes leave no partial file behind."""

    def __init__(self, where: str) -> None:
        super().__init__(
            f"disk full while writing {where or 'the archive'}; nothing is lost, "
            "free some space and rerun"
        )

    @classmethod
    def of(cls, exc: BaseException) -> DiskFull | None:
        """A DiskFull for an OSError that says the disk or quota is full, else None."""
        if isinstance(exc, OSError) and exc.errno in _DISK_FULL:
            return cls(str(exc.filename or ""))
        return None


class CommitFailed(ArchiveError):
    """auto_commit: the export is on disk but the commit recording it did not happen."""


class ThreadUnreadable(ArchiveError):
    """An archived thread's files cannot be read or parsed (`pplx_export/archive/loader.py`); the
    message says which file and why. `file`: the file at fault ("" when the files read but
    the parse failed); `missing`: that file does not exist; `doc`: thread.json, when it was
    read before the failure (a reader may still say which thread this is)."""

    def __init__(
        self,
        message: str,
        *,
        file: str = "",
        missing: bool = False,
        doc: dict[str, object] | None = None,
    ) -> None:
        super().__init__(message)
        self.file = file
        self.missing = missing
        self.doc = doc

    @property
    def gone(self) -> bool:
        """No thread.json: the directory holds no thread (any more)."""
        return self.missing and self.file == "thread.json"


class SchemaError(PplxError):
    """A thread payload could not be parsed at all. Names the thread and the JSON path."""

    exit_code = 1

    def __init__(self, message: str, *, thread: str = "", path: str = "") -> None:
        self.thread = thread
        self.path = path
        where = ", ".join(p for p in (f"thread {thread}" if thread else "", path) if p)
        super().__init__(f"{message} ({where})" if where else message)


class Interrupted(PplxError):
    exit_code = 130


class ThreadsFailed(PplxError):
    """A long run finished, but some threads failed; the summary lists them."""

    exit_code = 4


class AccountsFailed(PplxError):
    """A run over several accounts where some account could not be archived at all; the
    exit code is that of the first such account's error (3 when its session was refused)."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class ApiError(PplxError):
    """An error from the API. `endpoint` is "METHOD /path" (never a query string).

    `code` is the machine code the API sent, when there is one (`VIEW_THREAD_NOT_ALLOWED`,
    `ASSET_NOT_FOUND`, `thread_usage_forbidden`, ...), so callers can branch without parsing
    the reason text.
    """

    exit_code = 1

    def __init__(
        self, reason: str, *, endpoint: str = "", status: int | None = None, code: str = ""
    ) -> None:
        self.reason = reason
        self.endpoint = endpoint
        self.status = status
        self.code = code
        super().__init__(f"{endpoint}: {reason}" if endpoint else reason)


class AuthError(ApiError):
    exit_code = 3


class PermissionDenied(ApiError):
    pass


class EntryExpired(ApiError):
    pass


class EntryDeleted(EntryExpired):
    # A subclass of EntryExpired: both are terminal; check DELETED first (protocol §7.1).
    pass


class NotFound(ApiError):
    pass


class RateLimited(ApiError):
    pass


class ServerError(ApiError):
    pass


class TransportError(ApiError):
    pass
