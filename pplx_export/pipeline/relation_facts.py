"""Read each archived thread's relation facts, through the re-render parse path, with a cache.

Per protocol.md §8 every thread directory is reloaded offline: `thread.json` for identity
and space, `raw_entries.json` (+ `raw_blocks.json`) through `parse_thread`, the same path
as re-render. A thread without `raw_entries.json` degrades to a shell: identity and space
from `thread.json`, its `conversation.md` text as the only content (so only `same_space`
and bare-UUID `references` can come from it). A thread whose files cannot be read or
parsed is reported and left out; the rest of the graph is still built.

Parsing every thread is as costly as a re-render, so the facts are cached in the state
store's `relations_cache` document (`index/relations_cache.json` before) keyed by the
(size, mtime_ns) of the files they came from (the trust rule of `re-render --changed-only`);
the parser version is part of the key. A re-render has every thread parsed anyway: its
workers compute each thread's record (`facts_record`) and the run adds them to the store's
`relation_facts_journal` table (one row per thread, in short batches: constant memory, and
no write lock held while workers run; `index/relations_cache.jsonl` before), which the next
`relations` replays over the snapshot and folds into it. So after a re-render `relations`
parses nothing. The cache is derived state: losing it (or a torn journal line) costs one
slow run.

Long because the facts, their cache and the journal a re-render appends to follow one trust
rule (keyed by file stats and the parser version): reading, caching and replaying share the
record format, and apart the key could drift between the writer and the reader.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pplx_export.archive.paths import iter_thread_rels
from pplx_export.archive.raw import RAW_BLOCKS, RAW_ENTRIES
from pplx_export.archive.thread_json import THREAD_JSON
from pplx_export.errors import ThreadUnreadable
from pplx_export.models import JSON, Conversation
from pplx_export.pipeline.relation_edges import (
    SubAgentRef,
    ThreadFacts,
    bare_uuids,
    link_uuids,
    normalize_query,
)
from pplx_export.renderer_version import RENDERER_VERSION
from pplx_export.store.db import transaction
from pplx_export.store.docs import connect, journal_bytes, load_bytes, save_bytes
from pplx_export.util.atomic import read_with_stat
from pplx_export.util.jsontext import dumps_compact, loads, loads_as
from pplx_export.util.lenient import as_dict, as_str
from pplx_export.util.lenient import lenient_int as lint

log = logging.getLogger(__name__)

CACHE_NAME = "relations_cache"  # a state store document
# A journal no `relations` has folded in for this many rows is left to grow no further (the
# threads it misses are read by that run instead).
JOURNAL_CAP_ROWS = 200_000
# Rows buffered before one short transaction writes them.
JOURNAL_BATCH = 256
# 2: facts hold the normalized first query (`prompt_key`); 3: `links` include title-slug
# thread URLs (protocol §9.4), so facts of format 2 are read again.
CACHE_FORMAT = 3
# A journal line's `parser` stamp (the snapshot keeps format and parser apart): lines
# written by another parser or in another format are skipped.
FACTS_STAMP = f"{RENDERER_VERSION}/{CACHE_FORMAT}"
CONVERSATION_MD = "conversation.md"
Stat = list[int] | None


@dataclass
class Record:
    """One thread directory's facts and the stats of the files they came from."""

    stats: list[Stat]
    facts: ThreadFacts


@dataclass
class _Snapshot:
    """`relations_cache.json` as decoded in one typed pass (see `load_cache`)."""

    format: int
    parser: str
    outputs: dict[str, Any] = field(default_factory=dict)
    threads: dict[str, Record] = field(default_factory=dict)


@dataclass
class _JournalLine:
    rel: str
    parser: str
    stats: list[Stat]
    facts: ThreadFacts


def _record_of(value: Any) -> Record | None:
    """A record from plain JSON (the lenient path); None if it is not one."""
    if not isinstance(value, dict) or not isinstance(value.get("stats"), list):
        return None
    try:
        facts = ThreadFacts.from_json(value["facts"])
    except (KeyError, TypeError, ValueError):
        return None
    stats = value["stats"]
    if not all(s is None or (isinstance(s, list) and all(type(n) is int for n in s))
               for s in stats):  # fmt: skip
        return None
    return Record(stats, facts)


@dataclass
class FactsScan:
    root: Path
    parse: ParseFn
    records: dict[str, Record] = field(default_factory=dict)  # by thread directory
    failures: list[tuple[str, str]] = field(default_factory=list)  # (rel, reason)
    parsed: int = 0  # threads read from their files (the rest came from the cache)
    degraded: int = 0
    # False: the same threads with the same facts as the last run (files may have been
    # rewritten with what they held: a re-export, a re-render), so the graph is as written.
    changed: bool = True
    # The records differ from the cache on disk (new stats, a journal folded in): save it
    # even when the graph need not be rebuilt, or every run would read those threads again.
    dirty: bool = True
    outputs: JSON = field(default_factory=dict)  # the last run's output stamp (see relations)

    def facts(self) -> list[ThreadFacts]:
        """One ThreadFacts per UUID, in path order."""
        by_uuid: dict[str, ThreadFacts] = {}
        for record in self.records.values():
            facts = record.facts
            # Two directories of one thread (its date moved): the one named with the later
            # date is the newer copy.
            held = by_uuid.get(facts.uuid)
            if held is None or _dir_key(facts.rel) > _dir_key(held.rel):
                by_uuid[facts.uuid] = facts
        return sorted(by_uuid.values(), key=lambda f: f.rel)


def _stat(path: str) -> Stat:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _facts_of_conv(conv: Conversation, rel: str, uuid: str, title: str, slug: str) -> ThreadFacts:
    facts = ThreadFacts(uuid=uuid, rel=rel, title=title, space_slug=slug)
    if conv.turns:
        first = conv.turns[0]
        facts.prompt_key = normalize_query(first.query)
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
    from pplx_export.archive.loader import parse_read, read_thread

    try:
        thread = read_thread(root, rel)
    except ThreadUnreadable as exc:
        if exc.missing and exc.file == RAW_ENTRIES and exc.doc is not None:
            return _shell_facts(root, rel, exc.doc)
        raise
    thread.release()
    doc = thread.doc
    uuid = as_str(doc["web_uuid"]).lower()
    title = as_str(doc.get("title"))
    slug = as_str(as_dict(doc.get("space")).get("slug"))
    try:
        conv = parse_read(thread, parse)
    except ThreadUnreadable:
        raise
    except Exception as exc:  # a parser bug on one thread must not cost the graph
        log.debug("relations: parsing %s failed", rel, exc_info=True)
        raise ThreadUnreadable(f"cannot parse: {type(exc).__name__}: {exc}") from None
    stats = [_as_stat(thread.stats.get(name)) for name in (THREAD_JSON, RAW_ENTRIES, RAW_BLOCKS)]
    return _facts_of_conv(conv, rel, uuid, title, slug), [*stats, None]


def _as_stat(stat: tuple[int, int] | None) -> Stat:
    return None if stat is None else [stat[0], stat[1]]


def _shell_facts(root: Path, rel: str, doc: dict[str, Any]) -> tuple[ThreadFacts, list[Stat]]:
    """A thread without raw_entries.json: identity and space from thread.json, mentions
    from conversation.md."""
    base = f"{root}{os.sep}{rel}{os.sep}"
    try:
        text, (size, mtime) = read_with_stat(base + CONVERSATION_MD)
        md_stat: Stat = [size, mtime]
    except FileNotFoundError:
        text, md_stat = b"", None
    except OSError as exc:
        raise ThreadUnreadable(f"{CONVERSATION_MD} unreadable: {exc}") from None
    uuid = as_str(doc["web_uuid"]).lower()
    title = as_str(doc.get("title"))
    slug = as_str(as_dict(doc.get("space")).get("slug"))
    facts = ThreadFacts(uuid=uuid, rel=rel, title=title, space_slug=slug, degraded=True)
    facts.mentions = sorted(bare_uuids(text.decode("utf-8", "replace")))
    return facts, [_stat(base + THREAD_JSON), None, None, md_stat]


def facts_record(root: Path, rel: str, conv: Conversation, doc: JSON) -> JSON:
    """The cache record of a thread just written from `conv` (thread.json `doc` as now on
    disk), for a re-render worker: the facts `read_facts` would find, and the stats the
    next `relations` checks them against."""
    uuid = as_str(doc.get("web_uuid")).lower()
    slug = as_str(as_dict(doc.get("space")).get("slug"))
    facts = _facts_of_conv(conv, rel, uuid, as_str(doc.get("title")), slug)
    return {"stats": _current_stats(root, rel), "facts": facts.to_json()}


class FactsJournal:
    """The re-render's side of the cache: `add` buffers one thread's record, written to the
    journal table in short transactions (never one held while the workers run, who may
    write the store too); `close` writes the rest."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.lines: list[bytes] = []
        self.checked = False
        self.failed = False

    def add(self, rel: str, record: JSON) -> None:
        if self.failed:
            return
        self.lines.append(dumps_compact({"rel": rel, "parser": FACTS_STAMP, **record}))
        if len(self.lines) >= JOURNAL_BATCH:
            self._flush()

    def _flush(self) -> None:
        lines, self.lines = self.lines, []
        if self.failed or not lines:
            return
        try:
            with connect(self.root, write=True) as db:
                assert db is not None
                if not self.checked:
                    self.checked = True
                    (rows,) = db.execute("SELECT count(*) FROM relation_facts_journal").fetchone()
                    if rows > JOURNAL_CAP_ROWS:
                        self.failed = True
                        return
                with transaction(db):
                    db.executemany(
                        "INSERT INTO relation_facts_journal (line) VALUES (?)",
                        ((line,) for line in lines),
                    )
        except OSError as exc:  # derived state: `relations` reads those threads itself
            log.debug("relations journal not written: %s", exc)
            self.failed = True

    def close(self) -> None:
        self._flush()


def journal_lines(root: Path) -> list[bytes]:
    """The journal's lines, oldest first (raises StoreError)."""
    return journal_bytes(root, "relation_facts_journal", "line")


def clear_journal(root: Path) -> None:
    """Forget the journal's lines (folded into the snapshot). Raises StoreError."""
    with connect(Path(root), write=True) as db:
        assert db is not None
        db.execute("DELETE FROM relation_facts_journal")


@dataclass
class Replay:
    """What folding the journal in did: was there one, and did it bring other facts."""

    journal: bool = False
    new_facts: bool = False


def _replay(root: Path, records: dict[str, Record]) -> Replay:
    """Apply the journal's records over `records` (a later line wins). A torn or foreign
    line is skipped: that thread is read again instead."""
    try:
        raw_lines = journal_lines(root)
    except OSError as exc:
        log.info("relations journal unreadable (%s); reading those threads again", exc)
        return Replay(journal=True, new_facts=True)
    if not raw_lines:
        return Replay()
    replay = Replay(journal=True)
    # An intact journal decodes in one typed pass; else line by line, so a torn line (or
    # one of another format) costs only its own thread.
    lines = loads_as(b"[" + b",".join(raw_lines) + b"]", list[_JournalLine])
    if lines is None:
        lines = [line for raw in raw_lines if (line := _journal_line(raw)) is not None]
    for line in lines:
        if line.parser != FACTS_STAMP:
            continue
        held = records.get(line.rel)
        if held is None or held.facts != line.facts:
            replay.new_facts = True
        records[line.rel] = Record(line.stats, line.facts)
    return replay


def _journal_line(raw: bytes) -> _JournalLine | None:
    line = loads_as(raw, _JournalLine)
    if line is not None:
        return line
    try:  # the lenient path (no msgspec, or a line that does not fit the type exactly)
        doc = loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    record = _record_of(doc)
    rel, parser = as_dict(doc).get("rel"), as_dict(doc).get("parser")
    if record is None or not isinstance(rel, str) or not isinstance(parser, str):
        return None
    return _JournalLine(rel, parser, record.stats, record.facts)


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


def _decode_snapshot(data: bytes) -> tuple[dict[str, Record], JSON]:
    """(records, output stamp) of a snapshot; empty when it is of another format or parser.
    Raises ValueError/UnicodeDecodeError when it is not JSON at all."""
    snap = loads_as(data, _Snapshot)
    if snap is None:  # not of the exact type: record by record, keeping the good ones
        doc = as_dict(loads(data))
        found = as_dict(doc.get("threads"))
        snap = _Snapshot(lint(doc.get("format")), as_str(doc.get("parser")),
                         as_dict(doc.get("outputs")))  # fmt: skip
        for rel, value in found.items():
            record = _record_of(value)
            if record is not None:
                snap.threads[rel] = record
    if snap.format != CACHE_FORMAT or snap.parser != RENDERER_VERSION:
        return {}, {}
    return snap.threads, snap.outputs


def load_cache(root: Path) -> tuple[dict[str, Record], JSON, Replay]:
    """The cache's records by thread directory (the snapshot, then the journal's records
    over it), its output stamp, and what the journal did. Anything unreadable (or written
    by another parser version) counts as absent."""
    threads: dict[str, Record] = {}
    outputs: JSON = {}
    try:
        data = load_bytes(root, CACHE_NAME)
        if data is not None:
            threads, outputs = _decode_snapshot(data)
    except (OSError, ValueError, UnicodeDecodeError):
        log.info("relations cache unreadable; rebuilding it")
    journal = _replay(root, threads)
    return threads, outputs, journal


def save_cache(root: Path, records: dict[str, Record], outputs: JSON) -> None:
    snapshot = _Snapshot(CACHE_FORMAT, RENDERER_VERSION, outputs, records)
    # No trailing newline: jsontext.loads decodes a document that ends where the text ends
    # in one C call, and this document is read on every run.
    data = dumps_compact(snapshot)
    try:
        save_bytes(root, CACHE_NAME, data)
        # Folded into the snapshot: the journal's records are in it now.
        clear_journal(root)
    except OSError as exc:  # derived state: the graph is still right without it
        log.warning("could not save %s: %s", CACHE_NAME, exc)


def scan_facts(root: Path, *, parse: ParseFn | None = None, use_cache: bool = True) -> FactsScan:
    """Every thread directory's record, in sorted path order: from the cache when the
    thread's files are unchanged (size and mtime), else read and parsed now."""
    if parse is None:
        from pplx_export.parse import parse_thread

        parse = parse_thread
    cached, outputs, replay = load_cache(root) if use_cache else ({}, {}, Replay())
    scan = FactsScan(root=root, parse=parse, outputs=outputs)
    records = scan.records
    new_facts = 0
    for rel in iter_thread_rels(root, known=cached):
        record = cached.get(rel)
        if record is None or record.stats != _current_stats(root, rel):
            try:
                facts, stats = read_facts(root, rel, parse)
            except ThreadUnreadable as exc:
                scan.failures.append((rel, str(exc)))
                log.warning("relations: skipping %s: %s", rel, exc)
                continue
            scan.parsed += 1
            new_facts += record is None or record.facts != facts
            record = Record(stats, facts)
        records[rel] = record
        scan.degraded += record.facts.degraded
    # No other facts and no directory gone: the graph of the last run. (A thread read again
    # whose facts came out the same changes only the cache's stats.)
    gone = len(records) != len(cached)
    scan.changed = bool(new_facts) or gone or replay.new_facts
    scan.dirty = scan.changed or bool(scan.parsed) or replay.journal
    return scan
