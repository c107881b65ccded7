"""Records `os.fsync` and `os.replace` in order, so a test can tell whether a file was made
durable (temp fsynced before its rename, directory fsynced after): the page cache survives a
killed process, so no crash test can see a missing fsync."""

from __future__ import annotations

import os
from typing import Any

import pytest


class Calls:
    """fsync / replace events in order, with the (absolute) paths they touched."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def fsynced(self, path: str) -> list[int]:
        return [i for i, (k, p, _) in enumerate(self.events) if k == "fsync" and p == path]

    def replaced_to(self, final: str) -> list[int]:
        return [i for i, (k, _, d) in enumerate(self.events) if k == "replace" and d == final]

    def durable(self, final: str) -> int | None:
        """The event index by which the file renamed to `final` is durable (its temp file
        fsynced before the rename, its directory after), or None."""
        for i in self.replaced_to(final):
            src = self.events[i][1]
            if not any(j < i for j in self.fsynced(src)):
                continue
            after = [j for j in self.fsynced(os.path.dirname(final)) if j > i]
            if after:
                return after[0]
        return None


def record_fsyncs(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """From now on, every fsync and replace of this process lands in the returned Calls."""
    record = Calls()
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        record.events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"), ""))
        real_fsync(fd)

    def replace(src: Any, dst: Any) -> None:
        record.events.append(("replace", os.path.abspath(src), os.path.abspath(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return record
