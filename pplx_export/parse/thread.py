"""Entry point: raw plain (+ schematized) responses and an index row -> Conversation.

The same function serves online export and offline re-render, so both produce identical
Conversations from identical raw files. Pure: no I/O, no network, no clock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from pplx_export.errors import SchemaError
from pplx_export.models import Conversation, Report, Space, Step, SubAgent, Turn
from pplx_export.parse.answers import wf_block_answer
from pplx_export.parse.assets import collect_assets, report_candidates
from pplx_export.parse.attribution import attribute
from pplx_export.parse.citations import thread_citations
from pplx_export.parse.drift import scan
from pplx_export.parse.interruptions import build_registry, workflow_warnings
from pplx_export.parse.losses import LOSS_NOTE, find_losses, loss_line
from pplx_export.parse.mode import COMPUTER_ROW_MODES, detect_mode, row_mode
from pplx_export.parse.mode_tables import WORKFLOW_MODES
from pplx_export.parse.subagents import build_sub_map, council_agent, council_payloads
from pplx_export.parse.turns import build_turn
from pplx_export.parse.variants import find_variants
from pplx_export.parse.views import attach_views
from pplx_export.parse.workflow import BlockWalks, index_wf_blocks
from pplx_export.util.lenient import as_dict, as_str, dicts, lenient_int
from pplx_export.util.threadref import slug_uuid
from pplx_export.util.timefmt import us_to_iso

log = logging.getLogger("pplx_export.parse")

SITE = "https://www.perplexity.ai"
# What a malformed entry can raise despite the lenient accessors; it degrades only itself.
_ENTRY_ERRORS = (TypeError, ValueError, AttributeError, KeyError, RecursionError)


def thread_url(
    web_uuid: str, index_row: dict[str, Any] | None, entries: list[Any] | None = None
) -> str:
    """§4.3: the computer form when the index row says ASI/COMPUTER, else the search form;
    a thread made before about 2026 is named by its title slug (§9.4), as the browser
    shows it, when its entries carry one."""
    if row_mode(index_row) in COMPUTER_ROW_MODES:
        return f"{SITE}/computer/tasks/{web_uuid}"
    for entry in dicts(entries or []):
        slug = as_str(entry.get("thread_url_slug"))
        if slug and slug != web_uuid and slug_uuid(slug) == web_uuid:
            return f"{SITE}/search/{slug}"
    return f"{SITE}/search/{web_uuid}"


def merge_pages(pages: list[dict[str, Any]]) -> dict[str, Any]:
    """§2.3 pagination: metadata from the first page, entries concatenated across pages."""
    merged: dict[str, Any] = {"thread_metadata": {}, "entries": [], "background_entries": []}
    for i, page in enumerate(p for p in pages if isinstance(p, dict)):
        if i == 0:
            merged["thread_metadata"] = page.get("thread_metadata")
        for key in ("entries", "background_entries"):
            value = page.get(key)
            if isinstance(value, list):
                merged[key].extend(value)
    return merged


def row_from_thread_json(thread_json: dict[str, Any], mode_folder: str = "") -> dict[str, Any]:
    """The index row an offline re-render passes: identity, space and dates from thread.json.

    The mode detected at export time (thread.json `mode`, else the `<mode>` folder name)
    matters only for computer: offline it is the only trace of a computer thread whose plain
    payload carries no mode signal (old archives without `url`), so it comes back as the
    listing's `COMPUTER` row mode, which detection and the URL form both honour.
    """
    tj = as_dict(thread_json)
    row: dict[str, Any] = {
        "title": as_str(tj.get("title")),
        "entryUUID": as_str(tj.get("web_uuid")),
        "lastUpdated": as_str(tj.get("lastUpdated")),
        "space": tj.get("space") if isinstance(tj.get("space"), dict) else None,
        "authorUsername": as_str(tj.get("author")),
        "threadAccess": tj.get("threadAccess"),
    }
    if (as_str(tj.get("mode")) or mode_folder) == "computer":
        row["mode"] = "COMPUTER"
    return row


def space_of(index_row: dict[str, Any] | None, entries: list[Any]) -> Space | None:
    """Index row `space` or `collection`; with no row at all, the entry's collection_info."""
    if index_row is not None:
        raw = index_row.get("space") or index_row.get("collection")
    else:
        raw = next(
            (e.get("collection_info") for e in dicts(entries) if e.get("collection_info")), None
        )
    if not isinstance(raw, dict):
        return None
    space = Space(
        uuid=as_str(raw.get("uuid")), title=as_str(raw.get("title")), slug=as_str(raw.get("slug"))
    )
    return space if (space.uuid or space.slug or space.title) else None


def _web_uuid(web_uuid: str, index_row: dict[str, Any] | None, entries: list[Any]) -> str:
    if web_uuid:
        return web_uuid
    from_row = as_str(as_dict(index_row).get("entryUUID"))
    if from_row:
        return from_row
    for entry in dicts(entries):
        slug = as_str(entry.get("thread_url_slug"))
        if slug:
            return slug_uuid(slug) or slug  # a title slug names its UUID (§9.4)
    raise SchemaError(
        "no thread uuid in arguments, index row or entries", path="$.entries[*].thread_url_slug"
    )


def _twins(blocks: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The schematized response's main entries by uuid (a plain entry's twin)."""
    out: dict[str, dict[str, Any]] = {}
    for entry in dicts(as_dict(blocks).get("entries")):
        uuid = as_str(entry.get("uuid"))
        if uuid:
            out.setdefault(uuid, entry)
    return out


def _build_turns(
    entries: list[Any],
    warnings: list[str],
    decoded: dict[int, list[Step]] | None = None,
    twins: dict[str, dict[str, Any]] | None = None,
) -> list[Turn]:
    """Turns in conversation order; `decoded` collects each entry's steps by `id(entry)`
    (drift.scan reuses them instead of decoding the step JSON again).

    Pages may come newest window first (§9.2), so the order is the turns' times, page order
    breaking ties and ordering entries that carry no time at all."""
    turns = []
    twins = twins or {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            warnings.append(f"entries[{i}] is not an object ({type(entry).__name__}); skipped")
            continue
        try:
            turn = build_turn(entry, i + 1, twins.get(as_str(entry.get("uuid"))))
            turns.append(turn)
            if decoded is not None:
                decoded[id(entry)] = turn.steps
        except _ENTRY_ERRORS as exc:
            warnings.append(
                f"entries[{i}] could not be parsed ({exc.__class__.__name__}); kept as a bare turn"
            )
            turns.append(Turn(index=i + 1, uuid=as_str(entry.get("uuid"))))
    turns.sort(key=lambda t: lenient_int(t.created_us))
    for n, turn in enumerate(turns, start=1):
        turn.index = n
    return turns


def _check_losses(
    conv: Conversation, entries: list[Any], twins: dict[str, dict[str, Any]], warnings: list[str]
) -> None:
    """§9.1: a turn that came out without the answer or sources its raw entry holds."""
    by_uuid = {as_str(e.get("uuid")): e for e in dicts(entries) if e.get("uuid")}
    check_sources = conv.mode not in WORKFLOW_MODES
    for turn in conv.turns:
        entry = by_uuid.get(turn.uuid)
        if entry is None:
            continue
        turn.losses = find_losses(turn, entry, twins.get(turn.uuid), check_sources=check_sources)
        for loss in turn.losses:
            warnings.append(f"{LOSS_NOTE} turn {turn.index}: {loss_line(loss)}")


def _turn_sub_agents(turn: Turn, sub_map: dict[str, SubAgent], walks: BlockWalks) -> list[SubAgent]:
    if turn.wf_block is None:
        return []
    council = council_payloads(turn.wf_block, walks)
    if council:
        # Per turn, from the turn's own block: the thread-level map is keyed by model id and
        # keeps only one run per model when several turns convened the council.
        return [council_agent(wp, n) for n, wp in enumerate(council, start=1)]
    out: list[SubAgent] = []
    for ws in walks(turn.wf_block):
        if ws.anchor is None:
            continue
        sub = sub_map.get(ws.sid)
        if sub is not None and all(sub is not seen for seen in out):
            out.append(sub)
    return out


def _display_answer(turn: Turn) -> str:
    if turn.answer.strip():
        return turn.answer
    answer = wf_block_answer(turn.wf_block)
    if answer:
        return answer
    for sub in turn.sub_agents:
        if not sub.is_council and sub.answer.strip():
            return sub.answer
    return ""


def _attach_workflow(
    conv: Conversation, plain: dict[str, Any], blocks: dict[str, Any], walks: BlockWalks
) -> None:
    """§5.4-§5.6 for computer/council threads."""
    main = dicts(blocks.get("entries"))
    background = dicts(blocks.get("background_entries"))
    wf_by_uuid = index_wf_blocks(main)
    for turn in conv.turns:
        turn.wf_block = wf_by_uuid.get(turn.uuid)
        if turn.wf_block is not None:
            turn.metadata.wf_status = as_str(turn.wf_block.get("status"))
    conv.sub_agents = build_sub_map(
        main,
        background,
        dicts(plain.get("background_entries")),
        dicts(plain.get("entries")),
        walks,
    )
    result = attribute(conv.turns, main, background, dicts(plain.get("entries")), walks)
    for turn in conv.turns:
        turn.is_stub = turn.index in result.stub_turns
        turn.stub_wfs = result.stub_wfs.get(turn.index, [])
        turn.sub_agents = _turn_sub_agents(turn, conv.sub_agents, walks)
        turn.display_answer = _display_answer(turn)
    conv.appendix = result.appendix


def parse_thread(
    plain: dict[str, Any],
    blocks: dict[str, Any] | None = None,
    index_row: dict[str, Any] | None = None,
    *,
    web_uuid: str = "",
    url: str = "",
    export_via: str = "",
    exported_at: str = "",
) -> Conversation:
    """Build the Conversation. Raises SchemaError only when nothing can be parsed at all."""
    row = index_row if isinstance(index_row, dict) else None
    name = web_uuid or as_str(as_dict(row).get("entryUUID"))
    if not isinstance(plain, dict):
        raise SchemaError("plain thread response is not a JSON object", thread=name, path="$")
    entries = plain.get("entries")
    if not isinstance(entries, list):
        raise SchemaError("`entries` is not a list", thread=name, path="$.entries")
    uuid = _web_uuid(web_uuid, row, entries)
    warnings: list[str] = []
    metadata = plain.get("thread_metadata")
    if not isinstance(metadata, dict):
        if metadata is not None:
            warnings.append("thread_metadata is not an object; ignored")
        metadata = {}
    if blocks is not None and not isinstance(blocks, dict):
        warnings.append("schematized response is not an object; ignored")
        blocks = None

    decoded: dict[int, list[Step]] = {}
    twins = _twins(blocks)
    turns = _build_turns(entries, warnings, decoded, twins)
    url = url or thread_url(uuid, row, entries)
    mode, mode_warnings = detect_mode(
        metadata, row, url, [s for t in turns for s in t.steps], entries
    )
    warnings.extend(mode_warnings)
    title = (as_str(metadata.get("title")) or as_str(as_dict(row).get("title"))).strip()
    last_updated = as_str(as_dict(row).get("lastUpdated"))
    if not last_updated:
        last_updated = next((us_to_iso(t.updated_us) for t in reversed(turns) if t.updated_us), "")
    conv = Conversation(
        web_uuid=uuid,
        psc_uuid=next((t.context_uuid for t in turns if t.context_uuid), None),
        url=url,
        title=title or "untitled",
        author=as_str(as_dict(row).get("authorUsername"))
        or next((t.author for t in turns[:1] if t.author), "")
        or export_via,
        export_via=export_via,
        mode=mode,
        last_updated=last_updated,
        thread_access=as_dict(row).get("threadAccess"),
        space=space_of(row, entries),
        turns=turns,
        citations=thread_citations(t.citations for t in turns),
        metadata=metadata,
        answer_variants=find_variants(entries),
        raw_plain=plain,
        raw_blocks=blocks,
        exported_at=exported_at,
    )
    # Every pass over the workflow blocks (sub-agents, attribution, drift) reads one walk.
    walks = BlockWalks()
    if blocks is not None:
        if mode in WORKFLOW_MODES:
            _attach_workflow(conv, plain, blocks, walks)
        # Not in §5.9 (main entries only): a sub-agent's files are part of the thread too.
        conv.assets = collect_assets(
            dicts(blocks.get("entries")) + dicts(blocks.get("background_entries"))
        )
        warnings.extend(
            workflow_warnings(dicts(blocks.get("entries")), dicts(blocks.get("background_entries")))
        )
    elif mode in WORKFLOW_MODES and dicts(plain.get("background_entries")):
        warnings.append(
            "background entries present but no schematized response: "
            "sub-agent work cannot be attributed"
        )
    info = next((t.metadata.report_info for t in turns if t.metadata.report_info), None)
    if info is not None:
        conv.report = Report(info=info, candidates=report_candidates(info, conv.assets))
    conv.interruptions = build_registry(conv.turns, conv.appendix)
    _check_losses(conv, entries, twins, warnings)
    conv.drift_scan = partial(scan, plain, blocks, decoded, walks)
    conv.warnings = warnings
    for line in warnings:
        log.debug("thread %s: %s", uuid, line)
    return attach_views(conv)


def parse_archived(
    parse: Callable[..., Conversation],
    plain: Any,
    blocks: Any,
    doc: dict[str, Any],
    mode_folder: str,
) -> Conversation:
    """An archived thread parsed from its raw files and thread.json `doc` (under the
    `<mode>` folder `mode_folder`), the way every offline reader does it: re-render, verify,
    the search index. `parse` is `parse_thread` or an engine's stand-in for it."""
    return parse(
        plain,
        blocks,
        row_from_thread_json(doc, mode_folder),
        web_uuid=str(doc.get("web_uuid") or ""),
        url=str(doc.get("url") or ""),
        export_via=str(doc.get("export_via") or ""),
        exported_at=str(doc.get("exported_at") or ""),
    )
