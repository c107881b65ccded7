"""Asset metadata (fresh signed URLs) and the CDN stand-in that serves the bytes (protocol §2.7)."""

from __future__ import annotations

from urllib.parse import unquote

from pplx_export.emulator import assets as assetlib
from pplx_export.emulator.app import Emulator
from pplx_export.emulator.http import Request, Response, error, json_response
from pplx_export.util.lenient import as_str

XML = "application/xml"


def find_asset(app: Emulator, asset_uuid: str) -> assetlib.AssetRef | None:
    for record in app.library.iter_threads():
        if record.blocks is None:
            continue
        for entry_uuid, asset in assetlib.iter_assets(record.blocks):
            if as_str(asset.get("uuid")) == asset_uuid:
                return assetlib.AssetRef(asset_uuid, record.uuid, entry_uuid, asset)
    return None


def _asset_not_found() -> Response:
    return error(404, "ASSET_NOT_FOUND", "Asset not found")


def asset_data(req: Request) -> Response:
    asset_uuid = req.path[len("/rest/assets/") : -len("/data")]
    app = req.app
    if asset_uuid.startswith("toolu_") or asset_uuid in app.library.expired_assets:
        return _asset_not_found()
    ref = find_asset(app, asset_uuid)
    if ref is None:
        return _asset_not_found()
    url, filename = assetlib.first_url(ref.asset)
    if not url:
        return _asset_not_found()
    fresh = assetlib.file_url(app.base_url, asset_uuid, assetlib.url_name(url, filename))
    fresh += "?Expires=4102444800&Signature=emulator-fresh"
    asset_type = as_str(ref.asset.get("asset_type")) or (
        "RESEARCH_REPORT" if ref.asset.get("research_report") else "UNKNOWN"
    )
    file_key = next(
        (k for k in assetlib.FILE_KEYS if isinstance(ref.asset.get(k), dict)), "doc_file"
    )
    record = app.library.get(ref.thread_uuid)
    return json_response(
        200,
        {
            "asset_data": {
                "download_info": [{"url": fresh, "filename": filename, "is_exportable": True}],
                file_key: {"url": fresh, "filename": filename},
            },
            "entry_uuid": ref.entry_uuid,
            "context_uuid": record.context_uuid if record else "",
            "source_thread_path": f"/search/{ref.thread_uuid}",
            "thread_access": 1,
            "is_owner": True,
            "has_owning_space": bool(record and record.space_uuid),
            "asset_type": asset_type,
            "signed_url": None,
            "read_write_token": None,
            "allow_remix": False,
        },
    )


def serve_file(app: Emulator, path: str) -> Response:
    """The CDN stand-in. No cookie needed (signed URLs carry their own authorisation)."""
    parts = path[len(assetlib.FILES_PREFIX) :].split("/")
    if len(parts) != 2:
        return error(404, "NOT_FOUND")
    asset_uuid, name = unquote(parts[0]), unquote(parts[1])
    if asset_uuid in app.library.expired_assets:
        # What an expired CloudFront signed URL answers.
        return Response(403, b"<?xml version='1.0'?><Error><Code>AccessDenied</Code></Error>", XML)
    ref = find_asset(app, asset_uuid)
    if ref is None:
        return Response(404, b"<Error><Code>NoSuchKey</Code></Error>", XML)
    data, content_type = assetlib.generate_bytes(
        name, ref.asset, app.library.asset_bodies.get(asset_uuid, "")
    )
    return Response(200, data, content_type)
