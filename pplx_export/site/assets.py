"""Asset metadata (fresh signed URLs) and downloads (protocol.md §2.7)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pplx_export.parse.assets import ASSET_FILE_KEYS
from pplx_export.site import constants as C
from pplx_export.site.client import ApiClient
from pplx_export.util.lenient import as_dict, as_str, dicts


@dataclass
class DownloadCandidate:
    url: str = field(repr=False)  # signed: keep it out of reprs and logs
    filename: str = ""
    is_exportable: bool = True
    text_content: str | None = None


@dataclass
class AssetData:
    candidates: list[DownloadCandidate]
    entry_uuid: str = ""
    thread_access: Any = None
    asset_type: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


def extract_candidates(data: dict[str, Any]) -> list[DownloadCandidate]:
    """`download_info[]` entries with a url first, then every file-object key, in order."""
    asset = as_dict(data.get("asset_data")) or data
    out: list[DownloadCandidate] = []
    for info in dicts(asset.get("download_info")):
        url = as_str(info.get("url"))
        if url:
            text = info.get("text_content")
            out.append(
                DownloadCandidate(
                    url,
                    as_str(info.get("filename")),
                    bool(info.get("is_exportable", True)),
                    text if isinstance(text, str) else None,
                )
            )
    for key in ASSET_FILE_KEYS:
        obj = as_dict(asset.get(key))
        url = as_str(obj.get("url"))
        if url:
            out.append(DownloadCandidate(url, as_str(obj.get("filename") or obj.get("name"))))
    return out


def asset_data(client: ApiClient, asset_uuid: str) -> AssetData:
    """Fresh download candidates for an asset. 404 ASSET_NOT_FOUND / 403 ASSET_ACCESS_DENIED
    surface as NotFound / PermissionDenied with `.code` set."""
    path = C.ASSET_DATA_PATH.format(uuid=quote(asset_uuid, safe=""))
    data = as_dict(client.get(path, params=C.STD_QUERY, timeout=C.META_TIMEOUT))
    asset = as_dict(data.get("asset_data"))
    return AssetData(
        candidates=extract_candidates(data),
        entry_uuid=as_str(data.get("entry_uuid") or asset.get("entry_uuid")),
        thread_access=data.get("thread_access", asset.get("thread_access")),
        asset_type=as_str(data.get("asset_type") or asset.get("asset_type")),
        raw=data,
    )


def download(client: ApiClient, url: str, dest_dir: Path, *, timeout: float | None = None) -> Path:
    """Download a signed URL into a temp file in `dest_dir` (not paced); the caller renames."""
    return client.download(url, dest_dir, timeout=timeout)
