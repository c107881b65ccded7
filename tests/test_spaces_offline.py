"""`pplx-export spaces` (offline) and `sync-space`: pages, links, bad input, zero requests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pplx_export.cli.export import main
from pplx_export.emulator import run_emulator
from pplx_export.render.spaces import Member, SpacePage, SpaceThread, render_space_page
from pplx_export.store.docs import delete_doc, load_bytes
from tests.fsync_support import record_fsyncs
from tests.spaces_support import index_row, snapshot, space, uid, write_index, write_thread

OCEAN = space("ocean-notes", "Ocean Notes", "u-ocean")
KITCHEN = space("kitchen-lab", "Kitchen Lab", "u-kitchen")


def build(root: Path) -> None:
    write_thread(root, uid(1), title="Tides", space_ref=OCEAN, day="2026-11-02")
    write_thread(root, uid(2), title="Basil", space_ref=KITCHEN, day="2026-11-03")
    write_thread(root, uid(3), title="Loose", space_ref=None, day="2026-11-04")
    # exported twice (its date moved): the newer directory is the one linked
    write_thread(root, uid(4), title="Moved", space_ref=OCEAN, day="2026-10-01")
    write_thread(root, uid(4), title="Moved", space_ref=OCEAN, day="2026-11-05")
    rows = [
        index_row(uid(1), "Tides", OCEAN, "2026-11-02"),
        index_row(uid(2), "Basil", KITCHEN, "2026-11-03"),
        index_row(uid(3), "Loose", None, "2026-11-04"),
        index_row(uid(4), "Moved", OCEAN, "2026-11-05"),
        index_row(uid(5), "Never exported", KITCHEN, "2026-11-06"),
    ]
    write_index(root, "alice", rows)


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_spaces_offline_pages_links_and_zero_requests(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    build(root)
    with run_emulator() as emu:
        code, _out, err = cli("spaces", "--out", str(root), "--base-url", emu.base_url)
        assert emu.stats()["total"] == 0  # offline by default: not one request
    assert code == 0, err
    assert sorted(p.name for p in (root / "spaces").iterdir()) == [
        "index.md", "kitchen-lab.md", "no-space.md", "ocean-notes.md", "spaces.json",
    ]  # fmt: skip
    assert not (tmp_path / "cwd" / "spaces").exists()  # under the archive root, never the CWD
    ocean = (root / "spaces" / "ocean-notes.md").read_text("utf-8")
    assert ocean.startswith("# Ocean Notes\n")
    assert "[Moved](../alice/search/2026-11-05_Moved_00000004/conversation.md)" in ocean
    assert "2026-10-01_Moved" not in ocean
    assert "Members unknown: run `pplx-export spaces --fetch-meta`." in ocean
    kitchen = (root / "spaces" / "kitchen-lab.md").read_text("utf-8")
    assert "| Never exported | alice | search | 2026-11-06 | `00000005` | not exported |" in kitchen
    doc = json.loads((root / "spaces" / "spaces.json").read_text("utf-8"))
    assert [s["slug"] for s in doc["spaces"]] == ["kitchen-lab", "ocean-notes"]
    assert doc["no_space"]["n_threads"] == 1
    index = (root / "spaces" / "index.md").read_text("utf-8")
    assert "2 spaces, 5 threads (1 in no space)." in index


def test_rerun_changes_no_byte(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    build(root)
    assert cli("spaces", "--out", str(root))[0] == 0
    before = snapshot(root)
    mtimes = {p: p.stat().st_mtime_ns for p in (root / "spaces").iterdir()}
    code, out, _ = cli("spaces", "--out", str(root), "--json")
    assert code == 0 and json.loads(out)["written"] == []
    assert snapshot(root) == before
    assert {p: p.stat().st_mtime_ns for p in (root / "spaces").iterdir()} == mtimes


def test_hostile_names_and_bad_files(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    evil = space("../../escape", "Pipes | and\nnewlines", "u-evil")
    write_thread(root, uid(1), title="A | B\nC", space_ref=evil)
    write_thread(root, uid(2), title="No space fields")
    doc = json.loads((root / "alice/search").glob("*_00000002/thread.json").__next__().read_text())
    del doc["space"]  # an old thread.json without space fields
    next((root / "alice/search").glob("*_00000002")).joinpath("thread.json").write_text(
        json.dumps(doc), "utf-8"
    )
    write_index(root, "alice", [index_row(uid(1), "A | B", evil)])
    (root / "index" / "library_bob.json").write_text("{not json", "utf-8")  # corrupt
    (root / "index" / "space_garden.json").write_text("{torn", "utf-8")  # damaged listing
    code, _out, err = cli("spaces", "--out", str(root))
    assert code == 0, err
    assert "library_bob.json" in err and "corrupt" in err
    # A damaged space listing says how to get it back.
    assert "space_garden.json is unreadable" in err
    assert "`pplx-export space-index https://www.perplexity.ai/spaces/garden` fetches it" in err
    assert (root / "index" / "library_bob.json").read_text("utf-8") == "{not json"  # kept as is
    names = sorted(p.name for p in (root / "spaces").iterdir())
    assert names == ["_.._escape.md", "index.md", "no-space.md", "spaces.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["archive", "cwd", "home"]
    page = (root / "spaces" / "_.._escape.md").read_text("utf-8")
    assert page.startswith("# Pipes | and newlines\n")
    row = next(line for line in page.splitlines() if "00000001" in line)
    assert row.startswith(
        "| [A \\| B C](../alice/search/2026-11-01_A-B-C_00000001/conversation.md) |"
    )
    assert row.count(" | ") == 5  # six cells: the title's pipe is escaped, its newline gone
    loose = (root / "spaces" / "no-space.md").read_text("utf-8")
    assert "No space fields" in loose


def test_a_four_hundred_member_space() -> None:
    members = [Member(f"user{n:03d}", f"User {n}", 1 + n % 3) for n in range(399)]
    page = SpacePage(
        file="big.md",
        slug="big",
        title="Big",
        owner=Member("owner", "Owner", 4),
        members=members,
        meta_via="alice",
        threads=[SpaceThread(uid(1), "T", "alice", "search", "2026-11-01T00:00:00Z", "")],
    )
    text = render_space_page(page)
    rows = [line for line in text.splitlines() if line.startswith("| User ")]
    assert len(rows) == 399
    assert "| Owner | owner | 4 owner |" in text
    assert "| User 2 | user002 | 3 can manage |" in text
    assert text == render_space_page(page)


def test_sync_space_patches_a_moved_thread_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "archive"
    build(root)
    assert cli("spaces", "--out", str(root))[0] == 0
    # the index now says Basil moved to Ocean Notes and Loose joined Kitchen Lab
    rows = [
        index_row(uid(1), "Tides", OCEAN, "2026-11-02"),
        index_row(uid(2), "Basil", OCEAN, "2026-11-03"),
        index_row(uid(3), "Loose", KITCHEN, "2026-11-04"),
        index_row(uid(4), "Moved", OCEAN, "2026-11-05"),
    ]
    write_index(root, "alice", rows)
    before = snapshot(root)
    calls = record_fsyncs(monkeypatch)
    with run_emulator() as emu:
        code, out, err = cli("sync-space", "--out", str(root), "--json")
        assert emu.stats()["total"] == 0
    assert code == 0, err
    doc = json.loads(out)
    assert sorted(c["uuid"] for c in doc["changed"]) == [uid(2), uid(3)]
    after = snapshot(root)
    changed = sorted(k for k in after if before.get(k) != after[k])
    basil = next(k for k in after if k.endswith("_00000002/thread.json"))
    loose = next(k for k in after if k.endswith("_00000003/thread.json"))
    # besides spaces/: the two thread.json files, and the tool's caches of thread.json
    # fields and of the pages' digests (documents of the state store)
    assert [k for k in changed if not k.startswith("spaces/")] == sorted(
        [basil, loose, "index/state.sqlite"]
    )
    assert load_bytes(root, "spaces_cache") and load_bytes(root, "spaces_pages")
    for key in (basil, loose):
        old, new = json.loads(before[key]), json.loads(after[key])
        assert list(old) == list(new)  # same keys, same order
        assert {k: v for k, v in old.items() if k != "space"} == {
            k: v for k, v in new.items() if k != "space"
        }
    for key in (basil, loose):  # thread.json is state: its rewrite is durable
        assert calls.durable(str((root / key).resolve())) is not None, key
    assert json.loads(after[basil])["space"] == OCEAN
    assert json.loads(after[loose])["space"] == KITCHEN
    assert "Basil" in (root / "spaces" / "ocean-notes.md").read_text("utf-8")
    assert "Basil (00000002): Kitchen Lab -> Ocean Notes" in err
    # nothing left to do: a second run changes no byte
    code, out, _ = cli("sync-space", "--out", str(root), "--json")
    assert code == 0 and json.loads(out)["changed"] == []
    assert snapshot(root) == after


def test_a_changed_index_or_a_lost_page_is_rebuilt(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    build(root)
    assert cli("spaces", "--out", str(root))[0] == 0
    rows = [index_row(uid(2), "Basil", OCEAN, "2026-11-03")]
    write_index(root, "alice", rows)  # Basil moved: the steady-state shortcut must not apply
    code, out, _ = cli("spaces", "--out", str(root), "--json")
    assert code == 0 and "spaces/ocean-notes.md" in json.loads(out)["written"]
    assert "Basil" in (root / "spaces" / "ocean-notes.md").read_text("utf-8")
    (root / "spaces" / "ocean-notes.md").unlink()
    code, out, _ = cli("spaces", "--out", str(root), "--json")
    assert code == 0 and json.loads(out)["written"] == ["spaces/ocean-notes.md"]
    code, out, _ = cli("spaces", "--out", str(root), "--lang", "zh", "--json")
    assert code == 0 and "spaces/index.md" in json.loads(out)["written"]
    assert (root / "spaces" / "index.md").read_text("utf-8").startswith("# 空间\n")


def test_a_thread_json_rewritten_as_it_was_leaves_the_pages_a_new_title_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "archive"
    build(root)
    assert cli("spaces", "--out", str(root))[0] == 0
    tides = next(root.glob(f"*/*/*{uid(1)[:8]}/thread.json"))
    tides.write_bytes(tides.read_bytes())  # a re-export that changed nothing: a new mtime

    def fail(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the pages were built again")

    with monkeypatch.context() as m:
        m.setattr("pplx_export.commands.spaces.pages.build_catalog", fail)
        code, out, err = cli("spaces", "--out", str(root), "--json")
        assert code == 0, err
        assert json.loads(out)["written"] == []
    doc = json.loads(tides.read_text("utf-8"))
    tides.write_text(json.dumps({**doc, "title": "Spring tides"}), "utf-8")
    code, out, _ = cli("spaces", "--out", str(root), "--json")
    assert code == 0 and "spaces/ocean-notes.md" in json.loads(out)["written"]
    assert "Spring tides" in (root / "spaces" / "ocean-notes.md").read_text("utf-8")


def test_only_the_pages_whose_threads_changed_are_rendered_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One thread's title changed: its space's page is rendered again, the others are not
    even read; spaces.json and index.md hold what a run from scratch writes."""
    root = tmp_path / "archive"
    build(root)
    assert cli("spaces", "--out", str(root))[0] == 0
    basil = next(root.glob(f"*/*/*{uid(2)[:8]}/thread.json"))
    basil.write_text(json.dumps({**json.loads(basil.read_text("utf-8")), "title": "Thai basil"}))
    rendered: list[str] = []
    real = render_space_page

    def spy(page: SpacePage, lang: str = "en", flavor: str = "github") -> str:
        rendered.append(page.file)
        return real(page, lang, flavor)

    with monkeypatch.context() as m:
        m.setattr("pplx_export.commands.spaces.pages.render_space_page", spy)
        code, out, _ = cli("spaces", "--out", str(root), "--json")
    assert code == 0 and rendered == ["kitchen-lab.md"]
    assert json.loads(out)["written"] == ["spaces/kitchen-lab.md", "spaces/spaces.json"]
    incremental = snapshot(root / "spaces")
    # a page edited by hand (another mtime) is rendered again even with the same inputs
    ocean = root / "spaces" / "ocean-notes.md"
    ocean.write_text("edited", "utf-8")
    assert cli("spaces", "--out", str(root))[0] == 0
    assert snapshot(root / "spaces") == incremental
    delete_doc(root, "spaces_pages")
    delete_doc(root, "spaces_stamp")
    for page in (root / "spaces").iterdir():
        page.unlink()
    assert cli("spaces", "--out", str(root))[0] == 0
    assert snapshot(root / "spaces") == incremental
