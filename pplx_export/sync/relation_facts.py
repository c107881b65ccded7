"""Read each archived thread's relation facts, through the re-render parse path, with a cache.

Per protocol.md §8 every thread directory is reloaded offline: `thread.json` for identity
and space, `raw_entries.json` (+ `raw_blocks.json`) through `parse_thread`, the same path
as re-render. A thread without `raw_entries.json` degrades to a shell: identity and space
from `thread.json`, its `conversation.md` text as the only content (so only `same_space`
and bare-UUID `references` can come from it). A thread whose files cannot be read or
parsed is reported and left out; the rest of the graph is still built.

Parsing every thread is as costly as a re-render, so the facts are cached in
`index/relations_cache.json` keyed by the (size, mtime_ns) of the files they came from (the
trust rule of `re-render --changed-only`); the parser version is part of the key. A
re-render has every thread parsed anyway: its workers compute each thread's record
(`facts_record`) and the run appends them to `index/relations_cache.jsonl` (one line per
thread, constant memory), which the next `relations` replays over the snapshot and folds
into it. So after a re-render `relations` parses nothing. The cache is derived state:
losing it (or a torn journal line) costs one slow run.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pplx_export.archive.library_index import INDEX_DIR
from pplx_export.archive.paths import iter_thread_rels
from pplx_export.archive.raw import RAW_BLOCKS, RAW_ENTRIES
from pplx_export.archive.thread_json import THREAD_JSON
from pplx_export.models import JSON, Conversation
from pplx_export.renderer_version import RENDERER_VERSION
from pplx_export.sync.relation_edges import (
    SubAgentRef,
    ThreadFacts,
    bare_uuids,
    link_uuids,
)
from pplx_export.util.atomic import read_with_stat, write_if_changed
from pplx_export.util.jsontext import dumps_compact, loads
from pplx_export.util.lenient import as_dict, as_str

log = logging.getLogger(__name__)

CACHE_NAME = "relations_cache.json"
JOURNAL_NAME = "relations_cache.jsonl"
# A journal no `relations` has folded in for this long is left to grow no further (the
# threads it misses are read by that run instead).
JOURNAL_CAP = 64 << 20
CACHE_FORMAT = 1
CONVERSATION_MD = "conversation.md"
Stat = list[int] | None


class ThreadUnreadable(Exception):
    """One thread's files cannot be read or parsed; the message says which and why."""


@dataclass
class FactsScan:
    root: Path
    parse: ParseFn
    records: dict[str, JSON] = field(default_factory=dict)  # rel -> {"stats", "facts"}
    failures: list[tuple[str, str]] = field(default_factory=list)  # (rel, reason)
    parsed: int = 0  # threads read from their files (the rest came from the cache)
    degraded: int = 0
    changed: bool = True  # False: the same threads, all from the cache, as last run
    outputs: JSON = field(default_factory=dict)  # the last run's output stamp (see relations)

    def facts(self) -> list[ThreadFacts]:
        """One ThreadFacts per UUID, in path order (decoded from the records on demand)."""
        by_uuid: dict[str, ThreadFacts] = {}
        for rel, record in list(self.records.items()):
            try:
                facts = ThreadFacts.from_json(record["facts"])
            except (KeyError, TypeError, ValueError):
                try:  # a damaged cache record: read the thread again
                    facts, stats = read_facts(self.root, rel, self.parse)
                except ThreadUnreadable as exc:
                    self.failures.append((rel, str(exc)))
                    del self.records[rel]
                    continue
                self.records[rel] = {"stats": stats, "facts": facts.to_json()}
                self.parsed += 1
                self.changed = True
            # Two directories of one thread (its date moved): the one named with the later
            # date is the newer copy.
            held = by_uuid.get(facts.uuid)
            if held is None or _dir_key(facts.rel) > _dir_key(held.rel):
                by_uuid[facts.uuid] = facts
        return sorted(by_uuid.values(), key=lambda f: f.rel)


def cache_path(root: Path) -> Path:
    return Path(root) / INDEX_DIR / CACHE_NAME


def journal_path(root: Path) -> Path:
    return Path(root) / INDEX_DIR / JOURNAL_NAME


def _stat(path: str) -> Stat:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _read(path: str, name: str) -> tuple[Any, Stat]:
    try:
        data, (size, mtime) = read_with_stat(path)
    except OSError as exc:
        raise ThreadUnreadable(f"{name} unreadable: {exc.strerror or exc}") from None
    try:
        return loads(data), [size, mtime]
    except (ValueError, UnicodeDecodeError) as exc:
        raise ThreadUnreadable(f"{name} is not valid JSON: {exc}") from None


def _facts_of_conv(conv: Conversation, rel: str, uuid: str, title: str, slug: str) -> ThreadFacts:
    facts = ThreadFacts(uuid=uuid, rel=rel, title=title, space_slug=slug)
    if conv.turns:
        first = conv.turns[0]
        facts.first_query = first.query
        facts.first_source = first.metadata.query_source
        facts.first_created_us = first.created_us or 0
    texts: list[str] = []
    content: list[str] = []
    subs = list(conv.sub_agents.values())
    for turn in conv.turns:
        answer = turn.answer or turn.display_answer
        texts.append(answer)
        texts.extend(c.url for c in turn.citations)
        content.append(turn.query + "\n" + answer)
        subs.extend(turn.sub_agents)
    for sub in subs:
        texts.append(sub.answer)
        texts.extend(c.url for c in sub.sources)
    facts.links = sorted(link_uuids(texts))
    facts.mentions = sorted(bare_uuids("\n".join(content)))
    facts.sub_agents = [SubAgentRef(s.sub_id, s.headline, s.thread_uuid) for s in subs]
    return facts


ParseFn = Callable[..., Conversation]


def read_facts(root: Path, rel: str, parse: ParseFn) -> tuple[ThreadFacts, list[Stat]]:
    """One thread's facts and the stats of the files they came from. Raises ThreadUnreadable."""
    base = f"{root}{os.sep}{rel}{os.sep}"
    doc, tj_stat = _read(base + THREAD_JSON, THREAD_JSON)
    if not isinstance(doc, dict) or not as_str(doc.get("web_uuid")):
        raise ThreadUnreadable("thread.json has no web_uuid")
    uuid = as_str(doc["web_uuid"]).lower()
    title = as_str(doc.get("title"))
    slug = as_str(as_dict(doc.get("space")).get("slug"))
    if _stat(base + RAW_ENTRIES) is None:
        md_path = base + CONVERSATION_MD
        try:
            text, (size, mtime) = read_with_stat(md_path)
            md_stat: Stat = [size, mtime]
        except FileNotFoundError:
            text, md_stat = b"", None
        except OSError as exc:
            raise ThreadUnreadable(f"{CONVERSATION_MD} unreadable: {exc}") from None
        facts = ThreadFacts(uuid=uuid, rel=rel, title=title, space_slug=slug, degraded=True)
        facts.mentions = sorted(bare_uuids(text.decode("utf-8", "replace")))
        return facts, [tj_stat, None, None, md_stat]
    plain, plain_stat = _read(base + RAW_ENTRIES, RAW_ENTRIES)
    if not isinstance(plain, dict):
        raise ThreadUnreadable(f"{RAW_ENTRIES} is not a JSON object")
    blocks: Any = None
    blocks_stat: Stat = None
    if _stat(base + RAW_BLOCKS) is not None:
        blocks, blocks_stat = _read(base + RAW_BLOCKS, RAW_BLOCKS)
        if not isinstance(blocks, dict):
            raise ThreadUnreadable(f"{RAW_BLOCKS} is not a JSON object")
    from pplx_export.parse.thread import row_from_thread_json

    mode_folder = rel.split("/")[1] if rel.count("/") >= 2 else ""
    try:
        conv = parse(
            plain,
            blocks,
            row_from_thread_json(doc, mode_folder),
            web_uuid=as_str(doc["web_uuid"]),
            url=as_str(doc.get("url")),
            export_via=as_str(doc.get("export_via")),
            exported_at=as_str(doc.get("exported_at")),
        )
    except Exception as exc:  # a parser bug on one thread must not cost the graph
        log.debug("relations: parsing %s failed", rel, exc_info=True)
        raise ThreadUnreadable(f"cannot parse: {type(exc).__name__}: {exc}") from None
    return _facts_of_conv(conv, rel, uuid, title, slug), [tj_stat, plain_stat, blocks_stat, None]


def facts_record(root: Path, rel: str, conv: Conversation, doc: JSON) -> JSON:
    """The cache record of a thread just written from `conv` (thread.json `doc` as now on
    disk), for a re-render worker: the facts `read_facts` would find, and the stats the
    next `relations` checks them against."""
    uuid = as_str(doc.get("web_uuid")).lower()
    slug = as_str(as_dict(doc.get("space")).get("slug"))
    facts = _facts_of_conv(conv, rel, uuid, as_str(doc.get("title")), slug)
    return {"stats": _current_stats(root, rel), "facts": facts.to_json()}


class FactsJournal:
    """The re-render's side of the cache: `add` appends one thread's record to the journal
    (opened on the first record, buffered: derived state needs no fsync), `close` ends it."""

    def __init__(self, root: Path) -> None:
        self.path = journal_path(root)
        self.fh: Any = None
        self.failed = False

    def add(self, rel: str, record: JSON) -> None:
        if self.failed:
            return
        line = json.dumps({"rel": rel, "parser": RENDERER_VERSION, **record}, ensure_ascii=False)
        try:
            if self.fh is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close)
                if self.fh.tell() > JOURNAL_CAP:
                    self.close()
                    self.failed = True
                    return
            self.fh.write(line + "\n")
        except OSError as exc:  # derived state: `relations` reads those threads itself
            log.debug("relations journal not written: %s", exc)
            self.failed = True

    def close(self) -> None:
        if self.fh is not None:
            try:
                self.fh.close()
            except OSError as exc:
                log.debug("relations journal not closed: %s", exc)
            self.fh = None


def _replay(root: Path, records: dict[str, JSON]) -> bool:
    """Apply the journal's records over `records` (a later line wins); True if there was
    one. A torn or foreign line is skipped: that thread is read again instead."""
    try:
        data = journal_path(root).read_bytes()
    except FileNotFoundError:
        return False
    except OSError as exc:
        log.info("relations journal unreadable (%s); reading those threads again", exc)
        return True
    lines = data.splitlines()
    try:  # an intact journal decodes in one call
        decoded = loads(b"[" + b",".join(lines) + b"]")
    except (ValueError, UnicodeDecodeError):
        decoded = [_line(raw) for raw in lines]  # a torn line: only that one is lost
    for line in decoded:
        if not isinstance(line, dict) or line.get("parser") != RENDERER_VERSION:
            continue
        rel = line.get("rel")
        if isinstance(rel, str) and "stats" in line and "facts" in line:
            records[rel] = {"stats": line["stats"], "facts": line["facts"]}
    return True


def _line(raw: bytes) -> Any:
    try:
        return loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None


def _current_stats(root: Path, rel: str) -> list[Stat]:
    base = f"{root}{os.sep}{rel}{os.sep}"
    entries = _stat(base + RAW_ENTRIES)
    return [
        _stat(base + THREAD_JSON),
        entries,
        _stat(base + RAW_BLOCKS) if entries is not None else None,
        _stat(base + CONVERSATION_MD) if entries is None else None,
    ]


def _dir_key(rel: str) -> tuple[str, str]:
    return rel.rsplit("/", 1)[-1][:10], rel


def load_cache(root: Path) -> tuple[dict[str, JSON], JSON, bool]:
    """The cache's records by thread directory (the snapshot, then the journal's records
    over it), its output stamp, and whether there was a journal to fold in. Anything
    unreadable (or written by another parser version) counts as absent."""
    threads: dict[str, JSON] = {}
    outputs: JSON = {}
    try:
        doc = loads(cache_path(root).read_bytes())
    except FileNotFoundError:
        doc = None
    except (OSError, ValueError, UnicodeDecodeError):
        log.info("relations cache unreadable; rebuilding it")
        doc = None
    if (
        isinstance(doc, dict)
        and doc.get("format") == CACHE_FORMAT
        and doc.get("parser") == RENDERER_VERSION
    ):
        found, stamp = doc.get("threads"), doc.get("outputs")
        threads = found if isinstance(found, dict) else {}
        outputs = stamp if isinstance(stamp, dict) else {}
    journal = _replay(root, threads)
    return threads, outputs, journal


def save_cache(root: Path, records: dict[str, JSON], outputs: JSON) -> None:
    doc = {"format": CACHE_FORMAT, "parser": RENDERER_VERSION, "outputs": outputs,
           "threads": records}  # fmt: skip
    # No trailing newline: jsontext.loads decodes a document that ends where the text ends
    # in one C call, and this file is read on every run.
    data = dumps_compact(doc)
    try:
        write_if_changed(cache_path(root), data)
        # Folded into the snapshot: the journal's records are in it now.
        journal_path(root).unlink(missing_ok=True)
    except OSError as exc:  # derived state: the graph is still right without it
        log.warning("could not write %s: %s", cache_path(root), exc)


def scan_facts(root: Path, *, parse: ParseFn | None = None, use_cache: bool = True) -> FactsScan:
    """Every thread directory's record, in sorted path order: from the cache when the
    thread's files are unchanged (size and mtime), else read and parsed now."""
    if parse is None:
        from pplx_export.parse import parse_thread

        parse = parse_thread
    cached, outputs, journal = load_cache(root) if use_cache else ({}, {}, False)
    scan = FactsScan(root=root, parse=parse, outputs=outputs)
    records = scan.records
    for rel in iter_thread_rels(root, known=cached):
        record = cached.get(rel)
        if not (isinstance(record, dict) and record.get("stats") == _current_stats(root, rel)):
            try:
                facts, stats = read_facts(root, rel, parse)
            except ThreadUnreadable as exc:
                scan.failures.append((rel, str(exc)))
                log.warning("relations: skipping %s: %s", rel, exc)
                continue
            scan.parsed += 1
            record = {"stats": stats, "facts": facts.to_json()}
        records[rel] = record
        scan.degraded += bool(as_dict(record.get("facts")).get("degraded"))
    # Nothing read again and no directory gone: the same archive as the last run.
    scan.changed = bool(scan.parsed) or len(records) != len(cached) or journal
    return scan
