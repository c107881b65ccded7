"""Assets: loopback URLs in served blocks, metadata, file bytes of the right kind, expiry."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from pplx_export.emulator import RunningEmulator, run_emulator
from tests.emulator_support import STD, client, fetch_pages, sample_uuid
from tools.sample_shapes import uid


@pytest.fixture(scope="module")
def emu() -> Iterator[RunningEmulator]:
    with run_emulator() as running:
        yield running


@pytest.fixture
def http(emu: RunningEmulator) -> Iterator[httpx.Client]:
    with client(emu) as c:
        yield c


def served_assets(http: httpx.Client, key: str) -> list[dict[str, Any]]:
    pages = fetch_pages(http, sample_uuid(key), schematized=True)
    assets = []
    for page in pages:
        for entry in page["entries"]:
            for block in entry["blocks"]:
                assets += block.get("unified_assets_block", {}).get("assets", [])
    return assets


def test_served_asset_urls_point_at_the_emulator(http: httpx.Client, emu: RunningEmulator) -> None:
    assets = served_assets(http, "heat-pumps") + served_assets(http, "ssg")
    urls = []
    for asset in assets:
        for key in ("research_report", "pdf_file", "docx_file", "chart"):
            if key in asset and "url" in asset[key]:
                urls.append(asset[key]["url"])
        urls += [d["url"] for d in asset.get("download_info", []) if "url" in d]
    assert len(urls) >= 8
    assert all(u.startswith(f"{emu.base_url}/__emulator/files/") for u in urls)


def test_a_chart_shown_inside_the_answer_names_the_served_file(http: httpx.Client) -> None:
    """The inline media item and the CHART asset name one file on the live site: served,
    both point at the emulator's copy, so a client can tell it downloaded that picture."""
    pages = fetch_pages(http, sample_uuid("ssg"), schematized=True)
    blocks = [b for p in pages for e in p["entries"] for b in e["blocks"]]
    (inline,) = [b for b in blocks if b.get("intended_usage") == "ask_text_1_images"]
    (item,) = inline["inline_entity_block"]["media_block"]["media_items"]
    (chart,) = [a for a in served_assets(http, "ssg") if a.get("asset_type") == "CHART"]
    assert item["image"] == item["url"] == chart["chart"]["url"]


def test_report_versions_download_as_markdown(http: httpx.Client) -> None:
    reports = [a for a in served_assets(http, "heat-pumps") if a["asset_type"] == "RESEARCH_REPORT"]
    assert len(reports) == 2
    assert {r["research_report"]["filename"] for r in reports} == {"heat-pump-report.md"}
    bodies = [httpx.get(r["research_report"]["url"]).text for r in reports]
    assert bodies[0].startswith("# Heat pumps in cold climates (draft)")
    assert bodies[1].startswith("# Heat pumps in cold climates\n")


@pytest.mark.parametrize(
    ("asset_key", "magic"),
    [("asset:ssg:chart", b"\x89PNG\r\n\x1a\n"), ("asset:ssg:docx", b"PK\x03\x04")],
)
def test_downloads_have_the_right_magic(http: httpx.Client, asset_key: str, magic: bytes) -> None:
    meta = http.get(f"/rest/assets/{uid(asset_key)}/data?{STD}")
    assert meta.status_code == 200
    data = meta.json()
    url = data["asset_data"]["download_info"][0]["url"]
    assert data["asset_data"]["download_info"][0]["is_exportable"] is True
    assert data["entry_uuid"] and data["context_uuid"]
    body = httpx.get(url).content  # CDN stand-in: no cookie needed
    assert body.startswith(magic)
    if magic.startswith(b"PK"):
        assert "word/document.xml" in zipfile.ZipFile(io.BytesIO(body)).namelist()


def test_pdf_bytes(emu: RunningEmulator) -> None:
    # A PDF from the corpus-style name: the kind follows the file extension.
    url = f"{emu.base_url}/__emulator/files/{uid('asset:report:v1')}/export.pdf"
    assert httpx.get(url).content.startswith(b"%PDF")


def test_metadata_url_is_fresh_and_downloadable(http: httpx.Client) -> None:
    data = http.get(f"/rest/assets/{uid('asset:report:v2')}/data?{STD}").json()
    url = data["asset_data"]["research_report"]["url"]
    assert urlsplit(url).query  # a "signed" URL
    assert data["asset_type"] == "RESEARCH_REPORT"
    assert httpx.get(url).text.startswith("# Heat pumps")


def test_expired_and_workspace_assets_are_not_found(http: httpx.Client) -> None:
    expired = uid("asset:field-measurements")
    for asset_uuid in (expired, "toolu_emuNotesFile0001", "no-such-asset"):
        response = http.get(f"/rest/assets/{asset_uuid}/data?{STD}")
        assert response.status_code == 404
        assert "ASSET_NOT_FOUND" in response.text
    pdf = next(a for a in served_assets(http, "heat-pumps") if a["uuid"] == expired)
    assert httpx.get(pdf["pdf_file"]["url"]).status_code == 403  # expired signed link


def test_asset_metadata_needs_the_cookie(emu: RunningEmulator) -> None:
    response = httpx.get(f"{emu.base_url}/rest/assets/{uid('asset:report:v2')}/data?{STD}")
    assert response.status_code == 401


def test_inline_code_asset_text(emu: RunningEmulator) -> None:
    url = f"{emu.base_url}/__emulator/files/{uid('asset:ssg:bench')}/bench.sh"
    assert httpx.get(url).text.startswith("#!/bin/sh")
