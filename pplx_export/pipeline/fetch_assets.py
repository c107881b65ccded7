"""Download a thread's assets and its deep-research report body (protocol.md §2.8, §5.9).

Runs between parse and write in the online export: files land in
`<thread>/assets/files/` through a temp file and a rename, so a killed process never leaves
a half file under a final name. A download failure is logged and leaves `downloaded_to`
empty (the manifest shows the gap); `ASSET_NOT_FOUND` marks the version `asset_expired`.
Files already on disk from an earlier export are reused, not fetched again.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from pplx_export.archive.assets import FILES_DIR, load_manifest
from pplx_export.archive.paths import safe_file_name
from pplx_export.archive.report_body import looks_binary
from pplx_export.errors import ApiError, NotFound, PermissionDenied
from pplx_export.models import Asset, Conversation
from pplx_export.parse import final_asset_name, resolve_ext
from pplx_export.pipeline.assemble import Engine, export_conversation
from pplx_export.site.api import PerplexityAPI
from pplx_export.util.atomic import fsync_dir

if TYPE_CHECKING:
    from pplx_export.archive.writer import WriteResult

log = logging.getLogger(__name__)

HEAD_BYTES = 2048


def _known_downloads(thread_dir: Path) -> dict[tuple[str, str], str]:
    """(uuid, version) -> file name of versions an earlier export already downloaded."""
    out: dict[tuple[str, str], str] = {}
    for f in (load_manifest(thread_dir) or {}).get("files") or []:
        for v in (f.get("versions") or []) if isinstance(f, dict) else []:
            if isinstance(v, dict) and v.get("downloaded_to"):
                name = Path(str(v["downloaded_to"])).name
                if name and (thread_dir / FILES_DIR / name).is_file():
                    out[(str(v.get("uuid") or ""), str(v.get("version") or ""))] = name
    return out


def _unique_name(name: str, uuid: str, taken: set[str]) -> str:
    """§5.9: on a name collision within the thread, insert `_<uuid8>` before the extension."""
    if name not in taken:
        return name
    stem, dot, ext = name.rpartition(".")
    base = stem if dot else name
    suffix = f".{ext}" if dot else ""
    return f"{base}_{uuid[:8]}{suffix}"


def download_assets(api: PerplexityAPI, conv: Conversation, thread_dir: Path) -> int:
    """Fetch every downloadable version into `thread_dir/assets/files`; return how many."""
    files_dir = thread_dir / FILES_DIR
    known = _known_downloads(thread_dir)
    taken: set[str] = set(known.values())
    fetched = 0
    for asset in conv.assets:
        if not asset.url or asset.extracted_inline or asset.no_download_channel:
            continue
        have = known.get((asset.uuid, asset.version))
        if have:
            asset.downloaded_to = f"{FILES_DIR}/{have}"
            continue
        if _download_one(api, asset, files_dir, taken):
            fetched += 1
    return fetched


def _download_one(api: PerplexityAPI, asset: Asset, files_dir: Path, taken: set[str]) -> bool:
    files_dir.mkdir(parents=True, exist_ok=True)
    tmp: Path | None
    try:
        tmp = api.download(asset.url, files_dir)
    except (NotFound, PermissionDenied) as exc:
        # Signed links expire (the CDN answers 403 or 404): ask the API for a fresh link
        # once; only its ASSET_NOT_FOUND means the platform purged the file.
        tmp = _retry_with_fresh_url(api, asset, files_dir, exc)
    except ApiError as exc:
        log.warning("asset %s (%s): download failed: %s", asset.filename, asset.uuid, exc.reason)
        return False
    if tmp is None:
        return False
    try:
        with tmp.open("rb") as fh:
            head = fh.read(HEAD_BYTES)
        ext = resolve_ext(asset.dest_name or asset.filename, asset.url, head, asset.asset_type)
        name = final_asset_name(asset.dest_name or asset.filename or asset.uuid, ext)
        # The parser's stem rules keep leading dots and long names; harden before use.
        name = _unique_name(safe_file_name(name), asset.uuid, taken)
        # The client fsynced the temp file; the rename and its directory entry follow.
        os.replace(tmp, files_dir / name)
        fsync_dir(files_dir)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    taken.add(name)
    asset.downloaded_to = f"{FILES_DIR}/{name}"
    return True


def _retry_with_fresh_url(
    api: PerplexityAPI, asset: Asset, files_dir: Path, first: ApiError
) -> Path | None:
    if not asset.uuid or asset.uuid.startswith("toolu_"):
        # Workspace handles have no download channel (protocol §2.7).
        asset.asset_expired = first.code == "ASSET_NOT_FOUND"
        log.warning("asset %s (%s): %s", asset.filename, asset.uuid, first.reason)
        return None
    try:
        data = api.asset_data(asset.uuid)
        urls = [c.url for c in data.candidates if c.url]
        if not urls:
            raise NotFound("no download URL", code="ASSET_NOT_FOUND")
        asset.url = urls[0]
        return api.download(asset.url, files_dir)
    except NotFound as exc:
        asset.asset_expired = True
        log.warning("asset %s (%s) is gone: %s", asset.filename, asset.uuid, exc.reason)
    except ApiError as exc:
        log.warning("asset %s (%s): download failed: %s", asset.filename, asset.uuid, exc.reason)
    return None


def fetch_report_body(api: PerplexityAPI, conv: Conversation, thread_dir: Path) -> str | None:
    """The first acceptable candidate body (§2.8): non-blank, not binary, UTF-8 decoded."""
    if conv.report is None:
        return None
    for cand in conv.report.candidates:
        data = _candidate_bytes(api, cand, thread_dir)
        if data is not None and data.strip() and not looks_binary(data):
            return data.decode("utf-8", errors="replace")
    if conv.report.candidates:
        log.warning(
            "thread %s: no usable report body among %d candidate(s)",
            conv.web_uuid,
            len(conv.report.candidates),
        )
    return None


def _candidate_bytes(api: PerplexityAPI, cand: Asset, thread_dir: Path) -> bytes | None:
    # Candidates are usually versions download_assets already fetched: read them from disk.
    if cand.downloaded_to:
        with contextlib.suppress(OSError):
            return (thread_dir / FILES_DIR / Path(cand.downloaded_to).name).read_bytes()
    if not cand.url:
        return None
    try:
        tmp = api.download(cand.url, thread_dir)
    except ApiError as exc:
        log.warning("report candidate %s: %s", cand.filename, exc.reason)
        return None
    try:
        return tmp.read_bytes()
    finally:
        tmp.unlink(missing_ok=True)


def fetch_and_export(
    api: PerplexityAPI,
    root: Path,
    conv: Conversation,
    directory: Path,
    *,
    account_folder: str,
    lang: str,
    engine: Engine,
) -> WriteResult:
    """Download the thread's assets and report body into `directory`, then write it there."""
    download_assets(api, conv, directory)
    report_body = fetch_report_body(api, conv, directory)
    return export_conversation(
        root,
        conv,
        account_folder=account_folder,
        lang=lang,
        report_body=report_body,
        dest=directory,
        engine=engine,
    )
