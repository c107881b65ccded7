"""Assets found in raw_blocks: discovery, URL rewriting to loopback, and generated file bytes.

Served raw_blocks point every asset URL at `<base>/__emulator/files/<asset uuid>/<name>`,
the emulator's stand-in for the CDN, so downloads work offline. The bytes are generated to
match the file kind (PNG, PDF, OOXML zip, SVG, text) so extension sniffing behaves as on real
files; text bodies come from the manifest's `asset_bodies`, else the asset's inline
`text_content`, else a short generated Markdown note.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from pplx_export.util.lenient import as_dict, as_str, dicts

JSON = dict[str, Any]

URL_KEYS = ("url", "s3_url", "svg_url", "webview_url", "thumbnail")
# File-object keys of `/rest/assets/<uuid>/data` (protocol §2.7). The emulator keeps its own
# list, not the client's: it is the independent stand-in the client is tested against.
FILE_KEYS: tuple[str, ...] = (
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
FILES_PREFIX = "/__emulator/files/"


@dataclass
class AssetRef:
    uuid: str
    thread_uuid: str
    entry_uuid: str
    asset: JSON  # the asset dict as stored (original URLs)


def iter_assets(blocks: JSON) -> list[tuple[str, JSON]]:
    """(entry uuid, asset) for every asset (protocol §5.9 discovery), main entries first, then
    background (sub-agent) entries: their files are served and downloadable too."""
    found: list[tuple[str, JSON]] = []
    for entry in dicts(blocks.get("entries")) + dicts(blocks.get("background_entries")):
        entry_uuid = as_str(entry.get("uuid"))
        for block in dicts(entry.get("blocks")):
            unified = block.get("unified_assets_block")
            if isinstance(unified, dict):
                found.extend((entry_uuid, a) for a in dicts(unified.get("assets")))
                continue
            for step in dicts(as_dict(block.get("plan_block")).get("steps")):
                found.extend((entry_uuid, a) for a in dicts(step.get("assets")))
    return found


def filename_of(asset: JSON) -> str:
    for key in FILE_KEYS:
        obj = asset.get(key)
        if isinstance(obj, dict) and obj:
            for name_key in ("filename", "file_name", "name"):
                name = as_str(obj.get(name_key))
                if name:
                    return name
    return as_str(asset.get("title")) or as_str(asset.get("uuid")) or "file"


def url_name(url: str, fallback: str) -> str:
    path = urlsplit(url).path
    name = path.rsplit("/", 1)[-1]
    return name or fallback


def file_url(base_url: str, asset_uuid: str, name: str) -> str:
    return f"{base_url}{FILES_PREFIX}{quote(asset_uuid, safe='')}/{quote(name, safe='')}"


def rewrite_asset_urls(asset: JSON, base_url: str) -> dict[str, str]:
    """Point every http(s) URL inside the asset (any depth) at the emulator's file endpoint;
    returns what moved (original URL -> served URL)."""
    asset_uuid = as_str(asset.get("uuid"))
    moved: dict[str, str] = {}
    if not asset_uuid:
        return moved
    fallback = filename_of(asset)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in URL_KEYS and isinstance(value, str) and value.startswith("http"):
                    node[key] = moved[value] = file_url(
                        base_url, asset_uuid, url_name(value, fallback)
                    )
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(asset)
    return moved


def rewrite_blocks_page(page: JSON, base_url: str) -> None:
    """In place, on a served (already copied) schematized page. A URL of an asset quoted
    elsewhere on the page (the chart an answer shows inline, as a media item) moves with
    it: on the live site both name the one file."""
    moved: dict[str, str] = {}
    for _entry_uuid, asset in iter_assets(page):
        moved.update(rewrite_asset_urls(asset, base_url))
    if moved:
        _follow(page, moved)


def _follow(node: Any, moved: dict[str, str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, str):
                if value in moved:
                    node[key] = moved[value]
            else:
                _follow(value, moved)
    elif isinstance(node, list):
        for n, item in enumerate(node):
            if isinstance(item, str):
                if item in moved:
                    node[n] = moved[item]
            else:
                _follow(item, moved)


def first_url(asset: JSON) -> tuple[str, str]:
    """(url, filename) the way a client picks its download (file object, then download_info)."""
    for key in FILE_KEYS:
        obj = asset.get(key)
        if isinstance(obj, dict) and as_str(obj.get("url")):
            return as_str(obj.get("url")), filename_of(asset)
    for key in ("download_info", "preview_info"):
        for item in dicts(asset.get(key)):
            url = as_str(item.get("url")) or as_str(item.get("s3_url"))
            if url:
                return url, as_str(item.get("filename")) or filename_of(asset)
    return "", filename_of(asset)


def inline_text(asset: JSON) -> str:
    for item in dicts(asset.get("download_info")):
        text = as_str(item.get("text_content"))
        if text:
            return text
    return ""


# -- generated bytes -------------------------------------------------------------------------


def _png(title: str) -> bytes:
    """A small bar chart (480x240 RGB) whose bars follow the title, so a demo archive's
    embedded chart looks like one (a 2x2 dot read as a stray full stop on the page)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    width, height, base = 480, 240, 210
    seed = zlib.crc32(title.encode("utf-8"))
    bars = [(40 + 90 * i, 50 + (seed >> (5 * i)) % 140) for i in range(5)]  # (x, height)
    white, grid, axis, bar = b"\xff\xff\xff", b"\xe8\xe8\xe8", b"\x60\x60\x60", b"\x33\x66\xcc"
    rows = []
    for y in range(height):
        line = [axis if y == base else grid if y < base and (base - y) % 40 == 0 else white] * width
        line[30] = axis if 10 <= y <= base else line[30]
        for x, tall in bars:
            if base - tall <= y < base:
                line[x : x + 60] = [bar] * 60
        rows.append(b"\x00" + b"".join(line))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"".join(rows), 9))
        + chunk(b"IEND", b"")
    )


def _pdf(title: str) -> bytes:
    text = title.replace("(", "[").replace(")", "]")
    return (
        b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
        b"2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
        b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 300 144]>>endobj\n"
        + f"% {text}\n".encode()
        + b"trailer<</Root 1 0 R>>\n%%EOF\n"
    )


def _ooxml(kind: str, title: str) -> bytes:
    buffer = io.BytesIO()
    stamp = (2026, 1, 1, 0, 0, 0)  # fixed: identical bytes on every run
    parts = {
        "[Content_Types].xml": '<?xml version="1.0" encoding="UTF-8"?><Types '
        'xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>',
        {
            "docx": "word/document.xml",
            "xlsx": "xl/workbook.xml",
            "pptx": "ppt/presentation.xml",
        }.get(kind, "content.xml"): f'<?xml version="1.0" encoding="UTF-8"?><doc>{title}</doc>',
    }
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in parts.items():
            archive.writestr(zipfile.ZipInfo(name, stamp), text)
    return buffer.getvalue()


def generate_bytes(name: str, asset: JSON, body: str = "") -> tuple[bytes, str]:
    """(bytes, content type) for a file named `name` of this asset."""
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    title = filename_of(asset)
    if ext == "png":
        return _png(title), "image/png"
    if ext in ("jpg", "jpeg"):
        return b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 16 + b"\xff\xd9", "image/jpeg"
    if ext == "gif":
        return b"GIF89a\x01\x00\x01\x00\x00\x00\x00;", "image/gif"
    if ext == "pdf":
        return _pdf(title), "application/pdf"
    if ext in ("docx", "xlsx", "pptx", "zip"):
        return _ooxml(ext, title), "application/zip"
    if ext == "svg":
        svg = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>'
        return svg.encode(), "image/svg+xml"
    text = body or inline_text(asset)
    if not text:
        text = (
            f"# {title}\n\nFile generated by the pplx-export emulator "
            f"for asset `{as_str(asset.get('uuid'))}`.\n"
        )
    content_type = "text/markdown" if ext in ("md", "markdown", "") else "text/plain"
    return text.encode("utf-8"), f"{content_type}; charset=utf-8"
