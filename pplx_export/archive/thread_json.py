"""`thread.json` (protocol §6.9): fixed key order, unknown and tombstone keys kept."""

from __future__ import annotations

from typing import Any

from pplx_export.models import JSON, Conversation
from pplx_export.util.jsonobj import loads_if
from pplx_export.util.jsontext import dumps_indented

THREAD_JSON = "thread.json"
# The `source` of a thread recovered from the data export (parse.official_export.OFFICIAL;
# not imported from there: thread.json is read where the parser is not loaded).
OFFICIAL = "official_export"
KEY_ORDER = (
    "web_uuid",
    "psc_uuid",
    "url",
    "title",
    "mode",
    "author",
    "export_via",
    "space",
    "lastUpdated",
    "threadAccess",
    "n_turns",
    "n_sources",
    "metadata",
    "report_info",
    "exported_at",
    "interruptions",
    "answer_variants",
    "losses",
    "loss_details",
    "source",
    "imported_turns",
    "remote_deleted",
)
OPTIONAL_KEYS = ("interruptions", "answer_variants", "losses", "loss_details")


def report_info_of(conv: Conversation) -> JSON | None:
    if conv.report is not None:
        return conv.report.info.to_json()
    for turn in conv.turns:
        if turn.metadata.report_info is not None:
            return turn.metadata.report_info.to_json()
    return None


def build_thread_json(
    conv: Conversation, existing: JSON | None, *, exported_at: str | None
) -> JSON:
    """The document for `conv`. From `existing` keep `remote_deleted` and unknown keys.

    `exported_at` is the stamp to record (online: now; offline: the existing one).
    """
    fresh: dict[str, Any] = {
        "web_uuid": conv.web_uuid,
        "psc_uuid": conv.psc_uuid,
        "url": conv.url,
        "title": conv.title,
        "mode": conv.mode,
        "author": conv.author,
        "export_via": conv.export_via,
        "space": conv.space.to_json() if conv.space is not None else None,
        "lastUpdated": conv.last_updated,
        "threadAccess": conv.thread_access,
        "n_turns": len(conv.turns),
        "n_sources": len(conv.citations),
        "metadata": conv.metadata,
        "report_info": report_info_of(conv),
        "exported_at": exported_at,
    }
    if conv.interruptions:
        fresh["interruptions"] = [i.to_json() for i in conv.interruptions]
    if conv.answer_variants:
        fresh["answer_variants"] = conv.answer_variants
    losses = conv.losses
    if losses:
        # Content the raw files hold that this version could not read (§9.1): counted for
        # `status`, detailed for a bug report; absent once a re-render reads it.
        fresh["losses"] = len(losses)
        fresh["loss_details"] = [{"turn": n, **loss.to_json()} for n, loss in losses]
    imported = sum(1 for t in conv.turns if t.metadata.imported_from)
    if imported:
        # Turns only Perplexity's own data export holds (§9.8); a thread made of nothing
        # else was recovered from it, and the next sync asks the API for it.
        fresh["imported_turns"] = imported
        if imported == len(conv.turns):
            fresh["source"] = OFFICIAL
    existing = existing or {}
    if conv.thread_access is None and existing.get("threadAccess") is not None:
        # The earlier tool recorded a value here that the raw files do not carry; keep it.
        fresh["threadAccess"] = existing["threadAccess"]
    if "remote_deleted" in existing:
        fresh["remote_deleted"] = existing["remote_deleted"]
    doc = {k: fresh[k] for k in KEY_ORDER if k in fresh}
    for key, value in existing.items():
        if key not in KEY_ORDER:
            doc[key] = value  # written by a newer tool or by hand: never ours to drop
    return doc


def dump_thread_json(doc: JSON) -> str:
    # Same bytes as the earlier tool: indent 1, UTF-8 unescaped, no trailing newline.
    return dumps_indented(doc, 1)


def load_json_dict(text: str) -> JSON | None:
    """The JSON object `text` holds, or None (not JSON, or not an object)."""
    return loads_if(text, dict)
