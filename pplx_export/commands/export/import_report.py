"""What `import` (and `verify --against`) found, conversation by conversation, in memory that
does not grow with the export.

A user's "Export my data" file holds every conversation they ever had: tens of thousands.
The report keeps counters in memory and spools one compact JSON line per conversation to an
anonymous temporary file; the terminal lines and the `--json` document are read back from
it, the document written row by row (byte for byte what `json.dumps(indent=1)` writes).
"""

from __future__ import annotations

import json
import tempfile
import weakref
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from pplx_export.archive.thread_json import OFFICIAL
from pplx_export.models import JSON
from pplx_export.util.jsonobj import attrs_json

STATUSES = ("complete", "missing_turns", "not_archived")
# The `threads` value of the document until the rows are written in its place.
_ROWS = "\0rows\0"


@dataclass(slots=True)
class Audited:
    web_uuid: str
    title: str
    status: str  # complete | missing_turns | not_archived
    turns: int  # in the export
    dir: str = ""  # relative to the root, when archived (or recovered)
    missing: list[str] = field(default_factory=list)  # questions the archive lacks
    source: str = ""  # "official_export" when the thread's only copy is the export's
    action: str = ""  # recovered | turns_added | "" (audit only, or nothing to do)

    def to_json(self) -> JSON:
        doc = attrs_json(self, "web_uuid title status turns dir", dir=self.dir or None)
        if self.missing:
            doc["missing"] = self.missing
        if self.source:
            doc["source"] = self.source
        if self.action:
            doc["action"] = self.action
        return doc


@dataclass
class ImportReport:
    file: str
    audit_only: bool
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (where, why)
    error: str = ""  # the file turned out damaged midway: what was read is reported
    fetch: JSON | None = None
    counts: Counter[str] = field(default_factory=Counter)
    conversations: int = 0
    only_in_export: int = 0  # archived threads whose only copy is the export's
    only_complete: int = 0  # of those, the ones the export holds in full
    recovered: int = 0
    turns_added: int = 0
    _spool: IO[bytes] | None = field(default=None, repr=False)

    def add(self, entry: Audited) -> None:
        """Count the conversation and spool its row (once the recovery has settled it)."""
        self.conversations += 1
        self.counts[entry.status] += 1
        if entry.source == OFFICIAL:
            self.only_in_export += 1
            self.only_complete += entry.status == "complete"
        if entry.action == "recovered":
            self.recovered += 1
        elif entry.action == "turns_added":
            self.turns_added += len(entry.missing)
        if self._spool is None:
            # Closed by close(), or when the report goes: it lives as long as the report.
            self._spool = tempfile.TemporaryFile()  # noqa: SIM115
            weakref.finalize(self, self._spool.close)
        line = json.dumps(entry.to_json(), ensure_ascii=False, separators=(",", ":"))
        self._spool.write(line.encode("utf-8") + b"\n")

    def rows(self) -> Iterator[JSON]:
        """Every conversation's row, in the export's order (read back from the spool)."""
        if self._spool is None:
            return
        self._spool.flush()
        self._spool.seek(0)
        try:
            for line in self._spool:
                row: JSON = json.loads(line)
                yield row
        finally:
            self._spool.seek(0, 2)  # the next add appends

    def of(self, status: str) -> Iterator[JSON]:
        return (row for row in self.rows() if row["status"] == status)

    @property
    def problems(self) -> int:
        return self.counts["missing_turns"] + self.counts["not_archived"]

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()
            self._spool = None

    def _head(self) -> JSON:
        doc: JSON = {"file": self.file, "conversations": self.conversations}
        doc.update({status: self.counts[status] for status in STATUSES})
        doc["only_in_export"] = self.only_in_export
        doc["threads"] = _ROWS
        doc["skipped"] = [{"where": w, "why": y} for w, y in self.skipped]
        if not self.audit_only:
            doc["recovered"] = self.recovered
            doc["turns_added"] = self.turns_added
        if self.error:
            doc["error"] = self.error
        if self.fetch is not None:
            doc["fetch"] = self.fetch
        return doc

    def to_json(self) -> JSON:
        """The whole document in memory (the demo and tests; the CLI streams it)."""
        doc = self._head()
        doc["threads"] = list(self.rows())
        return doc

    def write_json(self, out: IO[str]) -> None:
        """The document as `json.dumps(self.to_json(), ensure_ascii=False, indent=1)`
        writes it, with a newline, one row at a time."""
        head, _, tail = json.dumps(self._head(), ensure_ascii=False, indent=1).partition(
            json.dumps(_ROWS)
        )
        out.write(head)
        first = True
        for row in self.rows():
            out.write("[\n  " if first else ",\n  ")
            out.write(json.dumps(row, ensure_ascii=False, indent=1).replace("\n", "\n  "))
            first = False
        out.write("[]" if first else "\n ]")
        out.write(tail + "\n")
        out.flush()

    def lines(self) -> list[str]:
        out = [
            f"{self.conversations} conversation(s) in {Path(self.file).name}: "
            f"{self.counts['complete']} archived and complete, "
            f"{self.counts['missing_turns']} archived but missing turns, "
            f"{self.counts['not_archived']} not archived"
        ]
        for t in self.of("missing_turns"):
            out.append(f"  missing turns: {t['web_uuid']} {t['title'][:60]!r} ({t['dir']})")
            out += [f"    - {q[:100]}" for q in t.get("missing", [])]
        for t in self.of("not_archived"):
            out.append(
                f"  not archived: {t['web_uuid']} {t['title'][:60]!r} ({t['turns']} turn(s))"
            )
        if self.only_complete:
            out.append(
                f"  {self.only_complete} archived thread(s) hold only the export's copy "
                "(`status` says what the API answered for each; `sync` asks again unless it "
                "was deleted or expired)"
            )
        if not self.audit_only:
            out.append(
                f"recovered {self.recovered} thread(s) from the export; "
                f"added {self.turns_added} imported turn(s) to archived threads"
            )
        for where, why in self.skipped:
            out.append(f"  skipped: {where}: {why}")
        if self.error:
            out.append(f"stopped early: {self.error}")
        return out
