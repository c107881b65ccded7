"""Keeping `index/search.sqlite` current: update changed threads, or rebuild from the archive.

A thread is indexed from its files, by the same parser as re-render: thread.json,
raw_entries.json, raw_blocks.json and the report body. Its row records a `signature`:
`<size and mtime of those files>#<digest of their content>`. A thread whose files still
match the first part is skipped without being read, so a hook called for every thread of
a no-op run costs a few stats each; one whose files were only touched (a copy, a restore,
a checkout: new mtimes, same bytes) matches the second part and is only re-signed. One transaction
per call (per chunk of threads for `IndexUpdater`): a reader sees a chunk whole or not at all.

`rebuild` writes a new database next to the old one and renames it over it, so a search
running meanwhile reads the old file to the end. The hooks (`update_threads`,
`IndexUpdater`) never raise: the index is derived data, and an export must not fail
because of it. A missing database is built from the archive; a damaged one, or one of
another schema version, is rebuilt with a warning.

Long because the row insert, the update hooks (`update_threads`, `IndexUpdater`), the
rebuild and the coverage and repair checks share one notion of a thread's signature and one
transaction discipline over one database: split, the rule for when a stored row is current
would live in several places.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sqlite3
import tempfile
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from pplx_export.errors import ThreadUnreadable
from pplx_export.models import JSON, Conversation
from pplx_export.search.extract import ThreadRow, thread_row
from pplx_export.search.pending import clear_pending, pending_rels
from pplx_export.search.schema import (
    FTS_TABLES,
    SCHEMA_VERSION,
    connect_ro,
    connect_rw,
    create_schema,
    db_path,
    schema_version,
    trigger_ddl,
)
from pplx_export.util.atomic import TEMP_PREFIX, read_with_stat

# Earlier versions of a thread live in `<thread dir>/history/<stamp>/` (archive/history.py).
HISTORY_DIR = "history"

log = logging.getLogger(__name__)

THREAD_JSON = "thread.json"
RAW_ENTRIES = "raw_entries.json"
RAW_BLOCKS = "raw_blocks.json"
REPORT_BODY = "assets/report_body.md"
REPORT_MD = "report.md"
# The original of a rewritten answer, saved by hand beside the thread's pages (§5.8).
VARIANT_MD = "rewritten_answer_variant.md"
# The files a thread's rows are computed from, in signature order.
INPUTS = (THREAD_JSON, RAW_ENTRIES, RAW_BLOCKS, REPORT_BODY, VARIANT_MD)
# Top-level folders of the archive that hold no threads (archive/paths.py RESERVED_TOP).
RESERVED_TOP = frozenset({"index", "relations", "spaces"})
# Bumped when the rows extracted from a thread change: every signature then differs.
EXTRACT_VERSION = "2"  # 2: the hand-archived rewritten answer
# Threads per transaction in IndexUpdater. The parent holds a chunk's rows (the text of
# every turn, step and source) until it writes them: at 200, a first render of 6,000
# corpus threads peaked at 80 MiB in the parent, at 50 at 60 MiB, for 1-2% more CPU.
CHUNK = 50
# Directories per signature query (SQLite allows 999 parameters before 3.32).
_LOOKUP_BATCH = 500
# `rebuild` workers: one per idle CPU (workers.auto_jobs), at most MAX_JOBS, each with
# MIN_SHARE threads or more (starting one costs about what parsing a few dozen threads does).
MAX_JOBS = 8
MIN_SHARE = 64


@dataclass
class IndexStats:
    indexed: int = 0
    unchanged: int = 0
    removed: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    rebuilt: bool = False
    error: str = ""  # the index could not be updated at all

    def merge(self, other: IndexStats) -> None:
        self.indexed += other.indexed
        self.unchanged += other.unchanged
        self.removed += other.removed
        self.failed.extend(other.failed)
        self.rebuilt = self.rebuilt or other.rebuilt
        self.error = other.error or self.error

    def to_json(self) -> dict[str, Any]:
        return {
            "indexed": self.indexed,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "failed": [{"dir": d, "reason": r} for d, r in self.failed],
            "rebuilt": self.rebuilt,
            "error": self.error or None,
        }


class IndexDamaged(Exception):
    """The database exists but cannot be used (not a database, damaged, other schema)."""


# ------------------------------------------------------------------ reading a thread


def thread_rels(root: Path) -> list[str]:
    """`<account>/<mode>/<dir>` of every directory holding a thread.json, sorted."""
    found: list[str] = []

    def subdirs(path: str) -> list[str]:
        try:
            with os.scandir(path) as it:
                return sorted(e.name for e in it if e.is_dir() and not e.name.startswith("."))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return []

    base = str(root)
    for account in subdirs(base):
        if account in RESERVED_TOP:
            continue
        for mode in subdirs(os.path.join(base, account)):
            for name in subdirs(os.path.join(base, account, mode)):
                rel = f"{account}/{mode}/{name}"
                if os.path.isfile(os.path.join(base, rel, THREAD_JSON)):
                    found.append(rel)
    return found


def _stamp(stat: tuple[int, int] | None) -> str:
    return "-" if stat is None else f"{stat[0]}:{stat[1]}"


def signature(root: Path, rel: str) -> str | None:
    """What the thread's input files look like now; None without a thread.json."""
    base = os.path.join(root, rel)
    parts = [EXTRACT_VERSION]
    for name in INPUTS:
        try:
            st = os.stat(os.path.join(base, name))
        except OSError:
            if name == THREAD_JSON:
                return None
            parts.append("-")
            continue
        parts.append(_stamp((st.st_size, st.st_mtime_ns)))
    return "|".join(parts)


def files_part(stored: str) -> str:
    """The stat part of a stored signature (what `signature` computes)."""
    return stored.partition("#")[0]


def content_digest(digests: Mapping[str, str], body_stamp: str) -> str:
    """The content part of a signature: the sha256 of thread.json and the raw files (as
    `digests` gives them by file name) and the report body's stamp. "" when one is unknown
    (then no signature is ever taken as proof of unchanged content)."""
    try:
        parts = [EXTRACT_VERSION, digests[THREAD_JSON], digests[RAW_ENTRIES]]
    except KeyError:
        return ""
    parts += [digests.get(RAW_BLOCKS, "-"), body_stamp]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:32]


def load_thread(root: Path, rel: str) -> tuple[ThreadRow, str]:
    """The index rows of one thread directory and its signature (as of what was read).
    Raises ThreadUnreadable (`gone` when thread.json is gone)."""
    from pplx_export.archive.loader import parse_read, read_thread

    thread = read_thread(root, rel)
    digests = thread.digests()
    thread.release()  # digested: the parse does not need the bytes
    conv = parse_read(thread)
    base = os.path.join(root, rel)
    body, body_stat = _report_body(base, conv)
    variant, variant_stat = _variant_text(base)
    read = thread.stats
    stats = (read.get(THREAD_JSON), read.get(RAW_ENTRIES), read.get(RAW_BLOCKS))
    sig = "|".join([EXTRACT_VERSION, *(_stamp(s) for s in (*stats, body_stat, variant_stat))])
    sig += "#" + content_digest(digests, f"{_stamp(body_stat)}|{_stamp(variant_stat)}")
    return thread_row(conv, thread.doc, rel, body, variant), sig


def _variant_text(base: str) -> tuple[str | None, tuple[int, int] | None]:
    """The hand-archived original of a rewritten answer and its stat (None, None: none)."""
    try:
        data, stat = read_with_stat(os.path.join(base, VARIANT_MD))
    except OSError:
        return None, None
    return data.decode("utf-8", errors="replace"), stat


def _report_body(base: str, conv: Conversation) -> tuple[str | None, tuple[int, int] | None]:
    """The report text the index holds (the stored body, else report.md) and the stat of
    `assets/report_body.md` for the signature."""
    body: str | None = None
    body_stat: tuple[int, int] | None = None
    if conv.report is not None:
        for name in (REPORT_BODY, REPORT_MD):
            try:
                data, stat = read_with_stat(os.path.join(base, name))
            except OSError:
                continue
            body = data.decode("utf-8", errors="replace")
            if name == REPORT_BODY:
                body_stat = stat
            break
    if body_stat is None:
        with contextlib.suppress(OSError):
            st = os.stat(os.path.join(base, REPORT_BODY))
            body_stat = (st.st_size, st.st_mtime_ns)
    return body, body_stat


# What a re-render worker hands over for one thread: its rows and new signature, or (None,
# signature) when the rows stored are still right and only the signature changes.
Fresh = tuple["ThreadRow | None", str]


def fresh_rows(
    root: Path,
    rel: str,
    conv: Conversation,
    doc: JSON,
    indexed: str,
    digests: Mapping[str, str],
) -> Fresh | None:
    """For a re-render worker that has just written directory `rel` from `conv` (and
    thread.json `doc`, as now on disk; `digests`: sha256 of thread.json and the raw files
    as now on disk): what the index needs, or None when the signature it holds (`indexed`,
    "" for none) is still current. The rows are what `load_thread` would read back,
    without reading and parsing the thread again; files that were only touched cost no
    rows at all."""
    files = signature(root, rel)
    if files is None or files == files_part(indexed):
        return None
    content = content_digest(digests, "|".join(files.split("|")[-2:]))
    sig = f"{files}#{content}"
    if content and content == indexed.partition("#")[2]:
        return None, sig
    body, _ = _report_body(os.path.join(root, rel), conv)
    variant, _ = _variant_text(os.path.join(root, rel))
    return thread_row(conv, doc, rel, body, variant), sig


# ------------------------------------------------------------------ writing rows


def _delete(conn: sqlite3.Connection, *, uuid: str = "", rel: str = "") -> int:
    ids = [
        r[0] for r in conn.execute("SELECT id FROM threads WHERE uuid = ? OR dir = ?", (uuid, rel))
    ]
    for thread_id in ids:
        for table in ("turns", "sources", "reports"):
            conn.execute(f"DELETE FROM {table} WHERE thread_id = ?", (thread_id,))
        conn.execute("DELETE FROM threads WHERE id = ?", (thread_id,))
    return len(ids)


def _insert(conn: sqlite3.Connection, row: ThreadRow, sig: str) -> None:
    cur = conn.execute(
        "INSERT INTO threads(uuid, dir, account, author, export_via, mode, title, space,"
        " space_title, date, updated, url, n_turns, signature)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            row.uuid,
            row.dir,
            row.account,
            row.author,
            row.export_via,
            row.mode,
            row.title,
            row.space,
            row.space_title,
            row.date,
            row.updated,
            row.url,
            len(row.turns),
            sig,
        ),
    )
    thread_id = cur.lastrowid
    conn.executemany(
        "INSERT INTO turns(thread_id, turn, file, query, answer, work, agents, council)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (thread_id, t.turn, t.file, t.query, t.answer, t.work, t.agents, t.council)
            for t in row.turns
        ],
    )
    conn.executemany(
        "INSERT INTO sources(thread_id, turn, title, url) VALUES (?, ?, ?, ?)",
        [(thread_id, s.turn, s.title, s.url) for s in row.sources],
    )
    if row.report is not None:
        conn.execute(
            "INSERT INTO reports(thread_id, file, title, body) VALUES (?, ?, ?, ?)",
            (thread_id, row.report.file, row.report.title, row.report.body),
        )


def _index_one(conn: sqlite3.Connection, root: Path, rel: str, stats: IndexStats) -> None:
    sig = signature(root, rel)
    known = conn.execute("SELECT signature FROM threads WHERE dir = ?", (rel,)).fetchone()
    if sig is None:  # the directory is gone (merged into a newer one, deleted by hand)
        stats.removed += _delete(conn, rel=rel)
        return
    if known is not None and files_part(known[0]) == sig:
        stats.unchanged += 1
        return
    try:
        row, sig = load_thread(root, rel)
    except ThreadUnreadable as exc:
        if exc.gone:
            stats.removed += _delete(conn, rel=rel)
            return
        # No stale hits for a thread that cannot be read now.
        _delete(conn, rel=rel)
        stats.failed.append((rel, str(exc)))
        return
    _delete(conn, uuid=row.uuid, rel=rel)
    _insert(conn, row, sig)
    stats.indexed += 1


# ------------------------------------------------------------------ opening


def open_for_update(root: Path) -> sqlite3.Connection:
    """The database, checked; IndexDamaged when it must be rebuilt (FileNotFoundError when
    there is none)."""
    path = db_path(root)
    if not path.is_file():
        raise FileNotFoundError(path)
    try:
        conn = connect_rw(path)
    except sqlite3.DatabaseError as exc:  # its pragmas already read the header
        raise IndexDamaged(str(exc)) from exc
    try:
        version = schema_version(conn)
        if version != SCHEMA_VERSION:
            raise IndexDamaged(
                "not a pplx-export search index"
                if version is None
                else f"schema version {version}, this version writes {SCHEMA_VERSION}"
            )
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise IndexDamaged(str(exc)) from exc
    except IndexDamaged:
        conn.close()
        raise
    return conn


def update_threads(root: Path, rels: Iterable[str], *, jobs: int = 1) -> IndexStats:
    """Re-index the threads in directories `rels` (relative to `root`) whose files changed,
    in one transaction; drop the rows of directories that are gone. Never raises.

    Without a database, one is built from the whole archive; a damaged one is rebuilt. That
    build runs in this process unless `jobs` says otherwise: a hook may be called where
    other threads run (a progress bar's, the demo's emulator), and forking then is unsafe."""
    return _update(Path(root), [(rel, None) for rel in rels], jobs=jobs)


def index_written(root: Path, rel: str, rows: Fresh | None) -> IndexStats:
    """The export hook: `update_threads` for the thread just written to `rel`, with the rows
    `fresh_rows` computed from the Conversation at hand (None: read the files, the slow
    way). Never raises."""
    return _update(Path(root), [(rel, rows)], jobs=1)


Pending = list[tuple[str, "Fresh | None"]]  # (directory, what a worker found, if any)


_RESIGN = "UPDATE threads SET signature = ? WHERE dir = ?"


def _update(root: Path, pending: Pending, *, jobs: int) -> IndexStats:
    """`update_threads`, where some threads come with their rows computed already."""
    try:
        built: IndexStats | None = None
        try:
            conn = open_for_update(root)
        except (FileNotFoundError, IndexDamaged) as exc:
            if isinstance(exc, IndexDamaged):
                log.warning("search index %s is unusable (%s); rebuilding it", db_path(root), exc)
            else:
                log.info("search index: building %s from the archive", db_path(root))
            # Threads whose rows are at hand are not read and parsed again by the build:
            # they go into the new index below.
            known = {rel for rel, fresh in pending if fresh is not None and fresh[0] is not None}
            built = rebuild(root, jobs=jobs, skip=known)
            if not known:
                return built
            pending = [(rel, fresh) for rel, fresh in pending if rel in known]
            conn = open_for_update(root)
        stats = IndexStats()
        try:
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                for rel, fresh in pending:
                    row, sig = fresh if fresh is not None else (None, "")
                    if row is not None:
                        _delete(conn, uuid=row.uuid, rel=rel)
                        _insert(conn, row, sig)
                        stats.indexed += 1
                    elif sig and conn.execute(_RESIGN, (sig, rel)).rowcount:
                        stats.unchanged += 1  # same content: only the signature changes
                    else:
                        _index_one(conn, root, rel, stats)
        finally:
            conn.close()
    except (sqlite3.Error, OSError) as exc:
        if _disk_full(exc):
            from pplx_export.errors import DiskFull

            log.warning("search index not updated: %s", DiskFull(str(db_path(root))))
        else:
            log.warning(
                "search index not updated (%s); `pplx-export search --rebuild` rebuilds it", exc
            )
        return IndexStats(error=str(exc))
    for rel, reason in stats.failed:
        log.debug("search index: %s not indexed: %s", rel, reason)
    if built is not None:
        built.merge(stats)
        return built
    return stats


def _disk_full(exc: BaseException) -> bool:
    """ENOSPC/EDQUOT, or SQLite's SQLITE_FULL ("database or disk is full")."""
    if isinstance(exc, OSError):
        import errno

        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    code = getattr(exc, "sqlite_errorcode", None)
    return (isinstance(code, int) and code & 0xFF == 13) or "disk is full" in str(exc)


class IndexUpdater:
    """`update_threads` fed one thread at a time, one transaction per `chunk` threads, for a
    long run (re-render): `add(rel)` for each thread written, `close()` at the end.

    `signatures(rels)` gives the signature the index holds for each directory (when
    `usable()`), so that re-render workers, which have the thread parsed already, compute
    the rows of a thread whose files changed (`fresh_rows`) and hand them to
    `add(rel, rows)`: this process then only writes them. A thread handed as `fresh` is
    current and costs nothing; one handed with neither is checked and, if need be, read
    again here.

    Without a usable database the threads are not indexed one by one: `close()` builds the
    index from the whole archive once the run is over (not while its workers still share
    the CPUs). A run interrupted before `close()` leaves the index behind what it wrote;
    those threads' files changed, so the next update re-indexes them. `enabled=False` (a
    dry run) does nothing. Never raises."""

    def __init__(self, root: Path, *, enabled: bool = True, chunk: int = CHUNK) -> None:
        self.root = Path(root)
        self.enabled = enabled
        self.chunk = chunk
        self.pending: Pending = []
        self.stats = IndexStats()
        self.build_at_close = False
        self.created = False
        self._reader: sqlite3.Connection | None = None  # for `signatures`, from `usable`

    def usable(self) -> bool:
        """True when the index can be updated thread by thread, and so workers should
        compute the rows of the threads whose signature (`signatures`) is not current;
        False when there is no usable index (it is then built at `close()`, and workers
        need not compute rows). Without a database an empty one is made now: the run's
        workers then compute every thread's rows from the parse they do anyway, and
        nothing is parsed twice."""
        if not self.enabled:
            return False
        try:
            conn = open_for_update(self.root)
        except FileNotFoundError:
            try:
                create_empty(self.root)
            except (sqlite3.Error, OSError) as exc:
                log.debug("search index: no empty database made (%s)", exc)
                self.build_at_close = True
                return False
            log.info("search index: building %s as the threads are rendered", db_path(self.root))
            self.created = True
            return True
        except (IndexDamaged, sqlite3.Error, OSError):
            self.build_at_close = True
            return False
        self._reader = conn
        return True

    def signatures(self, rels: Sequence[str]) -> dict[str, str]:
        """Directory -> the signature the index holds, for the directories `rels` (those it
        does not hold are left out). Asked per batch of work as it is handed out, not for
        the whole archive at once: 50,000 signatures held for a run cost ~18 MB. Each query
        is a short read of its own (the writes of `add` go through other connections). A
        failed lookup gives {}: the workers then compute those threads' rows, which is
        more work, never a wrong index."""
        conn = self._reader
        if conn is None or not rels:
            return {}
        out: dict[str, str] = {}
        try:
            for i in range(0, len(rels), _LOOKUP_BATCH):
                batch = list(rels[i : i + _LOOKUP_BATCH])
                marks = ",".join("?" * len(batch))
                query = f"SELECT dir, signature FROM threads WHERE dir IN ({marks})"
                out.update((str(d), str(sig)) for d, sig in conn.execute(query, batch))
        except sqlite3.Error as exc:
            log.debug("search index: signatures not read (%s)", exc)
            return {}
        return out

    def add(self, rel: str, rows: Fresh | None = None, *, fresh: bool = False) -> None:
        if not self.enabled or self.build_at_close or fresh:
            return
        self.pending.append((rel, rows))
        if len(self.pending) >= self.chunk:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        pending, self.pending = self.pending, []
        try:
            conn = open_for_update(self.root)
        except (FileNotFoundError, IndexDamaged, sqlite3.Error, OSError):
            self.build_at_close = True
            return
        conn.close()
        self.stats.merge(_update(self.root, pending, jobs=1))

    def close(self) -> IndexStats:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if not self.enabled:
            return self.stats
        self.flush()
        if self.created:
            self.created = False
            _optimize(self.root)
        if self.build_at_close:
            self.build_at_close = False
            # Builds (or rebuilds) it; the run's own workers are done, its progress bar
            # redraws without a thread (commands/rerender/run.py), so workers may fork.
            self.stats.merge(update_threads(self.root, [], jobs=0))
        return self.stats


def _optimize(root: Path) -> None:
    """Merge each FTS table into one segment (smaller, faster to query) after a run that
    filled a new index row by row. Never raises: an unmerged index still answers."""
    try:
        conn = open_for_update(root)
    except (FileNotFoundError, IndexDamaged, sqlite3.Error, OSError):
        return
    try:
        for table in FTS_TABLES:
            conn.execute(f"INSERT INTO {table}_fts({table}_fts) VALUES ('optimize')")
    except sqlite3.Error as exc:
        log.debug("search index not optimised: %s", exc)
    finally:
        conn.close()


# ------------------------------------------------------------------ rebuilding


def create_empty(root: Path, *, now: datetime | None = None) -> None:
    """An empty index (schema and triggers), put in place whole: what a first re-render
    then fills thread by thread."""
    index_dir = Path(root) / "index"
    index_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".sqlite", dir=index_dir)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        conn = sqlite3.connect(str(tmp), isolation_level=None)
        try:
            create_schema(conn)
            stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
            conn.execute("INSERT INTO meta(key, value) VALUES ('built_at', ?)", (stamp,))
        finally:
            conn.close()
        os.replace(tmp, db_path(root))
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


Loaded = tuple[ThreadRow, str] | str | None  # rows and signature | why not | gone


def _load(root: Path, rel: str) -> Loaded:
    try:
        return load_thread(root, rel)
    except ThreadUnreadable as exc:
        return None if exc.gone else str(exc)
    except Exception as exc:
        # A parser bug on one thread must not cost the index the other thousands.
        log.debug("indexing %s crashed", rel, exc_info=True)
        return f"{type(exc).__name__}: {exc}"


def _load_all(root: Path, rels: list[str], jobs: int) -> Iterator[tuple[str, Loaded]]:
    """Every thread's rows, in `rels` order; parsed in worker processes when it pays."""
    from pplx_export.workers import auto_jobs, ordered_map

    if jobs == 0:
        jobs = auto_jobs(len(rels), most=MAX_JOBS, share=MIN_SHARE)
    if min(jobs, len(rels)) > 1:
        # Before the fork: the workers start with the parser imported.
        import pplx_export.parse  # noqa: F401
    load = partial(_load_pair, root)
    yield from ordered_map(load, rels, len(rels), jobs=jobs)


def _load_pair(root: Path, rel: str) -> tuple[str, Loaded]:
    return rel, _load(root, rel)


def rebuild(
    root: Path,
    *,
    on_total: Callable[[int], None] | None = None,
    on_progress: Callable[[str], None] | None = None,
    now: datetime | None = None,
    jobs: int = 0,
    skip: Collection[str] = (),
) -> IndexStats:
    """Index every thread of the archive into a new database, then put it in place.

    `jobs` worker processes read and parse the threads (0: one per CPU, when there are
    enough threads to pay for starting them); this process writes the database. `skip`:
    directories left out (their caller indexes them next, from rows it has)."""
    root = Path(root)
    rels = [rel for rel in thread_rels(root) if rel not in skip] if skip else thread_rels(root)
    if on_total:
        on_total(len(rels))
    index_dir = root / "index"
    index_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".sqlite", dir=index_dir)
    os.close(fd)
    tmp = Path(tmp_name)
    stats = IndexStats(rebuilt=True)
    try:
        conn = sqlite3.connect(str(tmp), isolation_level=None)
        try:
            # A private file until the rename: no journal needed, nothing to sync twice.
            conn.execute("PRAGMA journal_mode = OFF")
            conn.execute("PRAGMA synchronous = OFF")
            create_schema(conn, triggers=False)
            conn.execute("BEGIN")
            for rel, loaded in _load_all(root, rels, jobs):
                if isinstance(loaded, str):
                    stats.failed.append((rel, loaded))
                elif loaded is not None:
                    row, sig = loaded
                    _delete(conn, uuid=row.uuid)  # one uuid in two directories: the later
                    _insert(conn, row, sig)
                    stats.indexed += 1
                if on_progress:
                    on_progress(rel)
            # The FTS tables are filled from their content tables in one pass each, then
            # merged into one segment (smaller, and faster to query).
            for table in FTS_TABLES:
                conn.execute(f"INSERT INTO {table}_fts({table}_fts) VALUES ('rebuild')")
                conn.execute(f"INSERT INTO {table}_fts({table}_fts) VALUES ('optimize')")
            stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
            conn.execute("INSERT INTO meta(key, value) VALUES ('built_at', ?)", (stamp,))
            conn.execute("COMMIT")
            conn.executescript(trigger_ddl())
            conn.execute("PRAGMA journal_mode = DELETE")
        finally:
            conn.close()
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, db_path(root))
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    for rel, reason in stats.failed:
        log.warning("search index: %s not indexed: %s", root / rel, reason)
    return stats


def coverage(root: Path, rels: Iterable[str]) -> dict[str, str]:
    """For `verify`: each directory's standing in the index, `ok`, `missing` or `stale`
    (its files changed since it was indexed). Raises IndexDamaged / FileNotFoundError."""
    conn = open_for_update(root)
    try:
        known = dict(conn.execute("SELECT dir, signature FROM threads"))
    except sqlite3.DatabaseError as exc:
        raise IndexDamaged(str(exc)) from exc
    finally:
        conn.close()
    out: dict[str, str] = {}
    for rel in rels:
        sig = known.get(rel)
        if sig is None:
            out[rel] = "missing"
        else:
            out[rel] = "ok" if files_part(sig) == signature(root, rel) else "stale"
    return out


def repair_missing(root: Path, rels: Iterable[str]) -> list[str]:
    """Index those of `rels` (directories of threads marked done) the index lacks, and those
    whose update failed (`note_pending`): what a kill or a full disk between a thread's
    export and its indexing left behind, found without a full rebuild. Returns the
    directories indexed. Never raises; without an index there is nothing to repair (the
    next search builds one)."""
    path = db_path(root)
    if not path.is_file():
        clear_pending(root)  # the rebuild will read every thread anyway
        return []
    try:
        conn = connect_ro(path)
        try:
            known = {row[0] for row in conn.execute("SELECT dir FROM threads")}
        finally:
            conn.close()
    except sqlite3.Error as exc:
        log.debug("search index not checked for missing threads: %s", exc)
        return []
    pending = pending_rels(root)
    todo = sorted(
        rel
        for rel in set(rels) | pending
        if (rel not in known or rel in pending) and os.path.isdir(os.path.join(root, rel))
    )
    if todo:
        stats = update_threads(root, todo)
        if stats.error:
            return []
        log.info("search index: %d thread(s) it lacked indexed", len(todo))
    clear_pending(root, pending)
    return todo


# ------------------------------------------------------------------ earlier versions


def history_rels(root: Path) -> list[str]:
    """`<account>/<mode>/<dir>/history/<stamp>` of every earlier version the archive keeps
    (archive/history.py), sorted."""
    found: list[str] = []
    for rel in thread_rels(root):
        try:
            names = sorted(os.listdir(os.path.join(root, rel, HISTORY_DIR)))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for name in names:
            version = f"{rel}/{HISTORY_DIR}/{name}"
            if os.path.isfile(os.path.join(root, version, THREAD_JSON)):
                found.append(version)
    return found


def history_index(root: Path) -> tuple[sqlite3.Connection, IndexStats]:
    """An in-memory index of the earlier versions only, for `search --history`: they are
    few and searched on request, so they never weigh on the index every search reads.
    Each version is indexed under its own directory (a hit's path leads to it)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    create_schema(conn)
    stats = IndexStats()
    for rel in history_rels(root):
        try:
            row, sig = load_thread(root, rel)
        except (ThreadUnreadable, OSError) as exc:
            stats.failed.append((rel, str(exc)))
            continue
        _insert(conn, row, sig)
        stats.indexed += 1
    return conn, stats
