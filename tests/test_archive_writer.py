from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pplx_export.archive.raw import redact_tokens
from pplx_export.archive.writer import REPORT_SOURCE, write_thread
from pplx_export.errors import ArchiveError
from pplx_export.models import (
    Asset,
    Conversation,
    Interruption,
    Report,
    ReportInfo,
    Space,
    Turn,
)
from pplx_export.store.variants import append_variant_log, variant_log_lines
from pplx_export.util.atomic import TEMP_PREFIX
from tests.archive_fakes import snapshot

UUID = "c0ffee00-1111-4222-8333-444455556666"
NOW = __import__("datetime").datetime(2031, 5, 6, 7, 8, 9, tzinfo=__import__("datetime").UTC)


def conv(**kw: object) -> Conversation:
    c = Conversation(
        web_uuid=UUID,
        psc_uuid="ctx-1",
        url=f"https://example.org/search/{UUID}",
        title="Why is the sky blue?",
        author="alice",
        export_via="alice",
        mode="search",
        last_updated="2031-05-01T10:00:00.123456Z",
        space=Space("sp-1", "Reading", "reading-abc"),
        turns=[Turn(index=1, query="q1"), Turn(index=2, query="q2")],
        metadata={"title": "Why is the sky blue?"},
        raw_plain={
            "thread_metadata": {"title": "中文"},
            "entries": [{"uuid": "e1", "read_write_token": "secret-1"}],
            "background_entries": [],
        },
    )
    for k, v in kw.items():
        setattr(c, k, v)
    return c


def files(n_turns: int = 2) -> dict[str, str]:
    out = {"conversation.md": "# c\n", "sources.md": "# s\n", "sources.json": "{}"}
    for i in range(1, n_turns + 1):
        out[f"turns/turn_{i:04d}.md"] = f"turn {i}"
    return out


def write(root: Path, c: Conversation, rendered: dict[str, str] | None = None, **kw: object):  # type: ignore[no-untyped-def]
    opts: dict[str, object] = {"account_folder": "Alice", "source": "online", "now": NOW}
    opts.update(kw)
    return write_thread(root, c, rendered if rendered is not None else files(), **opts)  # type: ignore[arg-type]


def test_layout_and_thread_json(tmp_path: Path) -> None:
    r = write(tmp_path, conv())
    assert r.directory == tmp_path / "Alice" / "search" / "2031-05-01_Why-is-the-sky-blue_c0ffee00"
    doc = json.loads((r.directory / "thread.json").read_text())
    assert list(doc) == [
        "web_uuid",
        "psc_uuid",
        "url",
        "title",
        "mode",
        "author",
        "export_via",
        "space",
        "lastUpdated",
        "threadAccess",
        "n_turns",
        "n_sources",
        "metadata",
        "report_info",
        "exported_at",
    ]
    assert doc["exported_at"] == "2031-05-06T07:08:09Z"
    assert doc["n_turns"] == 2 and doc["space"] == {
        "uuid": "sp-1",
        "title": "Reading",
        "slug": "reading-abc",
    }
    text = (r.directory / "thread.json").read_text()
    assert text == json.dumps(doc, ensure_ascii=False, indent=1)
    assert sorted(r.written) == sorted(
        [
            "raw_entries.json",
            "thread.json",
            "conversation.md",
            "sources.md",
            "sources.json",
            "turns/turn_0001.md",
            "turns/turn_0002.md",
        ]
    )
    assert not (r.directory / "raw_blocks.json").exists()


def test_optional_keys_and_preserved_keys(tmp_path: Path) -> None:
    r = write(tmp_path, conv())
    path = r.directory / "thread.json"
    doc = json.loads(path.read_text())
    doc["remote_deleted"] = {"at": "2031-06-01T00:00:00Z"}
    doc["x_custom"] = [1, 2]
    path.write_text(json.dumps(doc))
    c = conv(
        interruptions=[Interruption("turn 1", "limit", "h", "PAUSED")],
        answer_variants=[
            {
                "entry_uuid": "e1",
                "sibling_uuid": "s1",
                "selection_status": "SELECTED",
                "experiment_role": "r",
            }
        ],
    )
    write(tmp_path, c)
    doc = json.loads(path.read_text())
    keys = list(doc)
    assert keys[-5:] == [
        "exported_at",
        "interruptions",
        "answer_variants",
        "remote_deleted",
        "x_custom",
    ]
    assert doc["remote_deleted"] == {"at": "2031-06-01T00:00:00Z"} and doc["x_custom"] == [1, 2]
    write(tmp_path, conv())  # variants and interruptions gone again -> keys omitted
    doc = json.loads(path.read_text())
    assert "interruptions" not in doc and "answer_variants" not in doc and "x_custom" in doc


def test_offline_keeps_exported_at_and_raw(tmp_path: Path) -> None:
    r = write(tmp_path, conv())
    raw_before = (r.directory / "raw_entries.json").read_bytes()
    later = NOW.replace(year=2032)
    c = conv(raw_plain={"entries": ["something else"]})
    r2 = write(tmp_path, c, source="offline", dest=r.directory, now=later)
    assert (
        json.loads((r.directory / "thread.json").read_text())["exported_at"]
        == "2031-05-06T07:08:09Z"
    )
    assert (r.directory / "raw_entries.json").read_bytes() == raw_before
    assert "raw_entries.json" not in r2.written


def test_raw_files_compact_and_redacted(tmp_path: Path) -> None:
    blocks = {"entries": [{"blocks": [{"read_write_token": "secret-2"}, {"read_write_token": ""}]}]}
    c = conv(raw_blocks=blocks)
    r = write(tmp_path, c)
    plain = (r.directory / "raw_entries.json").read_text()
    assert "secret" not in plain and '"read_write_token": "<redacted>"' in plain
    assert "中文" in plain and "\n" not in plain  # compact, UTF-8 unescaped
    raw_blocks = json.loads((r.directory / "raw_blocks.json").read_text())
    assert raw_blocks["entries"][0]["blocks"] == [
        {"read_write_token": "<redacted>"},
        {"read_write_token": ""},
    ]
    assert c.raw_plain["entries"][0]["read_write_token"] == "secret-1"  # caller's dict untouched
    assert r.redacted_tokens == 2
    r2 = write(tmp_path, c, redact=False)
    assert "secret-1" in (r2.directory / "raw_entries.json").read_text()


def test_redact_shares_unchanged_subtrees() -> None:
    sub = {"a": [1, 2]}
    doc = {"keep": sub, "x": [{"read_write_token": "t"}]}
    out, n = redact_tokens(doc)
    assert n == 1 and out["keep"] is sub and out is not doc
    same, n = redact_tokens(sub)
    assert n == 0 and same is sub


def test_offline_redacts_old_token_once(tmp_path: Path) -> None:
    r = write(tmp_path, conv(), redact=False)
    c = conv()
    r2 = write(tmp_path, c, source="offline", dest=r.directory)
    assert r2.written == ["raw_entries.json"] and r2.redacted_tokens == 1
    assert "secret-1" not in (r.directory / "raw_entries.json").read_text()


def test_second_write_changes_nothing(tmp_path: Path) -> None:
    c = conv(
        assets=[
            Asset(
                uuid="d1",
                asset_type="ASSET_DIFF",
                filename="fix",
                extracted_inline=True,
                inline_kind="diff",
                inline_content="+x\n",
            )
        ]
    )
    r = write(tmp_path, c, report_body="body")
    before = snapshot(tmp_path)
    r2 = write(tmp_path, c, report_body="body")
    assert r2.written == [] and r2.removed == [] and not r2.changed
    assert snapshot(tmp_path) == before
    assert r.directory == r2.directory


def test_stale_turns_removed(tmp_path: Path) -> None:
    r = write(tmp_path, conv(), files(3))
    assert (r.directory / "turns/turn_0003.md").exists()
    r2 = write(tmp_path, conv(), files(1))
    assert sorted(r2.removed) == ["turns/turn_0002.md", "turns/turn_0003.md"]
    assert sorted(p.name for p in (r.directory / "turns").iterdir()) == ["turn_0001.md"]


def test_rejects_unexpected_rendered_paths(tmp_path: Path) -> None:
    for bad in ("../escape.md", "turns/../../x.md", "/abs.md", "raw_entries.json"):
        with pytest.raises(ArchiveError):
            write(tmp_path, conv(), {bad: "x"})
    assert not any(tmp_path.rglob("*.md"))


def test_report_body_is_kept_raw(tmp_path: Path) -> None:
    c = conv(report=Report(info=ReportInfo("R", "r.md", "")))
    rendered = {**files(), "report.md": "# R\n\nbody"}
    r = write(tmp_path, c, rendered, report_body="body \\(x\\)")
    assert (r.directory / REPORT_SOURCE).read_text() == "body \\(x\\)"
    assert json.loads((r.directory / "thread.json").read_text())["report_info"] == {
        "title": "R",
        "file_name": "r.md",
        "url": "",
    }


def test_no_temp_files_after_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.replace
    calls = {"n": 0}

    def failing(src: str, dst: str) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(OSError):
        write(tmp_path, conv())
    monkeypatch.undo()
    assert calls["n"] == 3
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(TEMP_PREFIX)]
    # The next run repairs: every file written, nothing torn.
    r = write(tmp_path, conv())
    assert (r.directory / "thread.json").exists()


def test_manifest_counts_versions_and_merges_state(tmp_path: Path) -> None:
    assets = [
        Asset(
            uuid="b2",
            asset_type="PDF_FILE",
            filename="b.pdf",
            version="v2",
            n_versions=2,
            created_at="200",
        ),
        Asset(
            uuid="b1",
            asset_type="PDF_FILE",
            filename="b.pdf",
            version="v1",
            n_versions=2,
            created_at="100",
        ),
        Asset(uuid="a1", asset_type="SLIDES", filename="a.pptx", created_at="5"),
        Asset(
            uuid="h1",
            asset_type="DOC_FILE",
            filename="h1",
            no_download_channel=True,
            file_handle="fh-1",
        ),
        Asset(
            uuid="0123456789aa",
            asset_type="CODE_ASSET",
            filename="main",
            extracted_inline=True,
            inline_kind="code",
            inline_content="print(1)",
        ),
        Asset(
            uuid="0123456789bb",
            asset_type="CODE_ASSET",
            filename="main",
            extracted_inline=True,
            inline_kind="code",
            inline_content="print(2)",
        ),
        Asset(
            uuid="d1",
            asset_type="ASSET_DIFF",
            filename="fix/../../x",
            extracted_inline=True,
            inline_kind="diff",
            inline_content="+x",
        ),
        Asset(
            uuid="blank",
            asset_type="CODE_ASSET",
            filename="empty",
            extracted_inline=True,
            inline_kind="code",
            inline_content="  \n",
        ),
    ]
    c = conv(assets=assets)
    r = write(tmp_path, c)
    d = r.directory
    # Inline files are Markdown pages: their code (or diff) is fenced.
    assert (d / "assets/files/main.code_0123456789a.md").read_text() == "```\nprint(1)\n```\n"
    assert (d / "assets/files/main.code_0123456789b.md").read_text() == "```\nprint(2)\n```\n"
    assert (d / "assets/files/fix_.._.._x.diff.md").read_text() == "```diff\n+x\n```\n"
    assert not (d / "assets/files/empty.code.md").exists()
    man = json.loads((d / "assets/assets_manifest.json").read_text())
    assert [f["filename"] for f in man["files"]] == sorted(f["filename"] for f in man["files"])
    assert man["count"] == 7 == sum(len(f["versions"]) for f in man["files"])
    b = next(f for f in man["files"] if f["filename"] == "b.pdf")
    assert b["n_versions"] == 2 and [v["version"] for v in b["versions"]] == ["v1", "v2"]
    inline = next(f for f in man["files"] if f["filename"] == "main")["versions"][0]
    assert inline["extracted_inline"] is True and inline["version"] == "inline"
    assert inline["downloaded_to"] == "assets/files/main.code_0123456789a.md"
    # A backfill marked one version expired and registered another one: both survive.
    b["versions"][0]["asset_expired"] = True
    man["files"].append(
        {
            "filename": "zz",
            "n_versions": 1,
            "versions": [{"uuid": "zz1", "version": "v1", "created_at": ""}],
        }
    )
    (d / "assets/assets_manifest.json").write_text(json.dumps(man))
    for a in assets:
        a.downloaded_to = ""
    write(tmp_path, conv(assets=assets))
    man2 = json.loads((d / "assets/assets_manifest.json").read_text())
    b2 = next(f for f in man2["files"] if f["filename"] == "b.pdf")
    assert b2["versions"][0]["asset_expired"] is True
    assert man2["count"] == 8 and man2["files"][-1]["filename"] == "zz"


def test_variants_logged_once_per_pair(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    variants = [
        {
            "entry_uuid": "e1",
            "sibling_uuid": "s1",
            "selection_status": "",
            "experiment_role": "override-x",
        }
    ]
    # An older archive's log file, with a torn line: imported by the state store's migration.
    log_path = tmp_path / "index" / "answer_variants_log.jsonl"
    log_path.parent.mkdir(parents=True)
    log_path.write_text('{"web_uuid": "other", "entry_uuid": "z"}\n{torn line\n')
    with caplog.at_level(logging.WARNING):
        for _ in range(2):
            # The writer warns; the pipeline appends what it found to the store's log.
            hits = write(tmp_path, conv(answer_variants=variants)).variant_hits
            append_variant_log(tmp_path, hits, source="online", now=NOW)
    lines = [line.decode() for line in variant_log_lines(tmp_path)]
    assert len(lines) == 3 and lines[1] == "{torn line"
    assert not log_path.exists()
    rec = json.loads(lines[2])
    assert rec == {
        "detected_at": "2031-05-06T07:08:09Z",
        "source": "online",
        "web_uuid": UUID,
        "uuid8": "c0ffee00",
        "title": "Why is the sky blue?",
        "entry_uuid": "e1",
        "sibling_uuid": "s1",
        "selection_status": "",
        "experiment_role": "override-x",
    }
    warnings = [
        r.getMessage() for r in caplog.records if "ANSWER_VARIANT_DETECTED" in r.getMessage()
    ]
    assert len(warnings) == 2  # online: every fetch
    assert warnings[0].startswith(
        f'ANSWER_VARIANT_DETECTED thread={UUID} uuid8=c0ffee00 title="Why is the sky blue?" '
        "entry=e1 sibling=s1 selection_status=UNSPECIFIED experiment_role=override-x | "
    )
    caplog.clear()
    d = next(tmp_path.glob("Alice/search/*"))
    with caplog.at_level(logging.WARNING):
        write(tmp_path, conv(answer_variants=variants), source="offline", dest=d)
    assert not [r for r in caplog.records if "ANSWER_VARIANT" in r.getMessage()]


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    tmp_path = tmp_path / "archive"
    tmp_path.mkdir()
    r = write(tmp_path, conv(), dry_run=True)
    assert not any(tmp_path.iterdir())
    assert "thread.json" in r.written
    write(tmp_path, conv())
    before = snapshot(tmp_path)
    r2 = write(tmp_path, conv(title="renamed"), files(1), dry_run=True)
    assert snapshot(tmp_path) == before
    assert r2.merged_from and r2.removed == []  # the rename would merge; turn 2 lives in old dir


def test_unchanged_files_keep_mtime(tmp_path: Path) -> None:
    r = write(tmp_path, conv())
    p = r.directory / "conversation.md"
    os.utime(p, ns=(1, 1))
    write(tmp_path, conv())
    assert p.stat().st_mtime_ns == 1


def test_inline_dest_name_from_parser_is_hardened(tmp_path: Path) -> None:
    a = Asset(
        uuid="u1",
        asset_type="ASSET_DIFF",
        filename="x",
        extracted_inline=True,
        inline_kind="diff",
        inline_content="+1",
        dest_name="../../etc/passwd.diff.md",
    )
    b = Asset(
        uuid="u2",
        asset_type="CODE_ASSET",
        filename="y",
        extracted_inline=True,
        inline_kind="code",
        inline_content="p",
        dest_name="y.code_u2abcdef.md",
    )
    r = write(tmp_path, conv(assets=[a, b]))
    names = sorted(p.name for p in (r.directory / "assets/files").iterdir())
    assert names == ["_.._etc_passwd.diff.md", "y.code_u2abcdef.md"]


@pytest.mark.parametrize(
    ("data", "live"),
    [
        (b'{"read_write_token": "abc"}', True),
        (b'{"read_write_token":"abc"}', True),
        (b'{"read_write_token": "<redacted>"}', False),
        (b'{"read_write_token": ""}', False),
        (b'{"read_write_token": null}', False),
        (b'{"x": 1}', False),
        (b'[{"read_write_token": "<redacted>"}, {"read_write_token": "t"}]', True),
    ],
)
def test_has_live_token(data: bytes, live: bool) -> None:
    from pplx_export.archive.raw import has_live_token

    assert has_live_token(data) is live
    assert (redact_tokens(json.loads(data))[1] > 0) is live


def test_refuses_directory_of_another_thread(tmp_path: Path) -> None:
    r = write(tmp_path, conv())
    before = snapshot(tmp_path)
    impostor = conv(web_uuid=UUID[:8] + "-ffff-4fff-8fff-ffffffffffff")
    with pytest.raises(ArchiveError, match="belongs to thread"):
        write(tmp_path, impostor)
    with pytest.raises(ArchiveError):
        write(tmp_path, impostor, source="offline", dest=r.directory)
    assert snapshot(tmp_path) == before


@settings(max_examples=40, deadline=None)
@given(
    title=st.text(max_size=300),
    author=st.text(max_size=300),
    web_uuid=st.text(min_size=1, max_size=60),
)
def test_hostile_thread_written_inside_root(title: str, author: str, web_uuid: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        root.mkdir()
        c = conv(title=title, author=author, web_uuid=web_uuid)
        r = write_thread(root, c, files(), account_folder=author, source="online", now=NOW)
        real_root = root.resolve()
        for p in Path(tmp).rglob("*"):
            assert p.resolve().is_relative_to(real_root)
        assert r.directory.resolve().parent.parent.parent == real_root


def test_normalize_downloaded_to(tmp_path: Path) -> None:
    from pplx_export.archive.assets import FILES_DIR, normalize_downloaded_to

    d = tmp_path / "thread"
    (d / FILES_DIR).mkdir(parents=True)
    (d / FILES_DIR / "a.md").write_text("x")
    assert normalize_downloaded_to(str(d / FILES_DIR / "a.md"), d) == f"{FILES_DIR}/a.md"
    assert normalize_downloaded_to("/elsewhere/assets/files/a.md", d) == f"{FILES_DIR}/a.md"
    assert normalize_downloaded_to("/elsewhere/gone.md", d) == "/elsewhere/gone.md"
    # The relative form stays as it is, file or no file (no stat needed).
    assert normalize_downloaded_to(f"{FILES_DIR}/a.md", d) == f"{FILES_DIR}/a.md"
    assert normalize_downloaded_to(f"{FILES_DIR}/gone.md", d) == f"{FILES_DIR}/gone.md"
    assert normalize_downloaded_to(f"{FILES_DIR}/sub/a.md", d) == f"{FILES_DIR}/a.md"
    assert normalize_downloaded_to("", d) == ""
