"""Assets (protocol.md §5.9, §2.8): discovery, versions, names, inline and handle-only ones.

Everything here is pure; downloading is the caller's job. `resolve_ext` decides the final
extension from the URL and the first bytes of a download.

Long because discovering assets, naming their files and deciding their extensions are one
set of pure rules over the same raw shapes (file objects, inline diffs and code, handle-only
ones), and the export's downloads and `assets-backfill` must name a file the same way.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from pplx_export.models import Asset, ReportInfo
from pplx_export.util.lenient import as_dict, as_str, dicts, first_str, lenient_int

KNOWN_EXTS = frozenset(
    {
        *("md", "markdown", "pptx", "pdf", "docx", "xlsx", "csv", "py", "tex", "png", "jpg"),
        *("jpeg", "gif", "svg", "txt", "json", "html", "mp3", "r", "sh", "mmd", "yaml", "yml"),
        *("js", "sql", "zip"),
    }
)
ASSET_TYPE_EXT = {
    "SLIDES": "pptx",
    "DOC_FILE": "md",
    "RESEARCH_REPORT": "md",
    "PDF_FILE": "pdf",
    "DOCX_FILE": "docx",
    "XLSX_FILE": "xlsx",
    "CODE_FILE": "",
    "AUDIO_FILE": "mp3",
}
HANDLE_ONLY_TYPES = frozenset({"DOC_FILE", "CODE_FILE", "UNKNOWN", ""})
INLINE_TYPES = {"ASSET_DIFF": "diff", "CODE_ASSET": "code"}
URL_EXTS = (
    ".png",
    ".jpg",
    ".jpeg",
    ".gif",
    ".svg",
    ".pdf",
    ".pptx",
    ".docx",
    ".md",
    ".csv",
    ".txt",
    ".py",
    ".json",
    ".html",
)
TEXT_SUFFIXES = (
    ".r",
    ".py",
    ".sh",
    ".mmd",
    ".csv",
    ".json",
    ".html",
    ".js",
    ".sql",
    ".yaml",
    ".txt",
    ".md",
)
OOXML = {"docx": "DOCX_FILE", "xlsx": "XLSX_FILE", "pptx": "SLIDES"}
_UNSAFE = re.compile(r"[^\w\u4e00-\u9fff.-]+")

# Asset file-object keys of `/rest/assets/<uuid>/data` (protocol §2.7), in extraction order.
ASSET_FILE_KEYS: tuple[str, ...] = (
    "doc_file",
    "slide_file",
    "research_report",
    "pdf_file",
    "docx_file",
    "code_file",
    "xlsx_file",
    "audio_file",
    "chart",
    "quiz",
    "model_3d",
    "app",
)


def safe_stem(name: str) -> str:
    """§6.11: runs of characters other than word chars, CJK, `.` and `-` become `_`."""
    return _UNSAFE.sub("_", name) if name else "file"


# ----------------------------------------------------------------------------- discovery


def candidate_assets(entries: list[Any]) -> list[dict[str, Any]]:
    """Per block: `unified_assets_block.assets`, else every `plan_block.steps[].assets`."""
    out: list[dict[str, Any]] = []
    for entry in dicts(entries):
        for block in dicts(entry.get("blocks")):
            unified = block.get("unified_assets_block")
            if isinstance(unified, dict):
                out.extend(dicts(unified.get("assets")))
                continue
            plan = as_dict(block.get("plan_block"))
            for step in dicts(plan.get("steps")):
                out.extend(dicts(step.get("assets")))
    # Not in §5.9: the same asset listed by two blocks would otherwise become two
    # "versions" of itself (and two downloads); the first listing of a uuid wins.
    seen: set[str] = set()
    unique = []
    for asset in out:
        uuid = as_str(asset.get("uuid"))
        if uuid and uuid in seen:
            continue
        seen.add(uuid)
        unique.append(asset)
    return unique


def file_object(asset: dict[str, Any]) -> dict[str, Any]:
    for key in ASSET_FILE_KEYS:
        value = asset.get(key)
        if isinstance(value, dict) and value:
            return value
    return {}


def download_url(asset: dict[str, Any]) -> str:
    url = as_str(file_object(asset).get("url"))
    if url:
        return url
    for key in ("download_info", "preview_info"):
        for info in dicts(asset.get(key)):
            found = as_str(info.get("url")) or as_str(info.get("s3_url"))
            if found:
                return found
    return ""


def asset_filename(asset: dict[str, Any]) -> str:
    fobj = file_object(asset)
    # Not in §5.9: an asset without a file object still names itself in download_info
    # (§2.7 uses that name too); it beats falling back to the bare uuid.
    info_name = next((as_str(i.get("filename")) for i in dicts(asset.get("download_info"))), "")
    return (
        first_str(fobj, "filename", "file_name", "name")
        or info_name
        or as_str(asset.get("title"))
        or as_str(asset.get("uuid"))
    )


def asset_type_of(asset: dict[str, Any]) -> str:
    kind = as_str(asset.get("asset_type"))
    if kind:
        return kind
    return "RESEARCH_REPORT" if asset.get("research_report") else ""


def dest_name(filename: str, asset_type: str, version: str, n_versions: int) -> str:
    stem, dot, ext = filename.rpartition(".")
    if not (dot and ext.lower() in KNOWN_EXTS):
        stem, ext = filename, ASSET_TYPE_EXT.get(asset_type, "bin") if asset_type else "bin"
    stem = safe_stem(stem)
    if n_versions > 1:
        stem = f"{stem}_{version}"
    return f"{stem}.{ext}" if ext else stem


# ------------------------------------------------------------------------------ assembly


def downloadable_assets(raw_assets: list[dict[str, Any]]) -> list[Asset]:
    """Assets with a URL, grouped by filename, versions by lenient-int created_at."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for asset in raw_assets:
        if not download_url(asset):
            continue
        key = asset_filename(asset) or "unknown"
        groups.setdefault(key, []).append(asset)
    out = []
    for filename in sorted(groups):
        members = sorted(groups[filename], key=lambda a: lenient_int(a.get("created_at")))
        n = len(members)
        for i, asset in enumerate(members, start=1):
            kind = asset_type_of(asset)
            version = f"v{i}"
            out.append(
                Asset(
                    uuid=as_str(asset.get("uuid")),
                    asset_type=kind or "UNKNOWN",
                    filename=filename,
                    version=version,
                    n_versions=n,
                    created_at=as_str(asset.get("created_at")),
                    url=download_url(asset),
                    dest_name=dest_name(filename, kind, version, n),
                )
            )
    return out


def diff_text(asset: dict[str, Any]) -> str:
    parts = []
    for f in dicts(as_dict(asset.get("asset_diff")).get("files")):
        name = first_str(f, "filename", "display_path") or "?"
        lines = [f"--- a/{name}", f"+++ b/{name}"]
        for line in dicts(f.get("lines")):
            # Observed kinds: ADD / DELETE / CONTEXT (protocol.md says REMOVE; accept both).
            kind = first_str(line, "kind", "type").upper()
            prefix = "+" if kind == "ADD" else "-" if kind in ("DELETE", "REMOVE") else " "
            lines.append(prefix + first_str(line, "text", "content"))
        parts.append("\n".join(lines))
    return "\n".join(parts)


def diff_changes(asset: dict[str, Any]) -> tuple[str, ...]:
    """The names of the files an ASSET_DIFF changes (`files[].filename`, else its
    `display_path`), each once, in the diff's order."""
    names: list[str] = []
    for f in dicts(as_dict(asset.get("asset_diff")).get("files")):
        name = first_str(f, "filename", "display_path").strip()
        if name and name not in names:
            names.append(name)
    return tuple(names)


def _inline(asset: dict[str, Any]) -> tuple[str, str, str] | None:
    """(kind, name, content) of an ASSET_DIFF / CODE_ASSET, None when blank or another type."""
    kind = INLINE_TYPES.get(asset_type_of(asset))
    if kind is None:
        return None
    uuid = as_str(asset.get("uuid"))
    if kind == "diff":
        files = dicts(as_dict(asset.get("asset_diff")).get("files"))
        name = as_str(as_dict(asset.get("asset_diff")).get("title"))
        name = name or (as_str(files[0].get("filename")) if files else "") or uuid
        content = diff_text(asset)
    else:
        info = next(iter(dicts(asset.get("download_info"))), {})
        content = as_str(info.get("text_content")) or as_str(
            as_dict(asset.get("code")).get("script")
        )
        name = as_str(info.get("filename")) or as_str(asset.get("title")) or uuid
    if not content.strip():
        return None
    return kind, name, content


def _shortest_unique_prefix(uuid: str, others: list[str]) -> str:
    for n in range(8, len(uuid) + 1):
        prefix = uuid[:n]
        if not any(o != uuid and o.startswith(prefix) for o in others):
            return prefix
    return uuid


def inline_assets(raw_assets: list[dict[str, Any]]) -> list[Asset]:
    found = []
    seen: set[str] = set()
    for asset in raw_assets:
        inline = _inline(asset)
        uuid = as_str(asset.get("uuid"))
        if inline is None or (uuid and uuid in seen):
            continue
        seen.add(uuid)
        found.append((asset, *inline))
    stems: dict[str, list[str]] = {}
    for asset, kind, name, _content in found:
        stems.setdefault(f"{safe_stem(name)}.{kind}", []).append(as_str(asset.get("uuid")))
    out = []
    for asset, kind, name, content in found:
        uuid = as_str(asset.get("uuid"))
        base = f"{safe_stem(name)}.{kind}"
        if len(stems[base]) > 1:
            base = f"{base}_{_shortest_unique_prefix(uuid, stems[base])}"
        out.append(
            Asset(
                uuid=uuid,
                asset_type=asset_type_of(asset),
                filename=name,
                version="inline",
                created_at=as_str(asset.get("created_at")),
                dest_name=f"{base}.md",
                extracted_inline=True,
                inline_kind=kind,
                inline_content=content,
                changes=diff_changes(asset) if kind == "diff" else (),
            )
        )
    return out


def handle_only_assets(raw_assets: list[dict[str, Any]]) -> list[Asset]:
    out = []
    seen_uuid: set[str] = set()
    seen_handle: set[str] = set()
    for asset in raw_assets:
        kind = asset_type_of(asset)
        if kind not in HANDLE_ONLY_TYPES or download_url(asset):
            continue
        uuid = as_str(asset.get("uuid"))
        handle = next(
            (
                as_str(p.get("file_handle"))
                for p in dicts(asset.get("preview_info"))
                if as_str(p.get("file_handle"))
            ),
            "",
        )
        if not uuid and not handle:
            continue
        if (uuid and uuid in seen_uuid) or (handle and handle in seen_handle):
            continue
        seen_uuid.add(uuid)
        seen_handle.add(handle)
        out.append(
            Asset(
                uuid=uuid,
                asset_type=kind or "UNKNOWN",
                filename=asset_filename(asset),
                version="v1",
                created_at=as_str(asset.get("created_at")),
                no_download_channel=True,
                file_handle=handle,
            )
        )
    return out


def asset_owners(entries: list[Any]) -> dict[str, str]:
    """Asset uuid -> uuid of the first entry whose blocks list it (the turn that made it)."""
    owners: dict[str, str] = {}
    for entry in dicts(entries):
        owner = as_str(entry.get("uuid"))
        for asset in candidate_assets([entry]):
            owners.setdefault(as_str(asset.get("uuid")), owner)
    return owners


def collect_assets(entries: list[Any]) -> list[Asset]:
    """Downloadable versions, then inline assets, then handle-only registrations."""
    raw = candidate_assets(entries)
    found = downloadable_assets(raw) + inline_assets(raw) + handle_only_assets(raw)
    owners = asset_owners(entries)
    for asset in found:
        asset.entry_uuid = owners.get(asset.uuid, "")
    return found


def report_candidates(info: ReportInfo, assets: list[Asset]) -> list[Asset]:
    """§2.8: assets named like the report (newest first), then other RESEARCH_REPORTs."""
    downloadable = [a for a in assets if a.url and not a.extracted_inline]

    def newest_first(items: list[Asset]) -> list[Asset]:
        return sorted(items, key=lambda a: lenient_int(a.created_at), reverse=True)

    named = [a for a in downloadable if info.file_name and a.filename == info.file_name]
    rest = [a for a in downloadable if a not in named and a.asset_type == "RESEARCH_REPORT"]
    return newest_first(named) + newest_first(rest)


# ----------------------------------------------------------------------- final extension


def _magic_ext(head: bytes, dest: str, asset_type: str) -> str:
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "gif"
    if head.startswith(b"%PDF"):
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        lower = dest.lower()
        for ext in OOXML:
            if lower.endswith("." + ext):
                return ext
        for ext, kind in OOXML.items():
            if asset_type == kind:
                return ext
        return "zip"
    sniff = head[:512].lstrip().lower()
    if sniff.startswith(b"<svg") or b"<svg" in sniff[:200]:
        return "svg"
    if sniff.startswith(b"<?xml"):
        return "xml"
    return ""


def _text_ext(head: bytes, dest: str) -> str:
    try:
        text = head[:2000].decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut at the 2000-byte boundary is still text.
        if exc.start < len(head[:2000]) - 3:
            return ""
        text = head[: exc.start].decode("utf-8")
    lower_name = dest.lower()
    for suffix in TEXT_SUFFIXES:
        if lower_name.endswith(suffix):
            return suffix[1:].upper() if suffix == ".r" else suffix[1:]
    stripped = text.lstrip()
    lowered = stripped.lower()
    if lowered.startswith(("<!doctype", "<html")):
        return "html"
    if stripped.startswith(("{", "[")):
        return "json"
    if (
        any(k in lowered for k in ("flowchart", "graph td", "graph lr"))
        or "sequenceDiagram" in text[:200]
    ):
        return "mmd"
    if stripped.startswith(("#!/bin/bash", "#!/bin/sh", "#!/usr/bin/env")):
        return "sh"
    return "txt"


def resolve_ext(dest_name: str, url: str, head: bytes, asset_type: str) -> str:
    """The final extension (no dot) after download, in §5.9 priority order."""
    path = urlsplit(url).path.lower() if url else ""
    for ext in URL_EXTS:
        if path.endswith(ext):
            return ext[1:]
    magic = _magic_ext(head, dest_name, asset_type)
    if magic:
        return magic
    if head:
        text = _text_ext(head, dest_name)
        if text:
            return text
    return ASSET_TYPE_EXT.get(asset_type) or "bin"


def final_asset_name(dest_name: str, ext: str) -> str:
    """dest_name with its extension swapped for `ext` (no doubled `x.sh.sh`)."""
    stem, dot, old = dest_name.rpartition(".")
    base = stem if dot and stem and old.lower() in KNOWN_EXTS | {"bin"} else dest_name
    if not ext:
        return base
    if base.lower().endswith("." + ext.lower()):
        return base
    return f"{base}.{ext}"
