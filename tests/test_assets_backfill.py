"""`assets-backfill` against the emulator (protocol §2.7, §5.9, issue 11).

The library served here is the fixture library plus one asset that only a background
(sub-agent) entry lists: a PDF in the e-bike comparison's first sub-agent.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from pplx_export.archive.assets import MANIFEST
from tests.e2e_support import (
    E2E,
    THREAD_ENDPOINT,
    by_endpoint,
    leftover_temp_files,
    redacted,
    served_raw,
)
from tests.fsync_support import record_fsyncs
from tests.upkeep_support import (
    BG_ASSET,
    COMPUTER_UUID,
    EBIKE_UUID,
    TOMAS_EMAIL,
    add_tomas,
    as_json,
    dir_of,
    export_fixture_library,
    library_with_background_asset,
    upkeep_env,
)

ASSET_DATA = "GET /rest/assets/data"
FILES = "GET /__emulator/files"


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return library_with_background_asset(tmp_path_factory.mktemp("lib"))


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory, library: Path) -> Path:
    """Exported while every signed URL was dead (url_ttl 0): the manifests list every
    downloadable version, and no file was downloaded."""
    return export_fixture_library(tmp_path_factory.mktemp("exported"), library=library, url_ttl=0)


@pytest.fixture
def env(tmp_path: Path, exported: Path, library: Path) -> Iterator[E2E]:
    with upkeep_env(tmp_path, exported, library=library) as e:
        yield e


def _versions(thread_dir: Path) -> list[dict[str, Any]]:
    doc = json.loads((thread_dir / MANIFEST).read_text("utf-8"))
    return [v for f in doc["files"] for v in f["versions"]]


def _downloadable(thread_dir: Path) -> list[dict[str, Any]]:
    return [
        v
        for v in _versions(thread_dir)
        if not v.get("extracted_inline")
        and not v.get("no_download_channel")
        and not str(v["uuid"]).startswith("toolu_")
    ]


def test_expired_links_are_revived_through_fresh_urls(
    env: E2E, monkeypatch: pytest.MonkeyPatch
) -> None:
    ebike = dir_of(env, EBIKE_UUID)
    (bg,) = [v for v in _versions(ebike) if v["uuid"] == BG_ASSET]  # a background asset
    assert bg["downloaded_to"] == ""
    # The URL stored in raw_blocks.json is dead: signed with a lifetime of 0 s.
    blocks = json.loads((ebike / "raw_blocks.json").read_text("utf-8"))
    block = blocks["background_entries"][0]["blocks"][-1]
    stored = urlsplit(block["unified_assets_block"]["assets"][0]["pdf_file"]["url"])
    assert "Expires=" in stored.query
    assert httpx.get(f"{env.emu.base_url}{stored.path}?{stored.query}").status_code == 403

    env.emu.mutate(url_ttl=600)
    missing = sum(len(_downloadable(d)) for d in (ebike, dir_of(env, COMPUTER_UUID)))
    env.emu.reset_stats()
    calls = record_fsyncs(monkeypatch)
    result = env.cli("assets-backfill", "--online", "--json")
    assert result.exit_code == 0, result.output
    doc = as_json(result.stdout)
    assert doc["downloaded"] >= missing and doc["failed"] == 0
    stats = env.stats()
    assert by_endpoint(stats, ASSET_DATA) == doc["downloaded"] == by_endpoint(stats, FILES)
    for thread_dir in (ebike, dir_of(env, COMPUTER_UUID)):
        for v in _downloadable(thread_dir):
            data = (thread_dir / v["downloaded_to"]).read_bytes()
            assert v["size"] == len(data) and v["sha256"] == hashlib.sha256(data).hexdigest()
    (bg,) = [v for v in _versions(ebike) if v["uuid"] == BG_ASSET]
    assert bg["downloaded_to"] == "assets/files/range_table.pdf"
    # The downloads and the manifest recording them are the only copies: durable.
    real = ebike.resolve()
    for rel in (bg["downloaded_to"], MANIFEST):
        assert calls.durable(str(real / rel)) is not None, rel
    assert (ebike / bg["downloaded_to"]).read_bytes().startswith(b"%PDF")
    assert leftover_temp_files(env.out) == []
    # The pages were rendered again: they link the downloads, none says "not downloaded".
    pages = (ebike / "conversation.md").read_text("utf-8")
    assert "](assets/files/range_table.pdf) · v1 · " in pages
    assert "not downloaded yet" not in pages

    # Re-render keeps what the backfill recorded; a rerun asks nothing.
    before = (ebike / MANIFEST).read_bytes()
    assert env.offline("re-render").exit_code == 0
    assert (ebike / MANIFEST).read_bytes() == before
    env.emu.reset_stats()
    again = as_json(env.cli("assets-backfill", "--online", "--json").stdout)
    assert again["downloaded"] == 0 and env.stats()["total"] == 0


def test_a_purged_asset_is_marked_expired_for_good(env: E2E) -> None:
    env.emu.mutate(url_ttl=600)
    env.emu.mutate(purge_asset=BG_ASSET)
    doc = as_json(env.cli("assets-backfill", "--online", "--json").stdout)
    assert doc["asset_expired"] == 1
    (bg,) = [v for v in _versions(dir_of(env, EBIKE_UUID)) if v["uuid"] == BG_ASSET]
    assert bg["asset_expired"] is True and bg["downloaded_to"] == ""
    env.emu.reset_stats()
    as_json(env.cli("assets-backfill", "--online", "--json").stdout)
    assert by_endpoint(env.stats(), ASSET_DATA) == 0  # terminal: never asked again


def test_access_denied_is_retried_once_with_the_folder_owner(env: E2E) -> None:
    add_tomas(env)  # tomas: display name = his folder, signed in next to maya
    env.emu.mutate(url_ttl=600)
    env.emu.mutate(own=COMPUTER_UUID, email=TOMAS_EMAIL)
    wanted = len(_downloadable(dir_of(env, COMPUTER_UUID)))
    result = env.cli("assets-backfill", "--online", "--json")
    assert result.exit_code == 0, result.output
    doc = as_json(result.stdout)
    assert doc["retried_with_owner"] == wanted and doc["failed"] == 0
    assert all(v["downloaded_to"] for v in _downloadable(dir_of(env, COMPUTER_UUID)))


def test_offline_phase_restores_inline_files_and_handles_with_zero_requests(
    env: E2E, monkeypatch: pytest.MonkeyPatch
) -> None:
    thread_dir = dir_of(env, COMPUTER_UUID)
    inline = [v for v in _versions(thread_dir) if v.get("extracted_inline")]
    handles = [v for v in _versions(thread_dir) if v.get("no_download_channel")]
    assert inline and handles
    # An archive of the earlier tool: no inline files, no manifest.
    shutil.rmtree(thread_dir / "assets")
    env.emu.reset_stats()
    calls = record_fsyncs(monkeypatch)
    result = env.cli("assets-backfill", "--json")
    assert result.exit_code == 0, result.output
    assert env.stats()["total"] == 0
    doc = as_json(result.stdout)
    assert doc["inline_written"] == len(inline) and doc["manifests_updated"] == 1
    assert [v for v in _versions(thread_dir) if v.get("extracted_inline")] == inline
    assert [v for v in _versions(thread_dir) if v.get("no_download_channel")] == handles
    manifest = json.loads((thread_dir / MANIFEST).read_text("utf-8"))
    assert manifest["count"] == sum(len(f["versions"]) for f in manifest["files"])
    for v in inline:
        assert (thread_dir / v["downloaded_to"]).read_text("utf-8").strip()
    # Written durably: an archive of the earlier tool has no other copy of the manifest.
    real = thread_dir.resolve()
    for rel in [MANIFEST, *(v["downloaded_to"] for v in inline)]:
        assert calls.durable(str(real / rel)) is not None, rel


def test_fetch_blocks_completes_an_archive_of_the_earlier_tool(env: E2E) -> None:
    # This emulator's URLs do not expire (no url_ttl): served pages compare byte for byte.
    thread_dir = dir_of(env, EBIKE_UUID)
    (thread_dir / "raw_blocks.json").unlink()
    shutil.rmtree(thread_dir / "assets")
    conversation = (thread_dir / "conversation.md").read_text("utf-8")
    offline = as_json(env.cli("assets-backfill", "--json").stdout)
    assert offline["manifests_updated"] == 0 and not (thread_dir / "assets").exists()
    env.emu.reset_stats()
    result = env.cli("assets-backfill", "--fetch-blocks", "--json")
    assert result.exit_code == 0, result.output
    assert as_json(result.stdout)["blocks_fetched"] == 1
    assert env.stats()["by_thread"] == {EBIKE_UUID: by_endpoint(env.stats(), THREAD_ENDPOINT)}
    stored = json.loads((thread_dir / "raw_blocks.json").read_text("utf-8"))
    assert redacted(stored) == redacted(served_raw(env.emu, EBIKE_UUID, schematized=True))
    assert all(v["downloaded_to"] for v in _downloadable(thread_dir))
    # The same page, but its file list now links the download it reported missing.
    now = (thread_dir / "conversation.md").read_text("utf-8")
    assert now.split("\n## Files\n")[0] == conversation.split("\n## Files\n")[0]
    assert "not downloaded yet" in conversation.split("\n## Files\n")[1]
    assert "not downloaded yet" not in now.split("\n## Files\n")[1]
    assert env.state()[EBIKE_UUID]["status"] == "ok"
