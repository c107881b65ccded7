"""Find a thread's report body on disk for an offline re-render (protocol §2.8).

Preferred: `assets/report_body.md`, the body the online export stored as downloaded.
Fallback for archives of the earlier tool: the report candidates' downloaded files (found
through the assets manifest), accepted by the same rules as online (non-blank, not binary).
If neither exists the caller leaves an existing report.md untouched.
"""

from __future__ import annotations

from pathlib import Path

from pplx_export.archive.assets import FILES_DIR, load_manifest
from pplx_export.archive.writer import REPORT_SOURCE
from pplx_export.models import Conversation

_BINARY_MAGIC = (
    b"\x89PNG\r\n\x1a\n",
    b"\xff\xd8\xff",
    b"GIF87a",
    b"GIF89a",
    b"%PDF",
    b"PK\x03\x04",
)


def looks_binary(data: bytes) -> bool:
    if data.startswith(_BINARY_MAGIC):
        return True
    head = data[:512].lstrip().lower()
    return head.startswith((b"<svg", b"<?xml")) or b"<svg" in head[:200]


def load_report_body(thread_dir: Path, conv: Conversation) -> str | None:
    if conv.report is None:
        return None
    try:
        return (thread_dir / REPORT_SOURCE).read_text(encoding="utf-8")
    except FileNotFoundError:
        pass
    manifest = load_manifest(thread_dir) or {}
    by_uuid: dict[str, list[str]] = {}
    for f in manifest.get("files") or []:
        for v in (f.get("versions") or []) if isinstance(f, dict) else []:
            if isinstance(v, dict) and v.get("downloaded_to"):
                by_uuid.setdefault(str(v.get("uuid")), []).append(str(v["downloaded_to"]))
    for cand in conv.report.candidates:
        for recorded in [cand.downloaded_to, *by_uuid.get(cand.uuid, [])]:
            if not recorded:
                continue
            path = thread_dir / FILES_DIR / Path(recorded).name
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if data.strip() and not looks_binary(data):
                return data.decode("utf-8", errors="replace")
    return None
