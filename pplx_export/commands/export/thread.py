"""Export one thread online: fetch -> parse -> download -> write -> mark done (App. A).

The order matters for crash safety: state says `ok` only after every file of the thread is
on disk (thread.json last), so a process killed anywhere in here leaves the thread "not
done" and the next run simply exports it again.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pplx_export.archive import history
from pplx_export.archive.paths import safe_folder
from pplx_export.archive.scan import ThreadDirs
from pplx_export.archive.sweep import sweep_temp_files, sweep_unfinished_dirs
from pplx_export.archive.writer import prepare_thread_dir
from pplx_export.commands.export.official_merge import with_imported_turns
from pplx_export.config import Account
from pplx_export.context import RunOptions
from pplx_export.errors import SchemaError
from pplx_export.models import JSON, Conversation
from pplx_export.parse import needs_blocks
from pplx_export.parse.interruptions import WORKFLOW_NOTE
from pplx_export.parse.losses import LOSS_NOTE
from pplx_export.pipeline.after_write import after_write
from pplx_export.pipeline.assemble import Engine, default_engine
from pplx_export.pipeline.fetch_assets import fetch_and_export
from pplx_export.pipeline.relation_facts import FactsJournal
from pplx_export.search.index import index_written
from pplx_export.search.pending import note_pending
from pplx_export.site.api import PerplexityAPI
from pplx_export.site.thread import IncompleteThread
from pplx_export.store.batch_state import BatchState
from pplx_export.store.render_state import RenderState
from pplx_export.util.timefmt import format_utc

log = logging.getLogger(__name__)


@dataclass
class Exporter:
    """Everything one account's exports share during a command run."""

    api: PerplexityAPI
    root: Path
    account: Account
    lang: str
    state: BatchState
    accounts: Mapping[str, Account] = field(default_factory=dict)
    engine: Engine = field(default_factory=default_engine)
    variant_hits: int = 0
    # The archive's directories by uuid8, listed at the first export of the run.
    dirs: ThreadDirs | None = None
    # The render fingerprints of what this run wrote (the store's `rendered` table), opened
    # at the first export: the next `re-render --changed-only` then skips those threads
    # instead of rendering them again.
    rendered: RenderState | None = None
    # Threads with losses or unknown shapes, in export order: (web uuid, url, with losses,
    # with unknown shapes). The run's summary names the first (pipeline/capture_hint.py).
    drifted: list[tuple[str, str, bool, bool]] = field(default_factory=list)

    @classmethod
    def for_run(cls, opts: RunOptions, api: PerplexityAPI, state: BatchState) -> Exporter:
        """The exporter of a command run: its archive, account, language, flavor, accounts."""
        return cls(
            api=api,
            root=opts.out,
            account=opts.account,
            lang=opts.lang,
            state=state,
            accounts=opts.config.accounts,
            engine=default_engine(opts.flavor),
        )

    def folder_for(self, author: str) -> str:
        """protocol §6.1: the author's display name from the account registry, else the name.

        A thread shared through a space may have another author than the exporting account;
        it is filed under that author.
        """
        known = self.accounts.get(author)
        if known is None and author == self.account.name:
            known = self.account
        name = (known.display_name if known else "") or author or "unknown"
        return safe_folder(name)

    def export(self, web_uuid: str, row: Mapping[str, Any] | None = None, url: str = "") -> Path:
        """Fetch, parse, download and write one thread, then mark it ok. Returns its dir."""
        now = datetime.now(UTC)
        row = dict(row) if row else None
        plain = _require_entries(self.api.thread(web_uuid), web_uuid, "plain")
        blocks, incomplete = (
            self._schematized(web_uuid) if needs_blocks(plain, row, url) else (None, "")
        )

        def parse(entries: dict[str, Any]) -> Conversation:
            """The thread parsed from `entries` (the plain answer, or it merged with the
            data export's turns)."""
            return self.engine.parse(
                entries,
                blocks,
                row,
                web_uuid=web_uuid,
                url=url,
                export_via=self.account.name,
                exported_at=format_utc(now),
            )

        conv = parse(plain)
        _log_parse_notes(web_uuid, conv.warnings)
        drift = conv.drift.counts
        if drift:
            log.info("thread %s: unknown shapes: %s", web_uuid[:8], ", ".join(sorted(drift)))
        if drift or conv.losses:
            self.drifted.append((web_uuid, conv.url, bool(conv.losses), bool(drift)))
        folder = self.folder_for(conv.author)
        if self.dirs is None:
            self.dirs = ThreadDirs.build(self.root)  # once per run, kept current from here
        directory, _merged = prepare_thread_dir(
            self.root, conv, folder, dry_run=False, dirs=self.dirs
        )
        sweep_temp_files(directory)
        sweep_unfinished_dirs(self.root, web_uuid, directory, self.dirs)
        conv = with_imported_turns(
            parse,
            conv,
            plain,
            directory,
        )
        result = fetch_and_export(
            self.api,
            self.root,
            conv,
            directory,
            account_folder=folder,
            lang=self.lang,
            engine=self.engine,
        )
        self.variant_hits += len(result.variant_hits)
        rel = directory.relative_to(self.root).as_posix()
        # Derived records first, then the thread counts as done: a kill in between costs
        # one fetch again, never a thread that is ok and unsearchable for good (a failed
        # index update is repaired at the end of the run, `repair_index`). All come from
        # the parse at hand: nothing just written is read back.
        derived = after_write(
            self.root,
            rel,
            conv,
            result,
            engine=self.engine,
            lang=self.lang,
            doc=result.thread_doc or {},
            digests=result.digests,
            stats=result.stats,
            indexed="",
            strict=False,
        )
        self._record_render(rel, derived.fingerprint)
        if index_written(self.root, rel, derived.index_rows).error:  # search index
            # Repaired at the end of this run or the next (search.index.repair_missing).
            note_pending(self.root, rel)
        # `relations` then reads nothing of what a batch exported.
        if derived.relation_facts is not None:
            facts = FactsJournal(self.root)
            facts.add(rel, derived.relation_facts)
            facts.close()
        self.state.mark_ok(
            web_uuid,
            last_updated=conv.last_updated,
            title=conv.title,
            dir=rel,
            now=now,
            note=incomplete,
            losses=len(conv.losses),
            versions=len(history.entries_of(result.thread_doc)),
        )
        return directory

    def _record_render(self, rel: str, record: JSON | None) -> None:
        """Record what the thread was rendered from (`after_write`'s fingerprint), as
        `re-render` records it (the same renderer writes the same bytes online and
        offline). Only a cache: a failure here costs the next `--changed-only` one render
        of this thread, so it is not an error."""
        if record is None:
            return
        try:
            if self.rendered is None:
                self.rendered = RenderState.load(self.root)
            self.rendered.record(rel, record)
            self.rendered.flush()  # one small commit: the cost is this thread's, not the archive's
        except (OSError, sqlite3.Error) as exc:
            log.debug("render fingerprint of %s not recorded: %s", rel, exc)

    def _schematized(self, web_uuid: str) -> tuple[dict[str, Any], str]:
        """The schematized thread, and a note when its listing ended early.

        The plain listing is complete by now (it raises otherwise) and holds every turn, so a
        schematized listing that stops short keeps what it gave, flagged in the state (and
        for `verify`) instead of failing the whole thread.
        """
        try:
            return (
                _require_entries(self.api.thread_schematized(web_uuid), web_uuid, "schematized"),
                "",
            )
        except IncompleteThread as exc:
            log.warning("thread %s: %s; kept what it gave, flagged", web_uuid, exc)
            return _require_entries(exc.partial, web_uuid, "schematized"), f"incomplete: {exc}"


def _log_parse_notes(web_uuid: str, notes: list[str]) -> None:
    """The parser's notes, once each. A workflow that did not complete (interrupted,
    canceled, awaiting input) is routine and recorded in thread.json, so it shows at -v
    only; anything else the parser had to work around is shown."""
    for note in dict.fromkeys(notes):
        level = logging.DEBUG if note.startswith(WORKFLOW_NOTE) else logging.INFO
        if note.startswith(LOSS_NOTE):
            level = logging.WARNING  # an answer or sources the archive would not show
        log.log(level, "thread %s: %s", web_uuid[:8], note)


def _require_entries(doc: dict[str, Any], web_uuid: str, flavor: str) -> dict[str, Any]:
    """Refuse a thread answer without a single entry.

    A listed thread always has a turn, so such an answer is a glitch; writing it would
    replace the raw files of an earlier export with nothing and mark the thread done. The
    thread fails instead (state `error`, the earlier export untouched) and is retried.
    """
    entries = doc.get("entries")
    if not isinstance(entries, list) or not any(isinstance(e, dict) for e in entries):
        raise SchemaError(
            f"{flavor} thread answer has no entries", thread=web_uuid, path="$.entries"
        )
    return doc
