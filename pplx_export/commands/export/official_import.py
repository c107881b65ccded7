"""`import`: Perplexity's own "Export my data" archive as the ground truth (protocol §9.8).

Every conversation of the export is matched to an archived thread (the web UUID of its
first entry; turns by question text, in order) and the audit sorts them: archived and
complete, archived but missing turns, not archived. Unless only auditing, what is missing
is recovered from the export: a thread directory for a conversation the archive lacks
(`thread.json` `source: "official_export"`), the export's copy of the conversation in
`raw_official_export.json` for a thread that lacks turns. The API's files are never
changed; the next `sync` (or `import --fetch`) asks the API for the recovered threads.

The conversations array is streamed (util/jsonstream): memory follows the largest
conversation, not the file.

Long because the audit and the recovery are one pass over the streamed conversations (the
match by first entry UUID and question text decides both), and `--fetch` asks the API about
the threads that pass recovered; `_Recovery`, which writes thread directories the way an
export would, is most of it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from pplx_export.archive.official import OFFICIAL_RAW, read_official_raw, write_official
from pplx_export.archive.paths import find_thread_dirs, safe_folder
from pplx_export.archive.raw import RAW_ENTRIES
from pplx_export.archive.scan import ThreadDirs
from pplx_export.archive.thread_json import OFFICIAL, THREAD_JSON, load_json_dict
from pplx_export.commands.export.import_report import Audited, ImportReport
from pplx_export.context import RunOptions
from pplx_export.errors import (
    ApiError,
    ArchiveError,
    AuthError,
    EntryDeleted,
    EntryExpired,
    NotFound,
    PermissionDenied,
    UsageError,
)
from pplx_export.models import JSON
from pplx_export.parse.official_export import (
    MEMBER_NAME,
    ExportConversation,
    ExportShapeError,
    match_turns,
    missing_entries,
    parse_conversation,
    plain_questions,
    synthetic_plain,
)
from pplx_export.pipeline.relation_facts import FactsJournal, facts_record
from pplx_export.store.batch_state import BatchState
from pplx_export.store.official_state import load_state, save_state
from pplx_export.util.jsonstream import StreamFormatError, iter_array_in_object
from pplx_export.util.jsontext import loads
from pplx_export.util.timefmt import canonical_time, format_utc

log = logging.getLogger(__name__)

TITLE_MAX = 120
TERMINAL = frozenset({"deleted", "expired"})  # what the API said: not asked again
_MB = 1 << 20


# -- reading the file --------------------------------------------------------------------


@contextlib.contextmanager
def open_export(path: Path) -> Iterator[tuple[IO[bytes], int]]:
    """The conversations JSON of `path` (the ZIP Perplexity mails, or the JSON inside it)
    as a byte stream, with its size. A damaged or foreign file is one UsageError line."""
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    if zipfile.is_zipfile(path):
        try:
            zf = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise UsageError(f"{path}: damaged ZIP: {exc}") from exc
        with zf:
            names = [n for n in zf.namelist() if MEMBER_NAME.search(n)]
            if not names:
                raise UsageError(
                    f"{path}: no conversations-<YYYYMMDD>_<HHMMSS>-<hex>.json inside: not a "
                    "Perplexity data export"
                )
            info = zf.getinfo(names[0])
            with zf.open(info) as member:
                yield member, info.file_size
        return
    if path.suffix.lower() == ".zip":
        raise UsageError(f"{path}: damaged ZIP (no ZIP directory found)")
    with path.open("rb") as fh:
        yield fh, os.fstat(fh.fileno()).st_size


def iter_conversations(path: Path, on_bytes: Callable[[int], None] | None = None) -> Iterator[Any]:
    """The export's conversations one at a time, as raw dicts. A file that turns out to be
    damaged midway raises UsageError after the conversations before the damage."""
    with open_export(path) as (stream, _size):
        try:
            yield from iter_array_in_object(stream, "conversations", on_bytes=on_bytes)
        except StreamFormatError as exc:
            raise UsageError(f"{path}: not a readable Perplexity data export: {exc}") from exc
        except (zipfile.BadZipFile, EOFError, OSError) as exc:
            raise UsageError(f"{path}: damaged ZIP: {exc}") from exc


def export_size(path: Path) -> int:
    with open_export(path) as (_stream, size):
        return size


# -- the audit ---------------------------------------------------------------------------


def _archived_dir(root: Path, dirs: ThreadDirs, web_uuid: str) -> Path | None:
    found = find_thread_dirs(root, web_uuid, dirs.named_for(web_uuid))
    return found[0] if found else None


def _archived_questions(directory: Path) -> tuple[list[str], dict[str, Any]]:
    """The thread's questions (the API's, plus those its export copy adds) and its plain."""
    try:
        plain = loads((directory / RAW_ENTRIES).read_bytes())
    except FileNotFoundError:
        plain = {}
    except (OSError, ValueError) as exc:
        raise ArchiveError(f"{directory / RAW_ENTRIES}: unreadable ({exc})") from exc
    plain = plain if isinstance(plain, dict) else {}
    from pplx_export.archive.official import with_official

    merged = with_official(directory, plain)
    return plain_questions(merged), plain


def _thread_source(directory: Path) -> str:
    try:
        doc = load_json_dict((directory / THREAD_JSON).read_text(encoding="utf-8"))
    except OSError:
        return ""
    return str((doc or {}).get("source") or "")


def audit_one(root: Path, dirs: ThreadDirs, conv: ExportConversation) -> Audited:
    directory = _archived_dir(root, dirs, conv.web_uuid)
    # The title is the first question in full (§9.8), pasted documents included: the report
    # keeps a row per conversation, so it keeps the start of it.
    entry = Audited(conv.web_uuid, conv.title[:TITLE_MAX], "not_archived", len(conv.entries))
    if directory is None:
        return entry
    entry.dir = directory.relative_to(root).as_posix()
    entry.source = _thread_source(directory)
    questions, _plain = _archived_questions(directory)
    matches = match_turns(questions, [e.query for e in conv.entries])
    entry.missing = [e.query for e, m in zip(conv.entries, matches, strict=True) if m is None]
    entry.status = "missing_turns" if entry.missing else "complete"
    return entry


# -- recovery ----------------------------------------------------------------------------


class _Recovery:
    """Writes what the audit found missing: one thread at a time, each durable."""

    def __init__(self, opts: RunOptions, dirs: ThreadDirs, skipped: list[tuple[str, str]]) -> None:
        from pplx_export.pipeline.assemble import default_engine

        self.opts = opts
        self.skipped = skipped  # the report's: a thread left alone is said so there
        self.root = opts.out
        self.dirs = dirs
        self.engine = default_engine(opts.flavor)
        self.folder = safe_folder(opts.account.display_name or opts.account.name)
        self.touched: list[str] = []
        self.store = load_state(self.root)
        self.state = BatchState.load(self.root)
        self.facts = FactsJournal(self.root)

    def recover(self, conv: ExportConversation, raw: Any, entry: Audited) -> None:
        """A thread directory from the export alone, as any other thread's."""
        from pplx_export.archive.writer import prepare_thread_dir, write_thread
        from pplx_export.pipeline.assemble import log_variant_hits, render_files

        plain = synthetic_plain(conv)
        row = {
            "title": conv.title,
            "entryUUID": conv.web_uuid,
            "lastUpdated": canonical_time(conv.updated_at),
            "authorUsername": self.opts.account.name,
        }
        parsed = self.engine.parse(
            plain,
            None,
            row,
            web_uuid=conv.web_uuid,
            url="",
            export_via=self.opts.account.name,
            exported_at="",
        )
        parsed.raw_plain = plain
        directory, _ = prepare_thread_dir(
            self.root, parsed, self.folder, dry_run=False, dirs=self.dirs
        )
        directory.mkdir(parents=True, exist_ok=True)
        write_official(directory, raw)  # raw first: the fidelity anchor
        rendered = render_files(self.engine, parsed, self.opts.lang, None, directory)
        result = write_thread(
            self.root,
            parsed,
            rendered,
            account_folder=self.folder,
            source="online",
            dest=directory,
        )
        log_variant_hits(self.root, result, source="online")
        entry.dir = directory.relative_to(self.root).as_posix()
        # The relation facts from the parse at hand, as an export records them.
        self.facts.add(
            entry.dir, facts_record(self.root, entry.dir, parsed, result.thread_doc or {})
        )
        if self.state.get(conv.web_uuid) is None:
            # A directory without a state record is a problem for `verify`; the record
            # says where the thread came from. One the batch left (deleted, expired) stays.
            self.state.mark_ok(
                conv.web_uuid,
                last_updated=row["lastUpdated"],
                title=conv.title,
                dir=entry.dir,
                note="recovered from Perplexity's data export",
            )
        entry.action = "recovered"
        entry.source = OFFICIAL
        self.touched.append(entry.dir)
        self.store.setdefault("recovered", {})[conv.web_uuid] = {
            "dir": entry.dir,
            "title": conv.title[:80],
            "turns": len(conv.entries),
            "imported_at": format_utc(datetime.now(UTC)),
            "api": None,
        }

    def add_turns(self, conv: ExportConversation, raw: Any, entry: Audited) -> None:
        """The export's copy next to the API's files; a re-render merges its extra turns."""
        from pplx_export.commands.rerender.thread import rerender_thread

        directory = self.root / entry.dir
        old = read_official_raw(directory)
        if old is not None and old != raw and not _covers(raw, old):
            self._skip(entry, f"holds another export's copy ({OFFICIAL_RAW}) with other turns")
            return
        plain = _archived_questions(directory)[1]
        if not missing_entries(plain, conv):
            return
        write_official(directory, raw)
        outcome = rerender_thread(self.root, entry.dir, lang=self.opts.lang, engine=self.engine)
        if outcome.status == "failed":
            raise ArchiveError(f"{entry.dir}: {outcome.error}")
        if outcome.relation_facts is not None:
            self.facts.add(entry.dir, outcome.relation_facts)
        entry.action = "turns_added"
        self.touched.append(entry.dir)

    def _skip(self, entry: Audited, why: str) -> None:
        log.warning("thread %s: %s; left as it is", entry.web_uuid, why)
        entry.action = ""
        self.skipped.append((entry.dir or entry.web_uuid, why))

    def finish(self, path: Path, report: ImportReport) -> None:
        from pplx_export.search.index import update_threads

        self.state.compact()
        self.facts.close()
        if self.touched:
            update_threads(self.root, self.touched)
        imports = self.store.setdefault("imports", [])
        imports.append(
            {
                "file": str(path),
                "at": format_utc(datetime.now(UTC)),
                "conversations": report.conversations,
                "recovered": report.recovered,
                "turns_added": report.turns_added,
            }
        )
        del imports[:-20]  # the last twenty are history enough
        save_state(self.root, self.store)


def _covers(new: Any, old: Any) -> bool:
    """Every question of the `old` export copy is in the `new` one (a later export)."""
    try:
        a, b = parse_conversation(old), parse_conversation(new)
    except ExportShapeError:
        return True  # the old copy is unreadable: the new one replaces it
    matches = match_turns([e.query for e in b.entries], [e.query for e in a.entries])
    return all(m is not None for m in matches)


def run_import(
    opts: RunOptions,
    path: Path,
    *,
    audit_only: bool = False,
    on_total: Callable[[int], None] | None = None,
    on_progress: Callable[[], None] | None = None,
) -> ImportReport:
    """Audit the archive against the export at `path`; unless `audit_only`, recover what
    it lacks. `on_total(MB)`/`on_progress()` drive a progress bar, one step per MB read."""
    from pplx_export.store.lock import archive_lock

    report = ImportReport(file=str(path), audit_only=audit_only)
    size = export_size(path)
    if on_total is not None:
        on_total(max(1, -(-size // _MB)))
    counted = [0, 0]  # bytes read, MB reported

    def on_bytes(n: int) -> None:
        counted[0] += n
        while on_progress is not None and counted[0] // _MB > counted[1]:
            counted[1] += 1
            on_progress()

    lock = contextlib.nullcontext() if audit_only else archive_lock(opts.out, opts.held_locks)
    with lock:
        dirs = ThreadDirs.build(opts.out)
        recovery = None if audit_only else _Recovery(opts, dirs, report.skipped)
        seen: set[str] = set()
        try:
            for n, raw in enumerate(iter_conversations(path, on_bytes), 1):
                _one(opts.out, dirs, recovery, raw, n, seen, report)
        except UsageError as exc:
            if not report.conversations:
                raise
            report.error = str(exc)  # what was read before the damage stands
        finally:
            if recovery is not None:
                recovery.finish(path, report)
    return report


def _one(
    root: Path,
    dirs: ThreadDirs,
    recovery: _Recovery | None,
    raw: Any,
    n: int,
    seen: set[str],
    report: ImportReport,
) -> None:
    try:
        conv = parse_conversation(raw)
    except ExportShapeError as exc:
        report.skipped.append((f"conversation {n}", str(exc)))
        return
    if conv.web_uuid in seen:
        report.skipped.append((conv.web_uuid, "listed twice in the export; the first kept"))
        return
    seen.add(conv.web_uuid)
    try:
        entry = audit_one(root, dirs, conv)
    except ArchiveError as exc:
        # One bad thread directory costs that thread, not the import.
        report.skipped.append((conv.web_uuid, str(exc)))
        return
    try:
        if recovery is not None and entry.status == "not_archived":
            recovery.recover(conv, raw, entry)
        elif recovery is not None and entry.status == "missing_turns":
            recovery.add_turns(conv, raw, entry)
    except ArchiveError as exc:
        report.skipped.append((conv.web_uuid, str(exc)))
    finally:
        report.add(entry)  # as the recovery left it


# -- asking the API for recovered threads --------------------------------------------------


@dataclass
class FetchResult:
    asked: int = 0
    upgraded: list[str] = field(default_factory=list)
    still_missing: dict[str, str] = field(default_factory=dict)  # uuid -> what the API said
    failures: list[tuple[str, str]] = field(default_factory=list)

    def to_json(self) -> JSON:
        return {
            "asked": self.asked,
            "upgraded": self.upgraded,
            "not_served": self.still_missing,
            "failed": [{"thread": t, "error": e} for t, e in self.failures],
        }

    def line(self) -> str:
        return (
            f"recovered threads: asked the API for {self.asked}, {len(self.upgraded)} now "
            f"exported in full, {len(self.still_missing)} not served"
            + (f", {len(self.failures)} failed" if self.failures else "")
        )


def fetch_recovered(opts: RunOptions, api: Any) -> FetchResult:
    """Ask the API for every thread recovered from an export that still holds only the
    export's copy; a thread it serves is exported in full over it (its turns the API
    lacks stay, imported). Deleted and expired threads are not asked again."""
    from pplx_export.commands.export.thread import Exporter

    result = FetchResult()
    store = load_state(opts.out)
    recovered: dict[str, Any] = store.get("recovered") or {}
    state = BatchState.load(opts.out)
    todo = []
    for uuid, record in recovered.items():
        if not isinstance(record, dict) or record.get("api") in TERMINAL | {"served"}:
            continue
        if state.status(uuid) in TERMINAL:
            record["api"] = state.status(uuid)  # the batch asked already (it was listed)
            continue
        found = find_thread_dirs(opts.out, uuid)
        if found and _thread_source(found[0]) != OFFICIAL:
            # Listed after all: this run's batch (or an earlier one) exported it in full.
            # (The state alone does not say so: its repair records every directory.)
            record["api"] = "served"
            record["dir"] = found[0].relative_to(opts.out).as_posix()
            continue
        todo.append(uuid)
    if not todo:
        if recovered:
            save_state(opts.out, store)
        return result
    exporter = Exporter.for_run(opts, api, state)
    now = format_utc(datetime.now(UTC))
    try:
        for uuid in todo:
            record = recovered[uuid]
            result.asked += 1
            try:
                directory = exporter.export(uuid)
            except EntryDeleted:
                record["api"] = "deleted"
            except EntryExpired:
                record["api"] = "expired"
            except NotFound:
                record["api"] = "not_found"
            except PermissionDenied:
                record["api"] = "denied"
            except AuthError:
                raise
            except (ApiError, ArchiveError) as exc:
                result.failures.append((uuid, str(exc)))
                continue
            else:
                record["api"] = "served"
                record["dir"] = directory.relative_to(opts.out).as_posix()
                result.upgraded.append(uuid)
            finally:
                record["checked_at"] = now
            if record["api"] != "served":
                result.still_missing[uuid] = str(record["api"])
    finally:
        state.compact()
        save_state(opts.out, store)
    return result


def run_import_command(
    opts: RunOptions, path: Path, *, audit_only: bool = False, fetch: bool = False
) -> ImportReport:
    """`import`: the audit and recovery with a progress bar (one step per MB read), then,
    with `fetch`, the API asked for the recovered threads."""
    from pplx_export.progress import progress_reporter

    with progress_reporter("import", quiet=opts.quiet, enabled=opts.progress, unit="MB") as bar:
        report = run_import(
            opts, path, audit_only=audit_only, on_total=bar.set_total, on_progress=bar.advance
        )
    if fetch:
        from pplx_export.site.session import open_session
        from pplx_export.store.lock import archive_lock

        with open_session(opts) as api, archive_lock(opts.out, opts.held_locks):
            fetched = fetch_recovered(opts, api)
        report.fetch = {**fetched.to_json(), "line": fetched.line()}
    return report
