"""§5.9 assets: discovery, versions, names, inline, handle-only, final extension."""

from __future__ import annotations

from typing import Any

import pytest

from pplx_export.models import ReportInfo
from pplx_export.parse import final_asset_name, resolve_ext, safe_stem
from pplx_export.parse.assets import collect_assets, dest_name, report_candidates


def entries(*assets: Any, plan_assets: list[Any] | None = None) -> list[dict[str, Any]]:
    blocks: list[Any] = [
        {"intended_usage": "unified_assets", "unified_assets_block": {"assets": list(assets)}}
    ]
    if plan_assets is not None:
        blocks.append(
            {"intended_usage": "plan", "plan_block": {"steps": [{"assets": plan_assets}, "junk"]}}
        )
    return [{"uuid": "e", "blocks": blocks}, "junk"]  # type: ignore[list-item]  # junk on purpose


def test_discovery_urls_filenames_and_types() -> None:
    assets = collect_assets(
        entries(
            {
                "uuid": "u1",
                "asset_type": "PDF_FILE",
                "pdf_file": {"name": "main", "filename": "main.pdf", "url": "https://c/main.pdf"},
            },
            {
                "uuid": "u2",
                "research_report": {"file_name": "r.md"},
                "download_info": [{"filename": "x"}, {"url": "https://c/r"}],
            },
            {
                "uuid": "u3",
                "asset_type": "CHART",
                "preview_info": [{"s3_url": "https://c/p.png"}],
                "title": "Chart title",
            },
            "junk",
            plan_assets=[
                {
                    "uuid": "u4",
                    "asset_type": "SLIDES",
                    "slide_file": {"filename": "deck", "url": "https://c/d"},
                }
            ],
        )
    )
    got = {(a.uuid, a.asset_type, a.filename, a.url, a.dest_name) for a in assets}
    assert got == {
        ("u1", "PDF_FILE", "main.pdf", "https://c/main.pdf", "main.pdf"),
        ("u2", "RESEARCH_REPORT", "r.md", "https://c/r", "r.md"),
        ("u3", "CHART", "Chart title", "https://c/p.png", "Chart_title.bin"),
        ("u4", "SLIDES", "deck", "https://c/d", "deck.pptx"),
    }


def test_versions_grouped_by_filename_sorted_by_lenient_created_at() -> None:
    assets = collect_assets(
        entries(
            {
                "uuid": "b",
                "asset_type": "DOC_FILE",
                "doc_file": {"filename": "n.md", "url": "u2"},
                "created_at": "20",
            },
            {
                "uuid": "a",
                "asset_type": "DOC_FILE",
                "doc_file": {"filename": "n.md", "url": "u1"},
                "created_at": "3",
            },
            {
                "uuid": "c",
                "asset_type": "DOC_FILE",
                "doc_file": {"filename": "n.md", "url": "u3"},
                "created_at": None,
            },
        )
    )
    assert [(a.uuid, a.version, a.n_versions, a.dest_name) for a in assets] == [
        ("c", "v1", 3, "n_v1.md"),
        ("a", "v2", 3, "n_v2.md"),
        ("b", "v3", 3, "n_v3.md"),
    ]


@pytest.mark.parametrize(
    ("filename", "kind", "expected"),
    [
        ("notes.MD", "DOC_FILE", "notes.MD"),
        ("data.weird", "DOC_FILE", "data.weird.md"),
        ("script", "CODE_FILE", "script"),
        ("x", "", "x.bin"),
        ("x", "CHART", "x.bin"),
        ("my report (final).docx", "DOCX_FILE", "my_report_final_.docx"),
        ("数据.csv", "UNKNOWN", "数据.csv"),
        (".md", "DOC_FILE", "file.md"),
    ],
)
def test_dest_name(filename: str, kind: str, expected: str) -> None:
    assert dest_name(filename, kind, "v1", 1) == expected


def test_safe_stem() -> None:
    assert safe_stem("a b/c:d") == "a_b_c_d"
    assert safe_stem("") == "file"
    assert safe_stem("测试-1.2") == "测试-1.2"


def test_inline_assets_and_collisions() -> None:
    diff = {
        "uuid": "d1234567-aaaa",
        "asset_type": "ASSET_DIFF",
        "asset_diff": {
            "files": [
                {
                    "display_path": "p/x.py",
                    "lines": [
                        {"kind": "REMOVE", "text": "a"},
                        {"kind": "ADD", "text": "b"},
                        {"kind": "WEIRD", "text": "c"},
                        "junk",
                    ],
                }
            ]
        },
    }
    code1 = {
        "uuid": "c1234567-1111",
        "asset_type": "CODE_ASSET",
        "download_info": [{"filename": "s.py", "text_content": "print(1)"}],
    }
    code2 = {
        "uuid": "c1234567-2222",
        "asset_type": "CODE_ASSET",
        "code": {"script": "print(2)"},
        "title": "s.py",
    }
    blank = {"uuid": "blank", "asset_type": "CODE_ASSET", "code": {"script": "   "}}
    assets = collect_assets(entries(diff, code1, code2, blank, dict(code1)))
    assert [(a.uuid, a.dest_name, a.inline_kind) for a in assets] == [
        ("d1234567-aaaa", "d1234567-aaaa.diff.md", "diff"),
        ("c1234567-1111", "s.py.code_c1234567-1.md", "code"),
        ("c1234567-2222", "s.py.code_c1234567-2.md", "code"),
    ]
    assert assets[0].inline_content == "--- a/p/x.py\n+++ b/p/x.py\n-a\n+b\n c"
    assert all(a.extracted_inline and a.version == "inline" for a in assets)


def test_handle_only_registration_and_dedupe() -> None:
    assets = collect_assets(
        entries(
            {
                "uuid": "toolu_1",
                "asset_type": "DOC_FILE",
                "doc_file": {"filename": "a.md"},
                "preview_info": [{"type": "x"}, {"file_handle": "file:a"}],
            },
            {
                "uuid": "toolu_1",
                "asset_type": "DOC_FILE",
                "preview_info": [{"file_handle": "file:other"}],
            },
            {"uuid": "toolu_2", "preview_info": [{"file_handle": "file:a"}]},
            {"uuid": "", "asset_type": "UNKNOWN", "preview_info": [{"file_handle": "file:b"}]},
            {"uuid": "", "asset_type": "UNKNOWN"},
            {"uuid": "x", "asset_type": "PDF_FILE"},  # not a handle-only type, no URL: nothing
        )
    )
    assert [(a.uuid, a.asset_type, a.file_handle, a.no_download_channel) for a in assets] == [
        ("toolu_1", "DOC_FILE", "file:a", True),
        ("", "UNKNOWN", "file:b", True),
    ]


def test_report_candidates_named_first_then_other_reports_newest_first() -> None:
    assets = collect_assets(
        entries(
            {
                "uuid": "r1",
                "asset_type": "RESEARCH_REPORT",
                "research_report": {"filename": "rep.md", "url": "u"},
                "created_at": "1",
            },
            {
                "uuid": "r2",
                "asset_type": "RESEARCH_REPORT",
                "research_report": {"filename": "rep.md", "url": "u"},
                "created_at": "5",
            },
            {
                "uuid": "o1",
                "asset_type": "RESEARCH_REPORT",
                "research_report": {"filename": "old.md", "url": "u"},
                "created_at": "2",
            },
            {
                "uuid": "o2",
                "asset_type": "RESEARCH_REPORT",
                "research_report": {"filename": "older.md", "url": "u"},
                "created_at": "9",
            },
            {
                "uuid": "p",
                "asset_type": "PDF_FILE",
                "pdf_file": {"filename": "rep.pdf", "url": "u"},
            },
        )
    )
    got = report_candidates(ReportInfo(title="t", file_name="rep.md"), assets)
    assert [a.uuid for a in got] == ["r2", "r1", "o2", "o1"]
    assert [a.uuid for a in report_candidates(ReportInfo(), assets)] == ["o2", "r2", "o1", "r1"]


@pytest.mark.parametrize(
    ("dest", "url", "head", "kind", "ext"),
    [
        ("a.md", "https://c/x/file.PNG?sig=1", b"text", "DOC_FILE", "png"),
        ("a.bin", "https://c/x", b"\x89PNG\r\n\x1a\n....", "", "png"),
        ("a.bin", "", b"\xff\xd8\xff\xe0", "", "jpg"),
        ("a.bin", "", b"GIF89a", "", "gif"),
        ("a.md", "", b"%PDF-1.7", "DOC_FILE", "pdf"),
        ("deck.pptx", "", b"PK\x03\x04zz", "", "pptx"),
        ("a.bin", "", b"PK\x03\x04zz", "XLSX_FILE", "xlsx"),
        ("a.bin", "", b"PK\x03\x04zz", "", "zip"),
        ("a.bin", "", b"  \n<SVG xmlns='x'>", "", "svg"),
        ("a.bin", "", b"<!-- c --><svg>", "", "svg"),
        ("a.bin", "", b"<?xml version='1.0'?><root/>", "", "xml"),
        ("run.sh", "", b"echo hi", "CODE_FILE", "sh"),
        ("model.r", "", b"x <- 1", "CODE_FILE", "R"),
        ("page", "", b"<!DOCTYPE html><html>", "CODE_FILE", "html"),
        ("data", "", b'  {"a": 1}', "CODE_FILE", "json"),
        ("chart", "", b"flowchart TD\n A-->B", "CODE_FILE", "mmd"),
        ("chart", "", b"sequenceDiagram\n A->>B: hi", "CODE_FILE", "mmd"),
        ("tool", "", b"#!/usr/bin/env python3\nprint()", "CODE_FILE", "sh"),
        ("notes", "", "plain text é".encode(), "CODE_FILE", "txt"),
        ("notes", "", b"\xff\xfe\x00binary\x00\x81", "AUDIO_FILE", "mp3"),
        ("notes", "", b"", "", "bin"),
        ("notes", "", ("é" * 1000).encode()[:2001], "", "txt"),  # a character cut at the edge
    ],
)
def test_resolve_ext(dest: str, url: str, head: bytes, kind: str, ext: str) -> None:
    assert resolve_ext(dest, url, head, kind) == ext


@pytest.mark.parametrize(
    ("dest", "ext", "name"),
    [
        ("report.md", "pdf", "report.pdf"),
        ("run.sh", "sh", "run.sh"),
        ("run.sh.bin", "sh", "run.sh"),
        ("script", "py", "script.py"),
        ("data.weird.md", "txt", "data.weird.txt"),
        ("tools.start", "sh", "tools.start.sh"),
        ("x.md", "", "x"),
    ],
)
def test_final_asset_name(dest: str, ext: str, name: str) -> None:
    assert final_asset_name(dest, ext) == name


def test_the_same_asset_listed_twice_is_one_version() -> None:
    asset = {
        "uuid": "same",
        "asset_type": "PDF_FILE",
        "pdf_file": {"filename": "a.pdf", "url": "u"},
    }
    twice = entries(
        asset,
        dict(asset),
        {"uuid": "", "asset_type": "PDF_FILE", "pdf_file": {"filename": "a.pdf", "url": "v"}},
    )
    assets = collect_assets(twice + twice)
    assert [(a.uuid, a.version, a.n_versions) for a in assets] == [
        ("same", "v1", 3),
        ("", "v2", 3),
        ("", "v3", 3),
    ]
