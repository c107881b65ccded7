"""`pplx-export status`: what the archive holds and what the next `batch` would do.

Zero network and read-only: a corrupt index or state file is reported (and the state
rebuilt in memory), never moved or rewritten here; the next `index`/`batch` repairs it.

Detail tiers (`-v` is the shared verbose count), the same in the table and in `--json`:

    0     per account: index size and age, state counts, next batch counts; every thread in
          state `error` with its reason
    -v    + the next batch's to-do list (uuid, title, kind)
    -vv   + the errors' titles and failure times; done threads per archive mode
    -vvv  + every index row with its plan class and state status

Staleness (issue 32): an account whose last successful `sync` (the `sync_runs` document, else
its last index refresh) is older than the schedule's interval plus a day (`STALE_AFTER_S`),
or that was never synced at all, is listed under `stale_accounts` and warned about;
`status --check` then exits 1, for a monitor to call.

Long because gathering the status and printing it follow the same detail tiers, in the table
and in `--json`, and change together; the parts the upkeep commands feed are already apart
(commands/inspect/status_upkeep.py).
"""

from __future__ import annotations

from collections.abc import Callable, Container
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from pplx_export.archive.scan import scan_thread_dirs
from pplx_export.commands.export.listing import FULL_REMINDER_RUNS, read_index_state
from pplx_export.commands.export.plan import make_plan
from pplx_export.commands.inspect.status_upkeep import print_upkeep, upkeep_status
from pplx_export.config import Config
from pplx_export.parse.mode import row_archive_mode
from pplx_export.store.batch_state import BatchState
from pplx_export.store.library_index import (
    LibraryIndex,
    index_path,
    indexed_accounts,
    load_index,
    safe_account_name,
)
from pplx_export.store.official_state import recovered_summary
from pplx_export.store.raw_check import find_damaged
from pplx_export.store.sync_runs import load_runs
from pplx_export.util.lenient import as_str
from pplx_export.util.timefmt import format_utc, parse_time

MODE_ORDER = ("search", "deep-research", "computer", "council", "study")
SCHEDULE_INTERVAL_S = 86400  # `schedule` runs sync once a day
STALE_AFTER_S = SCHEDULE_INTERVAL_S + 86400


def _last_sync(
    acc: dict[str, Any], runs: dict[str, dict[str, str]], now: datetime
) -> dict[str, Any]:
    """When the account last synced successfully, and whether that is too long ago."""
    rec = runs.get(acc["account"], {})
    stamp, source = rec.get("last_ok_at", ""), "sync"
    if not stamp and acc["index"]["age_source"] == "config":
        stamp, source = acc["index"]["extracted_at"], "index"
    moment = parse_time(stamp) if stamp else None
    age = None if moment is None else (now - moment).total_seconds()
    stale = acc["configured"] and (age is None or age > STALE_AFTER_S)
    return {
        "last_ok_at": stamp,
        "source": source if stamp else "",
        "age_seconds": None if age is None else round(age),
        "last_result": rec.get("last_result", ""),
        "stale": bool(stale),
    }


def _accounts(root: Path, config: Config) -> list[str]:
    """Configured accounts first (config order), then accounts known only by an index file."""
    names = list(config.accounts)
    safe = {safe_account_name(name) for name in names}
    names += [name for name in indexed_accounts(root) if name not in safe]
    return names


def _index_age(path: Path, extracted_at: str, now: datetime) -> tuple[str, str, float | None]:
    """(timestamp, source, age in seconds) from the config stamp, else the file's mtime."""
    stamp = parse_time(extracted_at) if extracted_at else None
    if stamp is not None:
        return extracted_at, "config", (now - stamp).total_seconds()
    try:
        mtime = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except OSError:
        return "", "", None
    return format_utc(mtime), "mtime", (now - mtime).total_seconds()


def _row_mode(row: dict[str, Any], disk_modes: dict[str, str]) -> str:
    """The archive mode of a row: the exported thread.json, else the index heuristics."""
    uuid = as_str(row.get("entryUUID"))
    if uuid in disk_modes:
        return disk_modes[uuid]
    return row_archive_mode(row)


def _account_status(
    root: Path,
    config: Config,
    name: str,
    index: LibraryIndex,
    state: BatchState,
    now: datetime,
    verbose: int,
    disk_modes: dict[str, str],
    damaged: Container[str] = frozenset(),
) -> dict[str, Any]:
    path = index_path(root, name)
    idx_state = read_index_state(root, name, config)
    stamp, source, age = _index_age(path, idx_state.extracted_at, now)
    rows = index.threads
    plan = make_plan(rows, state.threads, damaged=damaged)

    state_counts: dict[str, int] = {}
    for row in rows:
        status = state.status(as_str(row.get("entryUUID"))) or "unexported"
        state_counts[status] = state_counts.get(status, 0) + 1

    doc: dict[str, Any] = {
        "account": name,
        "configured": name in config.accounts,
        "index": {
            "path": path.relative_to(root).as_posix(),
            "exists": path.is_file(),
            "corrupt": index.corrupt_copy is not None,
            "threads": len(rows),
            "extracted_at": stamp,
            "age_source": source,
            "age_seconds": None if age is None else round(age),
            "last_full_index_at": idx_state.last_full_index_at,
            "incremental_runs_since_full": idx_state.incremental_runs_since_full,
            "full_index_due": idx_state.incremental_runs_since_full >= FULL_REMINDER_RUNS,
        },
        "state": state_counts,
        "next_batch": {
            key: plan.counts[key]
            for key in ("new", "updated", "done", "expired", "deleted", "early_stopped")
        },
    }
    if plan.skipped:
        doc["next_batch"]["skipped_no_uuid"] = len(plan.skipped)
    if verbose >= 1:
        doc["next_batch"]["todo"] = [
            {"uuid": i.uuid, "title": i.title, "kind": i.kind, "lastUpdated": i.last_updated}
            for i in plan.todo
        ]
    if verbose >= 2:
        done: dict[str, int] = {}
        for row in rows:
            if state.status(as_str(row.get("entryUUID"))) == "ok":
                mode = _row_mode(row, disk_modes)
                done[mode] = done.get(mode, 0) + 1
        doc["done_by_mode"] = dict(sorted(done.items(), key=lambda kv: (_mode_rank(kv[0]), kv[0])))
    if verbose >= 3:
        kinds = {i.uuid: i.kind for i in plan.items}
        kinds.update({i.uuid: "early_stopped" for i in plan.early_stopped})
        doc["threads"] = [
            {
                "uuid": as_str(row.get("entryUUID")),
                "title": as_str(row.get("title")),
                "lastUpdated": as_str(row.get("lastUpdated")),
                "mode": _row_mode(row, disk_modes),
                "state": state.status(as_str(row.get("entryUUID"))),
                "plan": kinds.get(as_str(row.get("entryUUID")), "skipped"),
            }
            for row in rows
        ]
    return doc


def _mode_rank(mode: str) -> int:
    return MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER)


def collect_status(
    root: Path, config: Config, *, now: datetime, verbose: int = 0
) -> dict[str, Any]:
    """The status document (what `status --json` prints). Reads files only."""
    root = Path(root)
    state = BatchState.load(root, repair=False, now=now)
    disk_modes: dict[str, str] = {}
    if verbose >= 2:
        found, _ = scan_thread_dirs(root)
        disk_modes = {uuid: threads[-1].mode for uuid, threads in found.items()}
    indexes = [load_index(root, name, repair=False) for name in _accounts(root, config)]
    damaged = find_damaged(root, state.threads, save=False)
    accounts = [
        _account_status(
            root, config, index.account, index, state, now, verbose, disk_modes, damaged
        )
        for index in indexes
    ]
    indexed = {as_str(row.get("entryUUID")) for index in indexes for row in index.threads}
    # Archived threads no index lists (an archive of the earlier tool, or one whose account
    # is not configured here), by the folder they are filed in: without them such an
    # archive's status is an empty table.
    unindexed: dict[str, int] = {}
    for uuid, record in state.threads.items():
        if uuid not in indexed:
            folder = as_str(record.get("dir")).partition("/")[0]
            unindexed[folder] = unindexed.get(folder, 0) + 1
    errors = []
    for uuid, record in sorted(state.threads.items()):
        if as_str(record.get("status")) != "error":
            continue
        entry = {"uuid": uuid, "error": as_str(record.get("error"))}
        if verbose >= 2:
            entry["title"] = as_str(record.get("title"))
            entry["failed_at"] = as_str(record.get("failed_at"))
        errors.append(entry)
    # Threads that lost content to a shape the parser did not read (§9.1), as recorded by
    # the export or re-render that found it.
    losses = [
        {"uuid": uuid, "dir": as_str(record.get("dir")), "losses": int(record["losses"])}
        for uuid, record in sorted(state.threads.items())
        if isinstance(record.get("losses"), int) and record["losses"] > 0
    ]
    # Threads whose earlier versions are kept in history/ (the server lost or rewrote turns).
    versions = [
        {"uuid": uuid, "dir": as_str(record.get("dir")), "versions": int(record["versions"])}
        for uuid, record in sorted(state.threads.items())
        if isinstance(record.get("versions"), int) and record["versions"] > 0
    ]
    doc: dict[str, Any] = {
        "archive": str(root),
        "now": format_utc(now),
        "verbosity": min(verbose, 3),
        "accounts": accounts,
        "state": {
            "file_exists": state.path.is_file(),
            # Rebuilt from the thread directories: because the file is corrupt, or (an
            # archive no batch has run on, e.g. the earlier tool's) because there is none.
            "corrupt": state.corrupt_copy is not None,
            "rebuilt_from_disk": state.rebuilt,
            "legacy_format": state.legacy,
            "counts": state.counts(),
            "not_in_any_index": sum(unindexed.values()),
            "not_in_any_index_by_folder": dict(sorted(unindexed.items())),
        },
        "errors": errors,
        "losses": losses,
        "versions": versions,
        "damaged": [
            {"uuid": uuid, "dir": rel, "reason": reason}
            for uuid, (rel, reason) in sorted(damaged.items())
        ],
    }
    doc.update(upkeep_status(root, state))
    from pplx_export.pipeline.autocommit import read_record

    commit = read_record(root)
    if commit is not None:
        doc["auto_commit"] = commit
    official = recovered_summary(root)
    if official is not None:
        doc["official_export"] = official
    runs = load_runs(root)
    for acc in accounts:
        acc["last_sync"] = _last_sync(acc, runs, now)
    doc["stale_accounts"] = [acc["account"] for acc in accounts if acc["last_sync"]["stale"]]
    return doc


# ------------------------------------------------------------------ human output


def _age_text(seconds: float | None) -> str:
    if seconds is None:
        return "never"
    if seconds < 0:
        return "future"
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes} min"
    hours = minutes // 60
    if hours < 48:
        return f"{hours} h"
    return f"{hours // 24} d"


def print_status(doc: dict[str, Any], console: Console) -> None:
    """The status document as tables and lists (the summary `status` prints on stdout)."""

    def say(text: str) -> None:
        # Titles are user text: "[...]" in them must not be taken for rich markup.
        console.print(text, markup=False, highlight=False, soft_wrap=True)

    say(f"Archive {doc['archive']}")
    if doc["accounts"]:
        _accounts_table(doc, console, say)
    else:
        say("no account configured and no library index: `pplx-export init` sets one up")
    st = doc["state"]
    if st["corrupt"]:
        say("batch state file is corrupt: counts come from the thread directories")
    elif st["rebuilt_from_disk"]:
        say("no batch state file yet: counts come from the thread directories")
    if st["not_in_any_index"]:
        folders = ", ".join(
            f"{folder or '?'} {n}" for folder, n in st["not_in_any_index_by_folder"].items()
        )
        n = st["not_in_any_index"]
        text = f"{n} archived thread{'s are' if n != 1 else ' is'} in no library index"
        if not doc["accounts"]:  # the table's counts are then missing: say them here
            counts = ", ".join(f"{c} {key}" for key, c in st["counts"].items() if c)
            text += f" ({counts})"
        say(f"{text}; by folder: {folders}")
    _details(doc, say)
    _official(doc, say)
    print_upkeep(doc, say)


def _official(doc: dict[str, Any], say: Callable[[str], None]) -> None:
    """The threads recovered from Perplexity's data export (`import`)."""
    official = doc.get("official_export")
    if not official or not official["recovered"]:
        return
    waiting = official["export_only"]
    say(
        f"{official['recovered']} thread(s) recovered from Perplexity's data export; "
        f"{len(waiting)} hold only the export's copy (questions and answers, no sources)"
    )
    for item in waiting[: 10 if doc["verbosity"] else 0]:
        say(f"  {item['uuid']} {str(item['title'] or '')[:60]!r}: API {item['api']}")


def _accounts_table(doc: dict[str, Any], console: Console, say: Callable[[str], None]) -> None:
    table = Table()
    table.add_column("account", overflow="fold")
    for column in ("threads", "index age", "ok", "err", "exp", "del", "new", "upd", "stop"):
        table.add_column(column, justify="right", no_wrap=True)
    for acc in doc["accounts"]:
        idx, state, nxt = acc["index"], acc["state"], acc["next_batch"]
        age = _age_text(idx["age_seconds"]) if idx["exists"] else "none"
        table.add_row(
            Text(acc["account"]),
            str(idx["threads"]),
            "corrupt" if idx["corrupt"] else age,
            *(str(state.get(key, 0)) for key in ("ok", "error", "expired", "deleted")),
            str(nxt["new"]),
            str(nxt["updated"]),
            str(nxt["early_stopped"]),
        )
    console.print(table)
    say("err/exp/del: state error/expired/deleted; new/upd/stop: the next batch")
    for acc in doc["accounts"]:
        idx = acc["index"]
        if idx["full_index_due"]:
            say(
                f"{acc['account']}: {idx['incremental_runs_since_full']} incremental index runs "
                "since the last full sweep; the next `sync` sweeps when it is due"
            )
        last = acc.get("last_sync") or {}
        if last.get("stale"):
            when = (
                f"last successful sync {_age_text(last['age_seconds'])} ago"
                if last["last_ok_at"]
                else "never synced"
            )
            result = f" (last run: {last['last_result']})" if last["last_result"] else ""
            say(f"WARNING {acc['account']}: {when}{result}; is the schedule running?")


def _details(doc: dict[str, Any], say: Callable[[str], None]) -> None:
    for acc in doc["accounts"]:
        todo = acc["next_batch"].get("todo")
        if todo:
            say(f"\nnext batch for {acc['account']} ({len(todo)}):")
            for item in todo:
                say(f"  {item['kind']:<8} {item['uuid']}  {item['title']}")
        if acc.get("done_by_mode"):
            parts = ", ".join(f"{m} {n}" for m, n in acc["done_by_mode"].items())
            say(f"\ndone by mode for {acc['account']}: {parts}")
        for row in acc.get("threads", []):
            say(
                f"  {row['plan']:<13} {row['state'] or '-':<8} {row['mode']:<13} "
                f"{row['lastUpdated'][:19]:<19} {row['uuid']}  {row['title']}"
            )
    if doc["damaged"]:
        say(f"\ndamaged raw files ({len(doc['damaged'])}; the next batch fetches them again):")
        for bad in doc["damaged"]:
            say(f"  {bad['uuid']}  {bad['dir']}: {bad['reason']}")
    if doc["losses"]:
        n = len(doc["losses"])
        say(
            f"\ncontent not read: {n} thread{'s hold' if n != 1 else ' holds'} an answer or "
            "sources in a shape\nthis version does not read (kept in the raw files; "
            "`pplx-export verify` names\neach turn):"
        )
        for lost in doc["losses"]:
            say(f"  {lost['uuid']}  {lost['dir']}: {lost['losses']} lost")
    commit = doc.get("auto_commit")
    if isinstance(commit, dict) and commit.get("failed"):
        say(
            f"\nauto-commit FAILED at {commit.get('at')} ({commit.get('command')}): "
            f"{commit.get('warning')}\nthe archive on disk is complete; it is not in git yet"
        )
    if doc["versions"]:
        n = sum(v["versions"] for v in doc["versions"])
        say(
            f"\nearlier versions kept: {n} in {len(doc['versions'])} thread(s) (the server "
            "lost or rewrote turns;\n`search --history` searches them):"
        )
        for kept in doc["versions"]:
            say(f"  {kept['uuid']}  {kept['dir']}/history: {kept['versions']}")
    if doc["errors"]:
        say(f"\nerrors ({len(doc['errors'])}):")
        for err in doc["errors"]:
            title = f"  {err['title']}" if err.get("title") else ""
            say(f"  {err['uuid']}{title}: {err['error']}")
