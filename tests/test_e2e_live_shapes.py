"""End to end through the emulator: a library in the live site's shapes (protocol.md §9.1)
is exported whole, and an answer in a shape nobody knows is reported everywhere a user
looks (the warning, thread.json, the turn file, `status`, `verify`) until a parser that
reads it re-renders the thread."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pplx_export.emulator import DEFAULT_EMAIL, run_emulator
from pplx_export.parse import answer_forms, parse_thread, turns
from tests import live_shapes as L
from tests.e2e_support import E2E, FIDELITY, run_fidelity, thread_dirs

UUIDS = {
    "object-text": "1a2b3c4d-0001-4000-8000-000000000001",
    "blocks-only": "2a2b3c4d-0002-4000-8000-000000000002",
    "markdown-text": "3a2b3c4d-0003-4000-8000-000000000003",
    "pro-search": "4a2b3c4d-0004-4000-8000-000000000004",
    "unknown-shape": "5a2b3c4d-0005-4000-8000-000000000005",
}


def _library(root: Path) -> Path:
    """The live shapes laid out as an archive the emulator serves."""
    for name, (plain, blocks) in L.threads().items():
        uuid = UUIDS[name]
        plain, blocks = json.loads(json.dumps([plain, blocks]).replace(L.THREAD, uuid))
        conv = parse_thread(plain, blocks, None, web_uuid=uuid, export_via="maya")
        folder = root / "maya" / "search" / f"{conv.last_updated[:10]}_{name}_{uuid[:8]}"
        folder.mkdir(parents=True)
        (folder / "raw_entries.json").write_text(json.dumps(plain), encoding="utf-8")
        if blocks is not None:
            (folder / "raw_blocks.json").write_text(json.dumps(blocks), encoding="utf-8")
        doc = {
            "web_uuid": uuid,
            "title": conv.title,
            "mode": "search",
            "author": "maya",
            "lastUpdated": conv.last_updated,
        }
        (folder / "thread.json").write_text(json.dumps(doc), encoding="utf-8")
    return root


@pytest.fixture
def e2e(tmp_path: Path) -> Iterator[E2E]:
    with run_emulator(_library(tmp_path / "library")) as emu:
        env = E2E(emu, tmp_path)
        env.write_files(DEFAULT_EMAIL)
        yield env


def _dir(env: E2E, name: str) -> Path:
    (found,) = [d for d in thread_dirs(env.out) if d.name.endswith(UUIDS[name][:8])]
    return found


def _reads_the_new_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    """A parser upgrade: it learns `text.response.answer_markdown` and its web_results."""
    original = answer_forms.find_answer

    def find_answer(
        entry: dict[str, Any], decoded: Any, *args: Any, **kwargs: Any
    ) -> answer_forms.Found:
        found = original(entry, decoded, *args, **kwargs)
        response = decoded.get("response") if isinstance(decoded, dict) else None
        if found.answer or not isinstance(response, dict):
            return found
        sources = response["cited_pages"]["web_results"]
        return answer_forms.Found(response["answer_markdown"], "object", sources=sources)

    monkeypatch.setattr(turns, "find_answer", find_answer)


def test_every_form_is_exported_and_an_unknown_one_is_loud_until_it_is_read(
    e2e: E2E, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert e2e.cli("index").exit_code == 0
    result = e2e.cli("batch")
    assert result.exit_code == 0, result.output
    # One warning line per loss, naming the thread and the turn.
    warnings = [ln for ln in result.stderr.splitlines() if ln.startswith("WARNING")]
    lost = [line for line in warnings if "content not read" in line]
    assert len(lost) == 2 and all(UUIDS["unknown-shape"][:8] in line for line in lost)
    assert all("turn 1" in line and "Traceback" not in line for line in lost)
    # The summary names the thread and the command that makes a bundle of it (issue 36).
    url = f"https://www.perplexity.ai/search/{UUIDS['unknown-shape']}"
    capture = f"  pplx-export capture {url}"
    assert "threads: 1 with content not read" in result.stderr
    assert capture in result.stderr.splitlines()

    for name, needle in [
        ("object-text", "citric acid"),
        ("blocks-only", "retrogradation"),
        ("markdown-text", "three-line poem"),
        ("pro-search", "in reverse"),
    ]:
        turn = (_dir(e2e, name) / "turns" / "turn_0001.md").read_text(encoding="utf-8")
        assert needle in turn and "(none)" not in turn
        assert "losses" not in json.loads((_dir(e2e, name) / "thread.json").read_text())
    sources = json.loads((_dir(e2e, "blocks-only") / "sources.json").read_text())
    assert sources["count"] == 2  # the schematized web_results block, fetched for it
    if FIDELITY.is_file():  # the shared content-recall check reads every §9.1 form too
        done = run_fidelity(e2e.out)
        for name in ("object-text", "blocks-only", "markdown-text", "pro-search"):
            line = next(ln for ln in done.stdout.splitlines() if UUIDS[name][:8] in ln)
            assert line.startswith("100.00%"), line

    lossy = _dir(e2e, "unknown-shape")
    doc = json.loads((lossy / "thread.json").read_text(encoding="utf-8"))
    assert doc["losses"] == 2 and doc["loss_details"][0]["where"] == (
        "text.response.answer_markdown"
    )
    turn = (lossy / "turns" / "turn_0001.md").read_text(encoding="utf-8")
    assert "⚠ Answer not read" in turn and "(none)" not in turn
    status = e2e.offline("status")
    assert "content not read: 1 thread holds" in status.stdout
    assert UUIDS["unknown-shape"] in status.stdout
    status_doc = json.loads(e2e.offline("status", "--json").stdout)
    assert [t["uuid"] for t in status_doc["losses"]] == [UUIDS["unknown-shape"]]
    verify = e2e.offline("verify")
    assert verify.exit_code == 4, verify.output
    assert "content not read" in verify.stdout and "turn 1" in verify.stdout
    assert capture in verify.stdout.splitlines()
    rerender = e2e.offline("re-render", "--jobs", "1", "--dry-run")
    assert "1 thread(s) with content not read" in rerender.stderr
    assert capture in rerender.stderr.splitlines()

    # The parser learns the shape: a re-render shows the answer and clears every report.
    _reads_the_new_shape(monkeypatch)
    rerender = e2e.offline("re-render", "--jobs", "1")
    assert rerender.exit_code == 0, rerender.output
    turn = (lossy / "turns" / "turn_0001.md").read_text(encoding="utf-8")
    assert "pu-erh" in turn and "⚠" not in turn
    assert "losses" not in json.loads((lossy / "thread.json").read_text(encoding="utf-8"))
    assert json.loads(e2e.offline("status", "--json").stdout)["losses"] == []
    verify = e2e.offline("verify")
    assert verify.exit_code == 0, verify.output
