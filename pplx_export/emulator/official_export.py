"""Perplexity's "Export my data" archive (protocol §9.8) of the emulator's library.

One account's threads as the export holds them: questions, answers and times, nothing
else; entry ids other than the first differ from the API's and times are a few seconds
off, as reported of the real file. Three cases are planted so the import's audit has
something to find: the library's deleted and expired threads (the API no longer serves
them), one conversation the API has never heard of, and one served thread with a turn
the API does not return.
"""

from __future__ import annotations

import json
import uuid as uuidlib
import zipfile
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from pplx_export.emulator import timeutil
from pplx_export.emulator.library import OK, Library, ThreadRecord
from pplx_export.util.lenient import as_dict, as_str, dicts

_NS = uuidlib.uuid5(uuidlib.NAMESPACE_URL, "pplx-export-emulator:official-export")
# The file names of the real archive (protocol §9.8).
ZIP_NAME = "user_data_export_2026-12-01_5f3c2a.zip"
MEMBER = "conversations-20261201_101500-5f3c2a9e.json"
EXTRA_QUESTION = "Can you sum that up in one sentence?"
EXTRA_ANSWER = (
    "In one sentence: do the first step today and check the result after a day or two.[1]"
    " If nothing changes by then, try the second suggestion.[2]"
)
ONLY_IN_EXPORT = [
    (
        "What is a good first houseplant?",
        "A **pothos** or a snake plant: both forgive missed waterings.[1]",
    ),
    (
        "Does a pothos need direct sun?",
        "No. Bright, indirect light is best; direct sun scorches it.[1]",
    ),
]


@dataclass
class Planted:
    """What the planted cases are, for tests and `demo` to check the audit against."""

    not_served: list[str] = field(default_factory=list)  # web uuids the API does not serve
    extra_turns: dict[str, list[str]] = field(default_factory=dict)  # web uuid -> questions
    conversations: int = 0


def _answer(entry: dict[str, Any]) -> str:
    """The answer as the export carries it: the Markdown of the FINAL step, the JSON
    object's `answer`, or the text itself (the emulator's samples use all three)."""
    text = as_str(entry.get("text"))
    try:
        doc = json.loads(text)
    except ValueError:
        return text
    if isinstance(doc, list):
        for step in dicts(doc):
            if step.get("step_type") == "FINAL":
                inner = as_str(as_dict(step.get("content")).get("answer"))
                try:
                    return as_str(as_dict(json.loads(inner)).get("answer")) or inner
                except ValueError:
                    return inner
        return ""
    return as_str(as_dict(doc).get("answer")) if isinstance(doc, dict) else text


def _shift(iso: str, seconds: int) -> str:
    moment = timeutil.parse_time(iso)
    if moment is None:
        return iso
    return (moment + timedelta(seconds=seconds)).isoformat()


def _entry_time(entry: dict[str, Any], fallback: str) -> str:
    us = entry.get("created_us")
    if isinstance(us, int):
        return timeutil.format_us(timeutil.from_us(us))
    return (
        as_str(entry.get("entry_created_datetime"))
        or as_str(entry.get("updated_datetime"))
        or fallback
    )


def _conversation(record: ThreadRecord) -> dict[str, Any]:
    entries = []
    for n, entry in enumerate(e for e in record.entries if as_str(e.get("query_str")).strip()):
        uuid = record.uuid if n == 0 else str(uuidlib.uuid5(_NS, f"{record.uuid}:{n}"))
        entries.append(
            {
                "entry_uuid": uuid,
                "query": as_str(entry.get("query_str")),
                "answer": _answer(entry),
                "created_at": _shift(_entry_time(entry, record.last_updated), 3 + n),
                "label": None,
                "query_status": "COMPLETED",
                "engine_mode": "deep_research" if record.mode == "deep-research" else "pro",
            }
        )
    first = entries[0]["created_at"] if entries else record.last_updated
    return {
        "context_uuid": record.context_uuid or str(uuidlib.uuid5(_NS, record.uuid)),
        "context_title": record.first_query or record.title,
        "created_at": first,
        # Reported: can be older than the last entry (the importer takes the later).
        "updated_at": _shift(record.last_updated, -90),
        "mode": "COPILOT",
        "collection_uuid": None,
        "entries": entries,
    }


def build_export(library: Library, username: str = "alice") -> tuple[dict[str, Any], Planted]:
    """The export document of `username`'s threads, and what is planted in it."""
    planted = Planted()
    conversations = []
    extra_done = False
    for record in sorted(library.iter_threads(), key=lambda r: r.uuid):
        if record.author != username or record.space_only:
            continue
        conv = _conversation(record)
        if not conv["entries"]:
            continue
        if record.state != OK:
            planted.not_served.append(record.uuid)
        elif not extra_done and record.mode == "search" and len(conv["entries"]) >= 2:
            last = conv["entries"][-1]
            conv["entries"].append(
                {
                    **last,
                    "entry_uuid": str(uuidlib.uuid5(_NS, f"{record.uuid}:extra")),
                    "query": EXTRA_QUESTION,
                    "answer": EXTRA_ANSWER,
                    "created_at": _shift(last["created_at"], 600),
                }
            )
            planted.extra_turns[record.uuid] = [EXTRA_QUESTION]
            extra_done = True
        conversations.append(conv)
    conversations.append(_only_in_export(planted))
    planted.conversations = len(conversations)
    return {"conversations": conversations}, planted


def _only_in_export(planted: Planted) -> dict[str, Any]:
    web_uuid = str(uuidlib.uuid5(_NS, "only-in-export"))
    planted.not_served.append(web_uuid)
    entries = []
    for n, (question, answer) in enumerate(ONLY_IN_EXPORT):
        entries.append(
            {
                "entry_uuid": web_uuid if n == 0 else str(uuidlib.uuid5(_NS, f"only:{n}")),
                "query": question,
                "answer": answer,
                "created_at": f"2025-06-0{n + 1}T18:20:0{n}.512000+00:00",
                "label": None,
                "query_status": "COMPLETED",
                "engine_mode": None,
            }
        )
    return {
        "context_uuid": str(uuidlib.uuid5(_NS, "only-in-export:context")),
        "context_title": ONLY_IN_EXPORT[0][0],
        "created_at": entries[0]["created_at"],
        "updated_at": entries[0]["created_at"],
        "mode": "CONCISE",
        "collection_uuid": None,
        "entries": entries,
    }


def write_export_zip(library: Library, path: Path, username: str = "alice") -> Planted:
    """Write the archive as Perplexity mails it: a ZIP with the conversations JSON (and,
    in the real one, a spreadsheet the importer does not read)."""
    doc, planted = build_export(library, username)
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(MEMBER, json.dumps(doc, ensure_ascii=False, indent=2))
        zf.writestr("user-data-20261201.xlsx", b"PK\x03\x04 (spreadsheet not emulated)")
    return planted
