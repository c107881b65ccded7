"""The bundled sample's promised contents, replaying the shared corpus, and the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from pplx_export.emulator import SAMPLE_DIR, Library, run_emulator
from pplx_export.emulator.assets import first_url, iter_assets
from pplx_export.parse.interruptions import classify
from tests.emulator_support import client, fetch_pages, graphql_all, rest_all, sample_uuid
from tools.sample_builder import build

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "archive"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/corpus/archive")


def steps_of(entry: dict[str, Any]) -> list[dict[str, Any]]:
    return list(json.loads(entry["text"]))


def wf_blocks(entry: dict[str, Any]) -> list[dict[str, Any]]:
    return [b["workflow_block"] for b in entry.get("blocks", []) if "workflow_block" in b]


def payloads(block: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for step in block.get("steps", []):
        for item in step.get("items", []):
            wp = item.get("payload", {}).get("workflow_payload")
            if wp:
                found.append(wp)
    return found


def parse_ts(value: str) -> datetime:
    return datetime.fromisoformat(value).astimezone(UTC)


@pytest.fixture(scope="module")
def library() -> Library:
    return Library.load()


def test_sample_is_current_with_its_builder(tmp_path: Path) -> None:
    build(tmp_path / "fresh")
    shipped = {p.relative_to(SAMPLE_DIR): p.read_bytes() for p in SAMPLE_DIR.rglob("*.json")}
    fresh_root = tmp_path / "fresh"
    fresh = {p.relative_to(fresh_root): p.read_bytes() for p in fresh_root.rglob("*.json")}
    assert shipped == fresh, "run: python -m tools.sample_builder"


def test_sample_covers_every_mode_and_four_spaces(library: Library) -> None:
    records = list(library.iter_threads())
    assert {r.mode for r in records} == {"search", "deep-research", "computer", "council", "study"}
    # Ocean Notes, Kitchen Lab, Garden Club (shared with bob) and Team Roadmap (denied)
    assert len({r.space_uuid for r in records if r.space_uuid}) == 4
    states = {r.uuid: r.state for r in records}
    assert states[sample_uuid("packing")] == "deleted"
    assert states[sample_uuid("summer")] == "expired"
    assert sum(s == "ok" for s in states.values()) == len(records) - 2
    # Step lists everywhere but in the three threads whose answer lives elsewhere (§9.1;
    # test_emulator_live_shapes.py checks those).
    other_forms = {sample_uuid(k) for k in ("bike-chain", "houseplant", "soft-egg")}
    for record in records:
        if record.uuid in other_forms:
            continue
        for entry in record.entries:
            assert isinstance(entry["text"], str)  # plain steps travel as a JSON string
            for step in steps_of(entry):
                if step["step_type"] == "FINAL":
                    assert isinstance(step["content"]["answer"], str)


def test_computer_sub_agents_anchored_stub_and_unassigned(library: Library) -> None:
    record = library.get(sample_uuid("ssg"))
    assert record is not None and record.blocks is not None
    main = record.blocks["entries"]
    anchored = {wp["id"] for e in main for b in wf_blocks(e) for wp in payloads(b)}
    stub = next(e for e in main if e.get("trigger") == "subagent_result")
    assert stub["blocks"] == []
    stub_time = parse_ts(stub["entry_created_datetime"])
    top = [(wp, bg) for bg in record.blocks["background_entries"] for b in wf_blocks(bg)
           for wp in payloads(b)]  # fmt: skip
    assert len(top) == 3
    in_window = [
        wp["id"]
        for wp, _ in top
        if wp["id"] not in anchored
        and abs((parse_ts(wp["completed_at"]) - stub_time).total_seconds()) <= 10
    ]
    unassigned = [
        wp["id"] for wp, _ in top if wp["id"] not in anchored and wp["id"] not in in_window
    ]
    assert len(anchored & {wp["id"] for wp, _ in top}) == 1
    assert len(in_window) == 1
    assert len(unassigned) == 1
    bg_plain = {e["uuid"] for e in record.plain["background_entries"]}
    assert bg_plain == {bg["uuid"] for _, bg in top}


def test_interrupted_and_canceled_workflows(library: Library) -> None:
    limited = library.get(sample_uuid("newsletter"))
    assert limited is not None and limited.blocks is not None
    assert limited.plain["thread_metadata"]["locked_reason"] == "spending_limit_exceeded"
    block = wf_blocks(limited.blocks["entries"][0])[0]
    entry_lock = limited.blocks["entries"][0]["locked_reason"]
    assert classify(block["status"], entry_lock) == "limit_interrupted"
    bg = limited.blocks["background_entries"][0]
    assert classify(wf_blocks(bg)[0]["status"], bg["locked_reason"]) == "limit_interrupted"
    canceled = library.get(sample_uuid("receipts"))
    assert canceled is not None and canceled.blocks is not None
    statuses = [wf_blocks(e)[0]["status"] for e in canceled.blocks["entries"]]
    assert [classify(s) for s in statuses] == ["completed", "canceled"]


def test_council_has_three_models(library: Library) -> None:
    record = library.get(sample_uuid("notes"))
    assert record is not None and record.blocks is not None
    block = wf_blocks(record.blocks["entries"][0])[0]
    assert block["mode"] == "LLM_COUNCIL"
    members = payloads(block)
    assert len(members) == 3 and all(m["mode"] == "LLM_COUNCIL" for m in members)
    assert record.entries[0]["search_mode"] == "AGENTIC_RESEARCH"
    assert any(s["step_type"] == "COUNCIL_RESEARCH" for s in steps_of(record.entries[0]))


def test_deep_research_report_versions_and_expired_asset(library: Library) -> None:
    record = library.get(sample_uuid("heat-pumps"))
    assert record is not None and record.blocks is not None
    steps = steps_of(record.entries[0])
    report = [s for s in steps if s["step_type"] == "RESEARCH_ANSWER"][-1]["content"]
    assets = [
        a
        for b in record.blocks["entries"][0]["blocks"]
        for a in b.get("unified_assets_block", {}).get("assets", [])
    ]
    reports = [a for a in assets if a["asset_type"] == "RESEARCH_REPORT"]
    assert [a["research_report"]["filename"] for a in reports] == [report["file_name"]] * 2
    assert len({a["created_at"] for a in reports}) == 2
    assert {a["uuid"] for a in assets} & library.expired_assets


def test_answer_variant_and_study(library: Library) -> None:
    record = library.get(sample_uuid("basil"))
    assert record is not None
    meta = record.entries[0]["side_by_side_metadata"]
    assert meta["sibling_uuid"] and meta["selection_status"] == "SELECTED"
    control = record.entries[1]["side_by_side_metadata"]
    assert control["experiment_role"].startswith("[control]")
    study = library.get(sample_uuid("bayes"))
    assert study is not None and study.entries[0]["search_mode"] == "STUDY"


# -- replaying other archives ----------------------------------------------------------------


@pytest.mark.skipif(
    not CORPUS.is_dir(),
    reason="needs the shared corpus at ../shared/corpus/archive (not in a fresh clone)",
)
def test_corpus_archive_is_listed_and_fetchable() -> None:
    expected = {p.parent for p in CORPUS.glob("*/*/*/raw_entries.json")}
    downloads = 0
    with run_emulator(CORPUS, page_size=3, listing="both") as emu, client(emu) as http:
        nodes = graphql_all(http, count=5)
        assert len(nodes) == len(expected)
        assert [r["uuid"] for r in rest_all(http)] == [n["entryId"] for n in nodes]
        for node in nodes:
            record = emu.library.get(node["entryId"])
            assert record is not None
            thread_dir = CORPUS / record.source_dir
            raw = json.loads((thread_dir / "raw_entries.json").read_text())
            plain = fetch_pages(http, node["entryId"])
            assert [e["uuid"] for p in plain for e in p["entries"]] == [
                e["uuid"] for e in raw["entries"]
            ]
            assert sum(len(p["background_entries"]) for p in plain) == len(
                raw["background_entries"]
            )
            schem = fetch_pages(http, node["entryId"], schematized=True)
            assert sum(len(p["entries"]) for p in schem) >= 1
            for page in schem:
                for _entry_uuid, asset in iter_assets(page):
                    url, _name = first_url(asset)
                    if url:
                        assert url.startswith(emu.base_url), url
                        downloads += 1
                        assert httpx.get(url).status_code == 200
        assert downloads >= 2  # the corpus has a chart and a cloudfront PDF


# -- the command line ------------------------------------------------------------------------


def test_command_line_prints_base_url_first(tmp_path: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "pplx_export.emulator", "--port", "0", "--page-size", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    ) as proc:
        try:
            assert proc.stdout is not None
            base_url = proc.stdout.readline().strip()
            assert base_url.startswith("http://127.0.0.1:")
            cookies = json.loads((SAMPLE_DIR.parent / "sample_cookies.json").read_text())
            with httpx.Client(base_url=base_url, cookies=cookies, timeout=10) as http:
                assert http.get("/api/auth/session").status_code == 200
                assert len(fetch_pages(http, sample_uuid("sourdough"))) == 6
        finally:
            proc.terminate()
            proc.wait(timeout=60)


def test_command_line_rejects_bad_faults() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pplx_export.emulator", "--faults", "nonsense=1"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert result.returncode == 2
    assert "unknown fault" in result.stderr
    assert result.stdout == ""


def test_command_line_extra_accounts() -> None:
    from pplx_export.emulator.__main__ import parse_accounts

    assert parse_accounts(["t1:bob@example.org:Bob", "t2:carol@example.org"]) == {
        "t1": ("bob@example.org", "Bob"),
        "t2": ("carol@example.org", "carol"),
    }
    with pytest.raises(ValueError):
        parse_accounts(["no-email"])
