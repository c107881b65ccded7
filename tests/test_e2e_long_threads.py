"""Long threads: every page of the cursor chain is followed, nothing is archived short.

The earlier tool stopped at 20 plain / 10 schematized pages and marked the thread done; here
a 63-turn thread served one entry per page comes back whole, a server that never ends its
pagination fails the thread loudly (state `error`), and a schematized listing that ends early
keeps what it gave with a note in the state.
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pplx_export.emulator import DEFAULT_EMAIL, run_emulator
from pplx_export.emulator.http import Request, Response, json_response
from pplx_export.emulator.routes import threads
from pplx_export.site import constants as C
from tests.e2e_support import E2E, FIXTURES, thread_dirs

SOURCE = "tomas/computer/2031-06-02_Audit-the-nginx-config-on-my-home-server_cb11e506"
UUID = "cb11e506-373b-5e2d-9156-c7629f699010"
TURNS = 63


def _lengthen(doc: dict[str, Any], n: int) -> None:
    """Repeat the thread's turns until it has `n`, each copy with its own entry uuid."""
    base = doc["entries"]
    out = []
    for i in range(n):
        entry = copy.deepcopy(base[i % len(base)])
        if i >= len(base):
            entry["uuid"] = f"{entry['uuid'][:-4]}{i:04d}"
            entry["created_us"] = int(entry.get("created_us") or 0) + i
        out.append(entry)
    doc["entries"] = out


@pytest.fixture
def long_library(tmp_path: Path) -> Path:
    library = tmp_path / "library"
    target = library / SOURCE
    shutil.copytree(FIXTURES / SOURCE, target)
    for name in ("raw_entries.json", "raw_blocks.json"):
        doc = json.loads((target / name).read_text("utf-8"))
        _lengthen(doc, TURNS)
        (target / name).write_text(json.dumps(doc), "utf-8")
    return library


@pytest.fixture
def env(long_library: Path, tmp_path: Path) -> Iterator[E2E]:
    with run_emulator(long_library, page_size=1) as emu:
        e2e = E2E(emu, tmp_path)
        e2e.write_files(DEFAULT_EMAIL)
        assert e2e.cli("index").exit_code == 0
        yield e2e


def _entries(directory: Path, name: str) -> list[str]:
    doc = json.loads((directory / name).read_text("utf-8"))
    return [e["uuid"] for e in doc["entries"]]


def test_a_63_turn_thread_served_one_entry_per_page_is_archived_whole(env: E2E) -> None:
    result = env.cli("batch")
    assert result.exit_code == 0, result.output
    (directory,) = thread_dirs(env.out)
    assert len(_entries(directory, "raw_entries.json")) == TURNS
    assert len(set(_entries(directory, "raw_blocks.json"))) == TURNS
    assert len(list((directory / "turns").glob("turn_*.md"))) == TURNS
    # One request per page of each listing, nothing more.
    assert env.stats()["by_thread"][UUID] == 2 * TURNS
    assert env.state()[UUID]["status"] == "ok" and "note" not in env.state()[UUID]


def _endless(flavor_schematized: bool) -> Any:
    original = threads.thread_detail

    def detail(req: Request) -> Response:
        schematized = req.arg("with_schematized_response") == "true"
        sent = req.arg("cursor")
        if schematized != flavor_schematized:
            return original(req)
        if sent.startswith("x"):  # past the real end: empty pages, each with a fresh cursor
            page = {"entries": [], "background_entries": [], "has_next_page": True}
            return json_response(200, {**page, "next_cursor": sent + "x"})
        answer = original(req)
        page = answer.json()
        if answer.status != 200 or page["has_next_page"]:
            return answer
        # The last page claims more: the server never ends its pagination.
        return json_response(200, {**page, "has_next_page": True, "next_cursor": "x"})

    return detail


def test_a_server_that_never_ends_its_pagination_fails_the_thread_loudly(
    env: E2E, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(C, "THREAD_PAGE_SAFETY_CAP", TURNS + 5)
    monkeypatch.setattr(threads, "thread_detail", _endless(False))
    result = env.cli("batch")
    assert result.exit_code == 4
    record = env.state()[UUID]
    assert record["status"] == "error"
    assert f"did not end after {TURNS + 5} pages" in record["error"]
    assert "failed:" in result.stderr and UUID in result.stderr
    assert thread_dirs(env.out) == []  # nothing short was written


def test_a_schematized_listing_that_ends_early_is_kept_and_flagged(
    env: E2E, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(C, "THREAD_PAGE_SAFETY_CAP", TURNS + 5)
    monkeypatch.setattr(threads, "thread_detail", _endless(True))
    result = env.cli("batch")
    assert result.exit_code == 0, result.output
    record = env.state()[UUID]
    assert record["status"] == "ok"
    assert record["note"].startswith("incomplete: the schematized listing did not end")
    (directory,) = thread_dirs(env.out)
    assert len(_entries(directory, "raw_entries.json")) == TURNS
