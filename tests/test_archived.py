"""The one archived-thread loader (pplx_export/archive/loader.py): what it reads, the one error it
raises, and the same words for the same broken thread in every offline reader."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from pplx_export.archive import loader as archived
from pplx_export.archive import official, raw, thread_json
from pplx_export.commands.inspect.verify import check_thread
from pplx_export.commands.rerender.thread import rerender_thread
from pplx_export.errors import ArchiveError, ThreadUnreadable
from pplx_export.pipeline.relation_facts import read_facts
from pplx_export.search import index as search_index
from tests.archive_fakes import FAKE_ENGINE, make_thread

UUID = "ab000001-0000-4000-8000-000000000000"


def test_the_file_names_are_the_archives() -> None:
    assert archived.THREAD_JSON == thread_json.THREAD_JSON
    assert (archived.RAW_ENTRIES, archived.RAW_BLOCKS) == (raw.RAW_ENTRIES, raw.RAW_BLOCKS)
    assert archived.OFFICIAL_RAW == official.OFFICIAL_RAW


def _rel(root: Path, directory: Path) -> str:
    return directory.relative_to(root).as_posix()


def test_read_then_parse(tmp_path: Path) -> None:
    d = make_thread(tmp_path, web_uuid=UUID, n_turns=3)
    thread = archived.read_thread(tmp_path, _rel(tmp_path, d))
    assert thread.web_uuid == UUID and thread.mode_folder == "search"
    assert thread.merged is thread.plain and thread.blocks is None
    assert set(thread.stats) == set(thread.data) == {"thread.json", "raw_entries.json"}
    assert len(thread.digests()["raw_entries.json"]) == 64
    thread.release()
    assert thread.data == {}
    conv = archived.parse_read(thread, FAKE_ENGINE.parse)
    assert conv.web_uuid == UUID and len(conv.turns) == 3 and conv.raw_plain is thread.plain


def test_one_error_says_which_file_and_why(tmp_path: Path) -> None:
    d = make_thread(tmp_path, web_uuid=UUID)
    rel = _rel(tmp_path, d)
    assert issubclass(ThreadUnreadable, ArchiveError)  # the CLI's exit code 1, if it escapes
    (d / "raw_entries.json").write_text('{"entries": [', "utf-8")
    with pytest.raises(ThreadUnreadable) as bad:
        archived.read_thread(tmp_path, rel)
    assert bad.value.file == "raw_entries.json" and not bad.value.missing
    assert str(bad.value).startswith("raw_entries.json does not parse")
    assert f"`pplx-export export {UUID} --force` fetches it again" in str(bad.value)
    assert bad.value.doc is not None and bad.value.doc["web_uuid"] == UUID
    (d / "raw_entries.json").unlink()
    with pytest.raises(ThreadUnreadable) as missing:
        archived.read_thread(tmp_path, rel)
    assert missing.value.missing and not missing.value.gone
    assert str(missing.value) == "raw_entries.json missing"
    (d / "thread.json").write_text(json.dumps({"title": "no uuid"}), "utf-8")
    with pytest.raises(ThreadUnreadable, match=r"thread\.json has no web_uuid"):
        archived.read_thread(tmp_path, rel)
    (d / "thread.json").unlink()
    with pytest.raises(ThreadUnreadable) as gone:
        archived.read_thread(tmp_path, rel)
    assert gone.value.gone and str(gone.value) == "thread.json missing"


def test_a_parse_that_fails_is_the_same_error(tmp_path: Path) -> None:
    d = make_thread(tmp_path, web_uuid=UUID)
    (d / "raw_entries.json").write_text('{"entries": {"not": "a list"}}', "utf-8")
    with pytest.raises(ThreadUnreadable, match="entries is not a list") as exc:
        archived.load_thread(tmp_path, _rel(tmp_path, d), FAKE_ENGINE.parse)
    assert exc.value.file == ""


def test_every_reader_says_the_same_of_a_broken_raw_file(tmp_path: Path) -> None:
    d = make_thread(tmp_path, web_uuid=UUID)
    rel = _rel(tmp_path, d)
    (d / "raw_blocks.json").write_text("[1, 2]", "utf-8")
    said = "raw_blocks.json is not a JSON object"
    assert rerender_thread(tmp_path, rel, lang="en", engine=FAKE_ENGINE).error == said
    with pytest.raises(ThreadUnreadable, match=re.escape(said)):
        search_index.load_thread(tmp_path, rel)
    with pytest.raises(ThreadUnreadable, match=re.escape(said)):
        read_facts(tmp_path, rel, FAKE_ENGINE.parse)
    problems = check_thread(tmp_path, rel, "en").problems
    assert [(p.kind, p.detail) for p in problems if p.kind == "raw"] == [("raw", said)]


def test_relations_still_read_a_thread_without_raw_files_as_a_shell(tmp_path: Path) -> None:
    d = make_thread(tmp_path, web_uuid=UUID)
    (d / "raw_entries.json").unlink()
    (d / "conversation.md").write_text(f"see {'cd000002-0000-4000-8000-000000000000'}\n", "utf-8")
    facts, stats = read_facts(tmp_path, _rel(tmp_path, d), FAKE_ENGINE.parse)
    assert facts.degraded and facts.uuid == UUID
    assert facts.mentions == ["cd000002-0000-4000-8000-000000000000"]
    assert stats[0] is not None and stats[1] is None and stats[3] is not None
    assert stats[0] == [os.stat(d / "thread.json").st_size, os.stat(d / "thread.json").st_mtime_ns]
