from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pplx_export.archive.paths import (
    ensure_inside,
    find_thread_dirs,
    safe_file_name,
    safe_folder,
    safe_stem,
    slugify,
    thread_dir,
    thread_dir_name,
)
from pplx_export.errors import ArchiveError


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Alice Example", "Alice Example"),
        ('a/b\\c:d*e?f"g<h>i|j', "a_b_c_d_e_f_g_h_i_j"),
        ("a//\\\\b", "a_b"),
        ("  bob  ", "bob"),
        ("", "unknown"),
        (None, "unknown"),
        (".", "unknown"),
        ("..", "unknown"),
        ("../../etc", "_.._etc"),
        (".hidden", "hidden"),
        ("tab\there\x00", "tab_here_"),
        ("index", "index_"),
        ("CON", "CON_"),
        ("trailing. ", "trailing"),
    ],
)
def test_safe_folder(name: str | None, expected: str) -> None:
    assert safe_folder(name) == expected


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("Hello, World!", "Hello-World"),
        ("示例研究问题（合成）：演示", "示例研究问题-合成-演示"),
        ("a" * 50, "a" * 40),
        ("--x--", "x"),
        ("!!!", "untitled"),
        ("", "untitled"),
        ("x" * 39 + " yz", "x" * 39),  # cut first, then strip
        ("../../etc/passwd", "etc-passwd"),
    ],
)
def test_slugify(title: str, expected: str) -> None:
    assert slugify(title) == expected


def test_safe_stem() -> None:
    assert safe_stem("report v2.final.md") == "report_v2.final.md"
    assert safe_stem("") == "file"
    assert safe_stem("..") == "file"
    assert safe_stem("../x") == "_x"
    assert len(safe_stem("é" * 500).encode()) <= 200


def test_thread_dir_name_and_date_fallback() -> None:
    name = thread_dir_name("2035-12-26T00:00:00.000000Z", "My title", "e296ac19-5d42")
    assert name == "2035-12-26_My-title_e296ac19"
    assert thread_dir_name("2035-12-26 00:03 UTC", "t", "abcdef012345")[:11] == "2035-12-26_"
    odd = thread_dir_name("../../..", "t", "../../../../x")
    assert "/" not in odd and ".." not in odd


def test_thread_dir_layout(tmp_path: Path) -> None:
    d = thread_dir(tmp_path, "Alice Example", "deep-research", "2035-01-02Tx", "T", "0123456789")
    assert d == tmp_path / "Alice Example" / "deep-research" / "2035-01-02_T_01234567"


def test_ensure_inside_rejects_escape(tmp_path: Path) -> None:
    with pytest.raises(ArchiveError):
        ensure_inside(tmp_path / "root", tmp_path / "root" / ".." / "elsewhere")
    with pytest.raises(ArchiveError):
        ensure_inside(tmp_path, tmp_path)


def test_ensure_inside_existing_dirs_and_symlinks(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "a" / "search" / "t1").mkdir(parents=True)
    (tmp_path / "outside" / "t2").mkdir(parents=True)
    plain = root / "a" / "search" / "t1"
    assert ensure_inside(root, plain) == plain
    # A symlinked component that leaves the root is refused, whichever level it is at.
    (root / "a" / "escape").symlink_to(tmp_path / "outside")
    with pytest.raises(ArchiveError):
        ensure_inside(root, root / "a" / "escape" / "t2")
    (root / "link").symlink_to(tmp_path / "outside" / "t2")
    with pytest.raises(ArchiveError):
        ensure_inside(root, root / "link")
    # A symlink that stays inside is fine (resolved the slow way).
    (root / "b").symlink_to(root / "a")
    assert ensure_inside(root, root / "b" / "search" / "t1") == root / "b" / "search" / "t1"
    # So is a root reached through a symlink.
    (tmp_path / "alias").symlink_to(root)
    alias = tmp_path / "alias"
    assert ensure_inside(alias, alias / "a" / "search" / "t1") == alias / "a" / "search" / "t1"


hostile = st.one_of(
    st.lists(
        st.sampled_from(
            [*string.printable, "\x00", "\x7f", "..", "../", "/", "\\", "é", "中", "\u202e", "𝔘"]
        ),
        max_size=300,
    ).map("".join),
    st.text(max_size=400),
)


@settings(max_examples=300, deadline=None)
@given(account=hostile, mode=hostile, title=hostile, uuid=hostile, updated=hostile)
def test_hostile_names_stay_inside_root(
    account: str, mode: str, title: str, uuid: str, updated: str
) -> None:
    root = Path("/archive/root")
    d = thread_dir(root, account, mode, updated, title, uuid)
    rel = d.relative_to(root)
    assert len(rel.parts) == 3
    for part in rel.parts:
        assert 0 < len(part.encode("utf-8")) <= 255
        assert not part.startswith(".")
        assert "/" not in part and "\\" not in part and "\x00" not in part
        assert not any(ord(c) < 32 for c in part)
    assert rel.parts[0] not in ("index", "relations", "spaces")


@settings(max_examples=200, deadline=None)
@given(name=hostile)
def test_safe_stem_never_escapes(name: str) -> None:
    stem = safe_stem(name)
    assert stem and not stem.startswith(".") and "/" not in stem and "\\" not in stem
    assert len(stem.encode("utf-8")) <= 200


def test_find_thread_dirs_checks_identity(tmp_path: Path) -> None:
    uuid = "abcd1234-0000-4000-8000-000000000001"
    other = "abcd1234-ffff-4000-8000-000000000002"  # same uuid8, different thread
    for i, (u, title) in enumerate([(uuid, "one"), (other, "two"), (uuid, "three")]):
        d = thread_dir(tmp_path, "alice", "search", f"2030-01-0{i + 1}", title, u)
        d.mkdir(parents=True)
        (d / "thread.json").write_text(json.dumps({"web_uuid": u}))
    broken = thread_dir(tmp_path, "alice", "search", "2030-02-01", "broken", uuid)
    broken.mkdir(parents=True)
    (broken / "thread.json").write_text("{not json")
    found = find_thread_dirs(tmp_path, uuid)
    assert [d.name for d in found] == ["2030-01-01_one_abcd1234", "2030-01-03_three_abcd1234"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("CON.pdf", "CON_.pdf"),  # still reserved on Windows with the suffix after it
        ("aux.tar.gz", "aux_.tar.gz"),
        ("com1", "com1_"),
        ("COM¹.pdf", "COM¹_.pdf"),  # superscript digits count on Windows too
        ("lpt³", "lpt³_"),
        ("nul .txt", "nul_.txt"),
        ("CONOUT$.log", "CONOUT_.log"),  # `$` is replaced anyway
        ("com10.pdf", "com10.pdf"),
        ("console.txt", "console.txt"),
        ("report.pdf", "report.pdf"),
        (".hidden.md", "hidden.md"),
        ("a/b.md", "a_b.md"),
        ("", "file"),
    ],
)
def test_safe_file_name(name: str, expected: str) -> None:
    assert safe_file_name(name) == expected


@pytest.mark.parametrize("stem", ["x" * 400, "é" * 300, "示" * 200])
def test_a_long_file_name_is_cut_but_keeps_its_extension(stem: str) -> None:
    name = safe_file_name(stem + ".docx")
    assert name.endswith(".docx") and name.startswith(stem[:10])
    assert len(name.encode("utf-8")) <= 250
