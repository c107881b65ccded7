"""`assets-backfill`: complete the assets of archived threads after the fact (protocol §5.9).

Three phases, in this order, each over every thread directory (`--limit N`: the first N
threads each phase would touch, newest first):

1. Offline, always: from every `raw_blocks.json` (main and background entries: a sub-agent's
   files are part of the thread) write the inline assets (diffs, code) into
   `assets/files/`, register handle-only assets (`no_download_channel`), and merge the
   manifest (counts recomputed; downloads and expiry flags on disk kept).
2. `--fetch-blocks`: threads of the block modes without `raw_blocks.json` (archives of the
   earlier tool) get their schematized response fetched, with the session of the account
   that exported them, and go through the export pipeline again from the plain response
   on disk: raw_blocks.json, assets downloaded, derived files, manifest.
3. `--online`: every manifest version with a real UUID (not a `toolu_` handle), not inline,
   not handle-only, not expired and without its file gets a fresh signed URL from
   `/rest/assets/<uuid>/data` (paced like every API call) and is downloaded (not paced, a few
   at a time). `ASSET_NOT_FOUND` marks the version `asset_expired` (terminal);
   `ASSET_ACCESS_DENIED` is retried once with the account that owns the thread's folder.
   Downloads land through a temp file and a rename, the extension decided by the bytes when
   the name lies; `size` and `sha256` are recorded in the manifest.

Crash safety: every file is written atomically and the manifest of a thread is written after
its files. A file renamed into place whose manifest entry a kill prevented is found again by
name on the next run and reused, never duplicated; stale temp files are swept first.

Long because its three phases are one command over the same thread directories and the same
manifest merge, run in order; they share the result, the newest-first order and `--limit`,
and each phase is only a few functions.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pplx_export.archive import assets as asset_files
from pplx_export.archive.paths import INDEX_DIR, safe_folder, safe_stem
from pplx_export.archive.raw import RAW_BLOCKS, RAW_ENTRIES
from pplx_export.archive.sweep import sweep_temp_files
from pplx_export.archive.thread_docs import ArchivedThread, archived_threads
from pplx_export.commands.rerender.thread import rerender_thread
from pplx_export.commands.upkeep.accounts import AccountSessions, AuthStreak, OpenApi, account_for
from pplx_export.commands.upkeep.resumable import resumable
from pplx_export.commands.upkeep.tally import BackfillTally
from pplx_export.config import Account
from pplx_export.context import RunOptions
from pplx_export.errors import (
    ApiError,
    ArchiveError,
    AuthError,
    EntryExpired,
    NotFound,
    PermissionDenied,
    SchemaError,
)
from pplx_export.models import JSON, Asset
from pplx_export.parse import final_asset_name, resolve_ext, row_from_thread_json
from pplx_export.parse.assets import collect_assets, dest_name
from pplx_export.parse.mode_tables import BLOCK_MODES
from pplx_export.pipeline.assemble import default_engine
from pplx_export.pipeline.fetch_assets import fetch_and_export
from pplx_export.progress import progress_reporter
from pplx_export.site.api import PerplexityAPI
from pplx_export.store.batch_state import ERROR_MAX
from pplx_export.store.lock import archive_lock
from pplx_export.util.atomic import fsync_dir, write_if_changed
from pplx_export.util.jsonobj import attrs_json
from pplx_export.util.jsontext import loads
from pplx_export.util.lenient import as_dict, dicts
from pplx_export.util.timefmt import parse_time

log = logging.getLogger(__name__)

PARALLEL_DOWNLOADS = 4
HEAD_BYTES = 2048
ACCESS_DENIED = "ASSET_ACCESS_DENIED"


@dataclass
class AssetsResult(BackfillTally):
    fetch_blocks: bool
    online: bool
    threads: int = 0  # threads with raw_blocks.json examined offline
    inline_written: int = 0
    manifests_updated: int = 0
    blocks_fetched: int = 0
    downloaded: int = 0
    expired: int = 0
    retried_with_owner: int = 0

    def to_json(self) -> JSON:
        online = self.online
        return attrs_json(
            self,
            "threads inline_written manifests_updated blocks_fetched downloaded asset_expired"
            " retried_with_owner failed requests elapsed_s failures",
            blocks_fetched=self.blocks_fetched if self.fetch_blocks else None,
            downloaded=self.downloaded if online else None,
            asset_expired=self.expired if online else None,
            retried_with_owner=self.retried_with_owner if online else None,
            **self.tally_json("where"),
        )

    def line(self) -> str:
        parts = [
            f"{self.threads} threads",
            f"{self.inline_written} inline files written",
            f"{self.manifests_updated} manifests updated",
        ]
        if self.fetch_blocks:
            parts.append(f"{self.blocks_fetched} blocks fetched")
        if self.online:
            parts.append(f"{self.downloaded} downloaded, {self.expired} expired")
        parts.append(f"{self.failed} failed, {self.requests} requests, {self.elapsed:.1f}s")
        return "assets-backfill: " + ", ".join(parts)


def _newest_first(threads: dict[str, ArchivedThread]) -> list[ArchivedThread]:
    floor = datetime.min.replace(tzinfo=UTC)
    return sorted(
        threads.values(),
        key=lambda t: (parse_time(t.get("lastUpdated")) or floor, t.uuid),
        reverse=True,
    )


def run_assets_backfill(
    opts: RunOptions,
    *,
    fetch_blocks: bool = False,
    online: bool = False,
    limit: int | None = None,
    open_api: OpenApi | None = None,
) -> AssetsResult:
    """The three phases (see module doc); the offline one always runs."""
    started = time.monotonic()
    result = AssetsResult(fetch_blocks=fetch_blocks, online=online)
    with archive_lock(opts.out, opts.held_locks):
        sweep_temp_files(opts.out / INDEX_DIR, recursive=False)
        threads = _newest_first(archived_threads(opts.out))
        with resumable(result, started):
            _offline_phase(opts, threads, limit, result)
            if fetch_blocks or online:
                with AccountSessions(opts, open_api, counts=result) as sessions:
                    if fetch_blocks:
                        _blocks_phase(opts, sessions, threads, limit, result)
                    if online:
                        _online_phase(opts, sessions, threads, limit, result)
    return result


# ------------------------------------------------------------------ phase 1: offline


def _blocks_assets(thread_dir: Path) -> list[Asset] | None:
    try:
        blocks = as_dict(loads((thread_dir / RAW_BLOCKS).read_bytes()))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError) as exc:
        raise ArchiveError(f"{thread_dir / RAW_BLOCKS}: unreadable ({exc})") from exc
    return collect_assets(dicts(blocks.get("entries")) + dicts(blocks.get("background_entries")))


def _offline_phase(
    opts: RunOptions, threads: list[ArchivedThread], limit: int | None, result: AssetsResult
) -> None:
    work = [t for t in threads if (t.dir / RAW_BLOCKS).is_file()]
    work = work[:limit] if limit is not None else work
    with progress_reporter("assets-backfill (offline)", quiet=opts.quiet) as bar:
        bar.set_total(len(work))
        for thread in work:
            try:
                _offline_one(thread.dir, result)
            except (ArchiveError, OSError) as exc:
                result.failures.append((str(thread.dir), f"{type(exc).__name__}: {exc}"))
                log.error("%s: %s", thread.dir, exc)
            result.threads += 1
            bar.advance(thread.get("title"))


def _offline_one(thread_dir: Path, result: AssetsResult) -> None:
    sweep_temp_files(thread_dir)
    assets = _blocks_assets(thread_dir)
    if not assets:
        return
    names = asset_files.inline_file_names(assets)
    for a in asset_files.inline_assets(assets):
        rel = f"{asset_files.FILES_DIR}/{names[id(a)]}"
        if write_if_changed(thread_dir / rel, asset_files.inline_text(a), durable=True):
            result.inline_written += 1
        a.downloaded_to = rel
    old = asset_files.load_manifest(thread_dir)
    manifest = asset_files.build_manifest(assets, thread_dir, old)
    if manifest is not None and write_if_changed(
        thread_dir / asset_files.MANIFEST, asset_files.dump_manifest(manifest), durable=True
    ):
        result.manifests_updated += 1


# ------------------------------------------------------------------ phase 2: --fetch-blocks


def _blocks_phase(
    opts: RunOptions,
    sessions: AccountSessions,
    threads: list[ArchivedThread],
    limit: int | None,
    result: AssetsResult,
) -> None:
    work = [
        t
        for t in threads
        if t.mode in BLOCK_MODES
        and (t.dir / RAW_ENTRIES).is_file()
        and not (t.dir / RAW_BLOCKS).is_file()
    ]
    work = work[:limit] if limit is not None else work
    streak = AuthStreak()
    with progress_reporter("assets-backfill (blocks)", quiet=opts.quiet) as bar:
        bar.set_total(len(work))
        for thread in work:
            account = account_for(opts, thread.get("export_via"))
            try:
                if account is None:
                    raise PermissionDenied(
                        f"exported by {thread.get('export_via')!r}, not in the config"
                    )
                _complete_blocks(opts, sessions.api(account), thread)
            except AuthError as exc:
                result.failures.append((thread.uuid, f"AuthError: {exc.reason}"))
                streak.failed(exc)
            except EntryExpired as exc:
                streak.ok()
                result.failures.append((thread.uuid, f"gone on Perplexity: {exc.reason}"))
            except (ApiError, SchemaError, ArchiveError, OSError) as exc:
                streak.ok()
                result.failures.append((thread.uuid, f"{type(exc).__name__}: {exc}"[:ERROR_MAX]))
                log.error("thread %s: blocks not completed: %s", thread.uuid, exc)
            else:
                streak.ok()
                result.blocks_fetched += 1
            bar.advance(thread.get("title"))


def _complete_blocks(opts: RunOptions, api: PerplexityAPI, thread: ArchivedThread) -> None:
    """Fetch the schematized response and write the thread again from its plain raw file."""
    directory = thread.dir
    try:
        plain = as_dict(loads((directory / RAW_ENTRIES).read_bytes()))
    except (OSError, ValueError, RecursionError) as exc:
        raise ArchiveError(f"{directory / RAW_ENTRIES}: unreadable ({exc})") from exc
    blocks = api.thread_schematized(thread.uuid)
    if not dicts(blocks.get("entries")):
        raise SchemaError("schematized answer has no entries", thread=thread.uuid)
    engine = default_engine(opts.flavor)
    doc = thread.doc
    conv = engine.parse(
        plain,
        blocks,
        row_from_thread_json(doc, directory.parent.name),
        web_uuid=thread.uuid,
        url=thread.get("url"),
        export_via=thread.get("export_via"),
        exported_at=thread.get("exported_at"),
    )
    sweep_temp_files(directory)
    fetch_and_export(
        api,
        opts.out,
        conv,
        directory,
        account_folder=thread.account_folder,
        lang=opts.lang,
        engine=engine,
    )


# ------------------------------------------------------------------ phase 3: --online


@dataclass
class _Missing:
    """A manifest version whose file is missing, and what the backfill learned about it."""

    version: dict[str, Any]  # the manifest's dict, updated in place
    dest: str  # the intended file name before the extension is known
    url: str = field(default="", repr=False)
    api: PerplexityAPI | None = None  # the session that got the URL (downloads need none,
    # but go through its client)
    tmp: Path | None = None
    error: str = ""


def _missing_versions(thread_dir: Path, manifest: JSON) -> list[_Missing]:
    out: list[_Missing] = []
    for group in dicts(manifest.get("files")):
        n_versions = len(dicts(group.get("versions")))
        for v in dicts(group.get("versions")):
            uuid = str(v.get("uuid") or "")
            if (
                not uuid
                or uuid.startswith("toolu_")
                or v.get("extracted_inline")
                or v.get("no_download_channel")
                or v.get("asset_expired")
            ):
                continue
            have = Path(str(v.get("downloaded_to") or "")).name
            if have and (thread_dir / asset_files.FILES_DIR / have).is_file():
                continue
            filename = str(group.get("filename") or uuid)
            asset_type = str(v.get("asset_type") or "")
            version = str(v.get("version") or "v1")
            out.append(_Missing(v, dest_name(filename, asset_type, version, n_versions)))
    return out


def _owner_account(opts: RunOptions, thread: ArchivedThread) -> Account | None:
    """The configured account whose archive folder holds the thread."""
    for account in opts.config.accounts.values():
        if safe_folder(account.display_name or account.name) == thread.account_folder:
            return account
    return None


def _online_phase(
    opts: RunOptions,
    sessions: AccountSessions,
    threads: list[ArchivedThread],
    limit: int | None,
    result: AssetsResult,
) -> None:
    work: list[tuple[ArchivedThread, JSON, list[_Missing]]] = []
    for thread in threads:
        manifest = asset_files.load_manifest(thread.dir)
        missing = _missing_versions(thread.dir, manifest) if manifest else []
        if manifest and missing:
            work.append((thread, manifest, missing))
    work = work[:limit] if limit is not None else work
    streak = AuthStreak()
    with progress_reporter("assets-backfill (online)", quiet=opts.quiet) as bar:
        bar.set_total(sum(len(m) for _, _, m in work))
        for thread, manifest, missing in work:
            sweep_temp_files(thread.dir)
            try:
                _fresh_urls(opts, sessions, thread, missing, result, streak)
            finally:
                # Whatever was learned so far is kept, even when an auth stop ends the run.
                if _download_all(thread, manifest, missing, result):
                    _relink(opts, thread, result)
            for _ in missing:
                bar.advance(thread.get("title"))


def _fresh_urls(
    opts: RunOptions,
    sessions: AccountSessions,
    thread: ArchivedThread,
    missing: list[_Missing],
    result: AssetsResult,
    streak: AuthStreak,
) -> None:
    first = account_for(opts, thread.get("export_via"))
    owner = _owner_account(opts, thread)
    for item in missing:
        uuid = str(item.version.get("uuid"))
        accounts = [a for a in (first, owner) if a is not None]
        if len(accounts) == 2 and accounts[0].name == accounts[1].name:
            accounts.pop()
        if not accounts:
            item.error = f"exported by {thread.get('export_via')!r}, not in the config"
            continue
        for n, account in enumerate(accounts):
            try:
                data = sessions.api(account).asset_data(uuid)
            except PermissionDenied as exc:
                streak.ok()
                item.error = f"PermissionDenied: {exc.reason}"
                if exc.code == ACCESS_DENIED and n + 1 < len(accounts):
                    result.retried_with_owner += 1
                    log.info(
                        "asset %s: denied to %s, retrying as %s",
                        uuid,
                        account.name,
                        accounts[n + 1].name,
                    )
                    continue
            except NotFound as exc:
                streak.ok()
                item.version["asset_expired"] = True
                item.error = ""
                result.expired += 1
                log.warning("asset %s (%s) is gone: %s", uuid, item.dest, exc.reason)
            except AuthError as exc:
                item.error = f"AuthError: {exc.reason}"
                streak.failed(exc)
            except (ApiError, SchemaError) as exc:
                streak.ok()
                item.error = f"{type(exc).__name__}: {exc}"
            else:
                streak.ok()
                urls = [c.url for c in data.candidates if c.url]
                if urls:
                    item.url, item.error = urls[0], ""
                    item.api = sessions.api(account)
                else:
                    item.version["asset_expired"] = True
                    result.expired += 1
            break


def _relink(opts: RunOptions, thread: ArchivedThread, result: AssetsResult) -> None:
    """Render the thread's pages again (offline, in place): they link the files just
    downloaded and say which ones expired, instead of "not downloaded yet"."""
    rel = thread.dir.relative_to(opts.out).as_posix()
    outcome = rerender_thread(opts.out, rel, lang=opts.lang)
    if outcome.status == "failed":
        result.failures.append((f"{thread.uuid} pages", outcome.error[:ERROR_MAX]))


def _download_all(
    thread: ArchivedThread,
    manifest: JSON,
    missing: list[_Missing],
    result: AssetsResult,
) -> bool:
    """Place the downloads and record them in the manifest; True when it changed."""
    files_dir = thread.dir / asset_files.FILES_DIR
    todo = [m for m in missing if m.url and m.api is not None]
    if todo:
        # CDN downloads: not paced, a few at a time (protocol §2.7).
        with ThreadPoolExecutor(max_workers=PARALLEL_DOWNLOADS) as pool:
            outcomes = list(pool.map(lambda m: _fetch(m.api, m.url, files_dir), todo))
        for item, outcome in zip(todo, outcomes, strict=True):
            item.tmp, item.error = outcome
    taken = {
        Path(str(v.get("downloaded_to"))).name
        for g in dicts(manifest.get("files"))
        for v in dicts(g.get("versions"))
        if v.get("downloaded_to")
    }
    changed = False
    try:
        for item in missing:
            if item.tmp is not None:
                _place(item, files_dir, taken)
                result.downloaded += 1
                changed = True
            elif item.version.get("asset_expired"):
                changed = True
            if item.error:
                result.failures.append(
                    (f"{thread.uuid} asset {item.version.get('uuid')}", item.error[:ERROR_MAX])
                )
    finally:
        for item in missing:
            if item.tmp is not None and item.tmp.exists():
                item.tmp.unlink()
        if changed:
            write_if_changed(
                thread.dir / asset_files.MANIFEST, asset_files.dump_manifest(manifest), durable=True
            )
    return changed


def _fetch(api: PerplexityAPI | None, url: str, files_dir: Path) -> tuple[Path | None, str]:
    """(temp file, "") or (None, why). Runs in a worker thread: never raises."""
    assert api is not None
    try:
        tmp = api.download(url, files_dir)
    except ApiError as exc:
        return None, f"download failed: {type(exc).__name__}: {exc.reason}"
    except OSError as exc:
        return None, f"download failed: {exc}"
    if tmp.stat().st_size == 0:
        tmp.unlink()
        return None, "download failed: empty body"
    return tmp, ""


def _place(item: _Missing, files_dir: Path, taken: set[str]) -> None:
    """Rename the download to its final name and record it in the manifest version."""
    assert item.tmp is not None
    data = item.tmp.read_bytes()
    asset_type = str(item.version.get("asset_type") or "")
    ext = resolve_ext(item.dest, item.url, data[:HEAD_BYTES], asset_type)
    name = safe_stem(final_asset_name(item.dest, ext), 250)
    if name in taken:
        stem, dot, suffix = name.rpartition(".")
        uuid8 = str(item.version.get("uuid"))[:8]
        name = f"{stem}_{uuid8}.{suffix}" if dot else f"{name}_{uuid8}"
    # A file of that name no manifest version claims is this very download from a killed
    # run (names are decided by the bytes): replacing it is what keeps reruns from
    # duplicating it.
    os.replace(item.tmp, files_dir / name)
    fsync_dir(files_dir)
    item.tmp = None
    taken.add(name)
    item.version["downloaded_to"] = f"{asset_files.FILES_DIR}/{name}"
    item.version["size"] = len(data)
    item.version["sha256"] = hashlib.sha256(data).hexdigest()
    item.version.pop("asset_expired", None)
