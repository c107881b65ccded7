"""Perplexity's own "Export my data" archive (protocol §9.8), read into what we can use.

Pure: a conversation dict in, plain values out. The export is thin (questions, answers and
times; no sources, steps, models or files) but it lists everything the account holds, so
it checks an archive for completeness and recovers what the API no longer serves.

A conversation's thread is the web UUID of its first entry (its URL is
`/search/<that uuid>`); entry ids and times differ from the API's for the same turns, so
turns are matched by question text, in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pplx_export.util.lenient import as_dict, as_str, dicts
from pplx_export.util.timefmt import parse_iso

# The file inside the ZIP: `conversations-<YYYYMMDD>_<HHMMSS>-<hex>.json` (ChatGPT's export
# is `conversations-<n>.json`: not ours).
MEMBER_NAME = re.compile(r"(?:^|/)conversations-\d{8}_\d{6}-[0-9a-fA-F]+\.json$")
# The marker our synthetic plain entries carry (and thread.json's `source`).
OFFICIAL = "official_export"
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class ExportEntry:
    uuid: str
    query: str
    answer: str
    created_at: str
    engine_mode: str = ""
    label: str = ""


@dataclass(frozen=True)
class ExportConversation:
    context_uuid: str
    title: str
    created_at: str
    updated_at: str  # the later of the conversation's `updated_at` and its last entry
    mode: str
    entries: tuple[ExportEntry, ...] = field(default_factory=tuple)

    @property
    def web_uuid(self) -> str:
        return self.entries[0].uuid.lower() if self.entries else ""

    @property
    def archive_mode(self) -> str:
        """The archive's `<mode>` folder: only Deep Research is told apart by the export."""
        if any(e.engine_mode == "deep_research" for e in self.entries):
            return "deep-research"
        return "search"


class ExportShapeError(ValueError):
    """A conversation that is not the §9.8 shape (no entries, no first entry uuid)."""


def _later(*values: str) -> str:
    best = ""
    best_at = None
    for value in values:
        at = parse_iso(value)
        if at is not None and (best_at is None or at > best_at):
            best, best_at = value, at
    return best


def parse_conversation(raw: Any) -> ExportConversation:
    """One element of the export's `conversations` array."""
    doc = as_dict(raw)
    if not doc:
        raise ExportShapeError("a conversation is not a JSON object")
    entries = tuple(
        ExportEntry(
            uuid=as_str(e.get("entry_uuid")),
            query=as_str(e.get("query")),
            answer=as_str(e.get("answer")),
            created_at=as_str(e.get("created_at")),
            engine_mode=as_str(e.get("engine_mode")),
            label=as_str(e.get("label")),
        )
        for e in dicts(doc.get("entries"))
    )
    if not entries or not entries[0].uuid:
        name = as_str(doc.get("context_uuid")) or "?"
        raise ExportShapeError(f"conversation {name} has no entry with an entry_uuid")
    updated = _later(as_str(doc.get("updated_at")), *(e.created_at for e in entries))
    return ExportConversation(
        context_uuid=as_str(doc.get("context_uuid")),
        title=as_str(doc.get("context_title")) or entries[0].query,
        created_at=as_str(doc.get("created_at")) or entries[0].created_at,
        updated_at=updated or as_str(doc.get("updated_at")),
        mode=as_str(doc.get("mode")),
        entries=entries,
    )


def question_key(text: str) -> str:
    """Questions compare with runs of white space folded (the export re-flows none, but a
    trailing newline or a double space is not a different question)."""
    return _SPACES.sub(" ", text).strip()


def match_turns(archived: list[str], exported: list[str]) -> list[int | None]:
    """For each exported question, the index of the archived question it is, or None.

    In order and greedy: an exported question takes the first archived one after the last
    match that has the same text, so repeated questions pair up one to one.
    """
    keys = [question_key(q) for q in archived]
    out: list[int | None] = []
    at = 0
    for question in exported:
        key = question_key(question)
        try:
            found = keys.index(key, at)
        except ValueError:
            out.append(None)
            continue
        out.append(found)
        at = found + 1
    return out


def plain_questions(plain: Any) -> list[str]:
    """The questions of a plain response's entries, in order (sub-agent result entries have
    none of their own and are no turn the export lists)."""
    return [
        as_str(e.get("query_str"))
        for e in dicts(as_dict(plain).get("entries"))
        if as_str(e.get("query_str")).strip()
    ]


def synthetic_entry(conv: ExportConversation, entry: ExportEntry) -> dict[str, Any]:
    """A plain-response entry (§9.1 form 4: `text` is the answer as Markdown) for a turn
    only the export holds. Marked `imported_from`, so the renderer says where it came from
    and that its `[n]` markers have no sources. Nothing the export lacks is filled in."""
    at = parse_iso(entry.created_at)
    naive = at.replace(tzinfo=None).isoformat(timespec="microseconds") if at else ""
    return {
        "uuid": entry.uuid,
        "backend_uuid": entry.uuid,
        "context_uuid": conv.context_uuid,
        "query_str": entry.query,
        "text": entry.answer,
        "sources": [],
        "updated_datetime": naive,
        "entry_created_datetime": at.isoformat() if at else "",
        "status": "COMPLETED",
        "imported_from": OFFICIAL,
    }


def synthetic_plain(conv: ExportConversation) -> dict[str, Any]:
    """The plain response of a thread only the export holds: every turn imported."""
    created = parse_iso(conv.created_at)
    updated = parse_iso(conv.updated_at)
    return {
        "thread_metadata": {
            "title": conv.title,
            "created_at": created.replace(tzinfo=None).isoformat() if created else "",
            "updated_at": updated.replace(tzinfo=None).isoformat() if updated else "",
        },
        "entries": [synthetic_entry(conv, e) for e in conv.entries],
        "background_entries": [],
        "imported_from": OFFICIAL,
    }


def missing_entries(plain: Any, conv: ExportConversation) -> list[tuple[int, ExportEntry]]:
    """The export's turns a plain response lacks, each with the index of the plain entry
    it goes before (len(entries) = at the end), matched by question text in order."""
    entries = dicts(as_dict(plain).get("entries"))
    positions = [i for i, e in enumerate(entries) if as_str(e.get("query_str")).strip()]
    matches = match_turns(
        [as_str(entries[i].get("query_str")) for i in positions], [e.query for e in conv.entries]
    )
    out: list[tuple[int, ExportEntry]] = []
    after = -1  # the plain entry of the last matched question
    for entry, found in zip(conv.entries, matches, strict=True):
        if found is not None:
            after = positions[found]
            continue
        out.append((after + 1, entry))
    return out


def merge_plain(plain: Any, conv: ExportConversation) -> dict[str, Any]:
    """`plain` (the API's response, never changed) with the export's turns it lacks put in
    where they belong; `plain` itself when it lacks none."""
    missing = missing_entries(plain, conv)
    if not missing:
        return as_dict(plain)
    doc = dict(as_dict(plain))
    entries = list(dicts(doc.get("entries")))
    for offset, (at, entry) in enumerate(missing):
        entries.insert(at + offset, synthetic_entry(conv, entry))
    doc["entries"] = entries
    return doc


def is_imported(entry: Any) -> bool:
    return as_str(as_dict(entry).get("imported_from")) == OFFICIAL
