"""Asset files and `assets/assets_manifest.json` (protocol §5.9, §6.9).

Downloads happen in the online pipeline, which records `Asset.downloaded_to`. Inline assets
(diffs, code) carry their text in the model and are written here, so re-render restores
them from `raw_blocks.json` alone. The manifest is state (it records downloads and expired
links), so it is merged with the one on disk, never blindly replaced.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from pplx_export.archive.paths import cap_bytes, safe_stem
from pplx_export.models import EXPIRED, JSON, NO_CHANNEL, NOT_DOWNLOADED, Asset, LocalFile
from pplx_export.util.atomic import read_with_stat
from pplx_export.util.jsontext import dumps_indented, loads
from pplx_export.util.lenient import lenient_int

ASSETS_DIR = "assets"
FILES_DIR = "assets/files"
MANIFEST = "assets/assets_manifest.json"


def inline_assets(assets: list[Asset]) -> list[Asset]:
    return [a for a in assets if a.extracted_inline and a.inline_content.strip()]


def _unique_prefixes(uuids: list[str]) -> dict[str, str]:
    """Shortest prefix (at least 8 characters) that tells each uuid apart from the others."""
    out: dict[str, str] = {}
    for u in uuids:
        n = 8
        while n < len(u) and any(o != u and o[:n] == u[:n] for o in uuids):
            n += 1
        out[u] = u[:n]
    return out


def inline_file_names(assets: list[Asset]) -> dict[int, str]:
    """`id(asset) -> file name` for the inline assets: `⟨safe_stem⟩.⟨kind⟩.md` (§5.9)."""
    groups: dict[str, list[Asset]] = defaultdict(list)
    names: dict[int, str] = {}
    for a in inline_assets(assets):
        if a.dest_name:
            # The parser already applied §5.9 (collision suffixes included); the stem rules
            # here only harden it (no leading dot, no separator, byte cap).
            names[id(a)] = safe_stem(a.dest_name, 250)
            continue
        kind = safe_stem(a.inline_kind or "code", 16)
        groups[f"{safe_stem(a.filename or a.uuid)}.{kind}"].append(a)
    for base, members in groups.items():
        if len(members) == 1:
            names[id(members[0])] = f"{base}.md"
            continue
        prefixes = _unique_prefixes([m.uuid for m in members])
        for i, m in enumerate(members):
            tag = safe_stem(prefixes[m.uuid], 64) if m.uuid else str(i + 1)
            names[id(m)] = cap_bytes(f"{base}_{tag}", 250) + ".md"
    return names


def inline_text(a: Asset) -> str:
    """What an inline asset's file holds: its content, fenced (render/files.py)."""
    # Imported here: a `--changed-only` run that renders nothing must not load the renderer.
    from pplx_export.render.files import inline_file_text

    return inline_file_text(a.inline_kind, a.filename, a.inline_content)


def local_files(assets: list[Asset], thread_dir: Path) -> list[LocalFile]:
    """The thread's files as the archive holds them, for the renderer to link: every version
    of the manifest the writer will write (the assets merged with the manifest on disk),
    with its file under `assets/files/` and that file's size, or why there is none.

    Inline files count as present (the writer writes them with the render); a download is
    present when its file is on disk."""
    manifest = build_manifest(assets, thread_dir, load_manifest(thread_dir))
    if manifest is None:
        return []
    names = inline_file_names(assets)
    inline = {a.uuid: a for a in inline_assets(assets)}
    owners = {a.uuid: a.entry_uuid for a in assets if a.entry_uuid}
    # The signed query expires and differs between fetches: the path names the file.
    urls = {a.uuid: a.url.split("?", 1)[0] for a in assets if a.url}
    out: list[LocalFile] = []
    for f in manifest["files"]:
        for v in f["versions"]:
            uuid = str(v.get("uuid") or "")
            path, size, missing = "", None, ""
            changes: tuple[str, ...] = ()
            if v.get("extracted_inline") and uuid in inline:
                a = inline[uuid]
                path = f"{FILES_DIR}/{names[id(a)]}"
                size = len(inline_text(a).encode("utf-8"))
                changes = a.changes
            else:
                name = Path(str(v.get("downloaded_to") or "")).name
                full = thread_dir / FILES_DIR / name
                if name and os.path.isfile(full):
                    path, size = f"{FILES_DIR}/{name}", os.path.getsize(full)
                elif v.get("asset_expired"):
                    missing = EXPIRED
                elif v.get("no_download_channel"):
                    missing = NO_CHANNEL
                else:
                    missing = NOT_DOWNLOADED
            out.append(
                LocalFile(
                    uuid=uuid,
                    filename=str(v.get("filename") or f["filename"]),
                    version=str(v.get("version") or ""),
                    n_versions=int(f.get("n_versions") or 1),
                    asset_type=str(v.get("asset_type") or ""),
                    path=path,
                    size=size,
                    missing=missing,
                    entry_uuid=owners.get(uuid, ""),
                    changes=changes,
                    url=urls.get(uuid, ""),
                )
            )
    return out


def load_manifest(thread_dir: Path) -> JSON | None:
    return read_manifest(thread_dir)[0]


def read_manifest(thread_dir: Path) -> tuple[JSON | None, tuple[int, int] | None]:
    """The manifest (None when missing, unreadable or not an object) and the `(size,
    mtime_ns)` of the file read (None when there is no file)."""
    try:
        # os-level read: most threads have no manifest, and re-render asks for every one.
        data, stat = read_with_stat(os.path.join(thread_dir, MANIFEST))
    except FileNotFoundError:
        return None, None
    except OSError:
        return None, (-1, -1)  # there, but unreadable: matches no recorded stat
    try:
        doc = loads(data)
    except (ValueError, RecursionError):
        return None, stat
    return (doc if isinstance(doc, dict) else None), stat


def _existing_versions(manifest: JSON | None) -> dict[tuple[str, str], tuple[str, JSON]]:
    out: dict[tuple[str, str], tuple[str, JSON]] = {}
    if not manifest:
        return out
    for f in manifest.get("files") or []:
        if not isinstance(f, dict):
            continue
        for v in f.get("versions") or []:
            if isinstance(v, dict):
                key = (str(v.get("uuid") or ""), str(v.get("version") or ""))
                out[key] = (str(f.get("filename") or ""), v)
    return out


def normalize_downloaded_to(downloaded_to: str, thread_dir: Path) -> str:
    """`assets/files/⟨name⟩` (relative to the thread directory) when that file exists here.

    The protocol records `str(⟨thread_dir⟩/assets/files/⟨name⟩)`, which embeds wherever the
    archive happened to live (and the CWD for a relative --out): a moved or copied archive
    would then re-render to different bytes. A thread-relative path survives moves, date
    merges and copies; readers resolve any form by its file name under assets/files.
    Paths whose file is absent are kept verbatim (a failed or purged download).
    """
    if not downloaded_to:
        return ""
    head, _, rest = downloaded_to.rpartition("/")
    if head == FILES_DIR and rest not in ("", ".", ".."):
        return downloaded_to  # already the relative form, whether or not the file is there
    name = Path(downloaded_to).name
    if name and (thread_dir / FILES_DIR / name).is_file():
        return f"{FILES_DIR}/{name}"
    return downloaded_to


def _version_entry(a: Asset, old: JSON | None) -> JSON:
    old = old or {}
    entry: dict[str, Any] = {
        "uuid": a.uuid,
        "asset_type": a.asset_type,
        "version": "inline" if a.extracted_inline else a.version,
        "created_at": a.created_at,
        "downloaded_to": a.downloaded_to or str(old.get("downloaded_to") or ""),
    }
    if a.extracted_inline:
        entry["extracted_inline"] = True
    if a.no_download_channel or old.get("no_download_channel"):
        entry["no_download_channel"] = True
    handle = a.file_handle or old.get("file_handle")
    if handle:
        entry["file_handle"] = handle
    # Set by assets-backfill after a 404: terminal, the raw payload cannot know it.
    if a.asset_expired or old.get("asset_expired"):
        entry["asset_expired"] = True
    if a.extracted_inline and a.filename:
        entry["filename"] = a.filename
    # Recorded by assets-backfill with its download: still true while the file is the same.
    if entry["downloaded_to"] and entry["downloaded_to"] == old.get("downloaded_to"):
        for key in ("size", "sha256"):
            if key in old:
                entry[key] = old[key]
    return entry


def build_manifest(assets: list[Asset], thread_dir: Path, existing: JSON | None) -> JSON | None:
    """The manifest for `assets`, merged with `existing`; None when there is nothing to list."""
    old = _existing_versions(existing)
    groups: dict[str, list[JSON]] = defaultdict(list)
    seen: set[tuple[str, str]] = set()
    for a in assets:
        if a.extracted_inline and not a.inline_content.strip():
            continue
        version = "inline" if a.extracted_inline else a.version
        key = (a.uuid, version)
        if key in seen:
            continue
        seen.add(key)
        entry = _version_entry(a, old.get(key, ("", None))[1])
        entry["downloaded_to"] = normalize_downloaded_to(str(entry["downloaded_to"]), thread_dir)
        groups[a.filename or a.uuid or "unknown"].append(entry)
    # Versions only the disk knows (registered by a backfill) are kept: nothing lost.
    for key, (fname, v) in sorted(old.items()):
        if key not in seen:
            groups[fname or key[0] or "unknown"].append(v)
    if not groups:
        return None
    files: list[JSON] = []
    count = 0
    for fname in sorted(groups):
        versions = sorted(groups[fname], key=lambda v: lenient_int(v.get("created_at")))
        files.append({"filename": fname, "n_versions": len(versions), "versions": versions})
        count += len(versions)
    return {"count": count, "files": files}


def dump_manifest(doc: JSON) -> str:
    return dumps_indented(doc, 1)
