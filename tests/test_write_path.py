"""The first-render write path: atomic writes in few system calls, and token redaction in
the raw file's bytes. Both must give exactly what the plain path gives: the same bytes, the
same modes, atomic and durable as before."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pplx_export.archive.writer as writer
from pplx_export.archive.raw import (
    RAW_ENTRIES,
    dump_raw,
    has_live_token,
    redact_token_bytes,
    redact_tokens,
)
from pplx_export.commands.rerender.run import rerender
from pplx_export.util import atomic
from pplx_export.util.atomic import TEMP_PREFIX, atomic_write_bytes

FIXTURES = Path(__file__).parent / "fixtures" / "archive"


# --- atomic_write_bytes ---


def test_writes_exact_bytes_and_returns_the_stat(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    target = tmp_path / "d" / "f.json"
    target.write_bytes(b"old")
    st = atomic_write_bytes(target, b"new \xe4 bytes")
    assert target.read_bytes() == b"new \xe4 bytes"
    now = os.stat(target)
    assert (st.st_size, st.st_mtime_ns, st.st_ino) == (now.st_size, now.st_mtime_ns, now.st_ino)
    assert os.listdir(tmp_path / "d") == ["f.json"]


def test_mode_default_is_0666_less_umask_and_explicit_mode_is_exact(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        atomic.atomic_write_bytes(tmp_path / "a", b"x")
        atomic.atomic_write_bytes(tmp_path / "b", b"x", mode=0o640)  # narrowed by the umask
        atomic.atomic_write_bytes(tmp_path / "c", b"x", mode=0o600)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "a").st_mode) == 0o640
    assert stat.S_IMODE(os.stat(tmp_path / "b").st_mode) == 0o640
    assert stat.S_IMODE(os.stat(tmp_path / "c").st_mode) == 0o600


def test_no_mkdir_no_mkstemp_for_a_known_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real_mkdir, real_fsync = os.mkdir, os.fsync

    def mkdir(*a: Any, **k: Any) -> None:
        calls.append("mkdir")
        real_mkdir(*a, **k)

    def fsync(fd: int) -> None:
        calls.append("fsync")
        real_fsync(fd)

    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(tempfile, "mkstemp", lambda **k: pytest.fail("mkstemp"))
    atomic_write_bytes(tmp_path / "a", b"1")
    assert calls == []
    atomic_write_bytes(tmp_path / "b", b"2", durable=True)
    assert calls == ["fsync", "fsync"]  # the file, then its directory
    atomic_write_bytes(tmp_path / "new" / "deeper" / "c", b"3")  # a missing parent is made
    assert "mkdir" in calls
    assert (tmp_path / "new" / "deeper" / "c").read_bytes() == b"3"


def test_a_stale_temp_name_of_the_same_pid_falls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A killed process with this pid left the very name the counter gives next.
    monkeypatch.setattr(atomic, "_COUNTER", iter([7, 8]))
    stale = tmp_path / f"{TEMP_PREFIX}{os.getpid()}-7"
    stale.write_bytes(b"debris")
    atomic_write_bytes(tmp_path / "a", b"fresh")
    assert (tmp_path / "a").read_bytes() == b"fresh"
    assert stale.read_bytes() == b"debris"  # not written through


def test_a_failed_write_leaves_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "d").mkdir()
    target = tmp_path / "d" / "a"
    target.write_bytes(b"old")

    def fail(fd: int, data: Any) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", fail)
    with pytest.raises(OSError) as err:
        atomic_write_bytes(target, b"new")
    assert err.value.filename == str(target)
    monkeypatch.undo()
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path / "d") == ["a"]


# --- redaction in the bytes ---

TOKENS = st.one_of(
    st.text(max_size=6),
    st.sampled_from(["", "<redacted>", 'a"b', "\\", "中文", "\n", "\x00", "\u2028"]),
    st.none(),
    st.integers(),
    st.booleans(),
)
KEYS = st.sampled_from(["read_write_token", "x", 'x"read_write_token', "read_write_token\\"])
LEAVES = st.one_of(TOKENS, st.floats(allow_nan=False), st.sampled_from(["read_write_token"]))
DOCS = st.recursive(
    LEAVES,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)),
    max_leaves=10,
)


@given(DOCS)
def test_bytes_redaction_is_the_tree_redaction_or_declines(doc: Any) -> None:
    data = dump_raw(doc)
    got = redact_token_bytes(data)
    want_doc, want_count = redact_tokens(doc)
    if got is not None:
        assert got == (dump_raw(want_doc), want_count)
    # Whatever was decided, a plain string-valued token in the earlier tool's layout is
    # always done in the bytes.
    plain = dump_raw({"a": [{"read_write_token": "tok", "b": 1}]})
    assert redact_token_bytes(plain) == (
        dump_raw({"a": [{"read_write_token": "<redacted>", "b": 1}]}),
        1,
    )


@pytest.mark.parametrize(
    "data",
    [
        json.dumps({"read_write_token": "t"}, indent=1).encode(),  # indented
        json.dumps({"read_write_token": "t", "q": "中"}).encode(),  # ASCII-escaped
        json.dumps({"read_write_token": "t"}, separators=(",", ":")).encode(),  # compact
        b'{"read_write_token": null, "x": {"read_write_token": "t"}}',  # a null token
    ],
)
def test_other_layouts_are_left_to_the_tree(data: bytes) -> None:
    assert redact_token_bytes(data) is None


def test_control_characters_are_escaped_in_the_earlier_tools_layout_too() -> None:
    data = dump_raw({"text": "a\x01b\x1f", "read_write_token": "t"})
    assert b"\\u0001" in data and data.isascii()
    want = dump_raw({"text": "a\x01b\x1f", "read_write_token": "<redacted>"})
    assert redact_token_bytes(data) == (want, 1)


def test_escaped_backslash_u_is_not_an_ascii_escape() -> None:
    data = dump_raw({"text": "\\u793a", "read_write_token": "t"})
    assert redact_token_bytes(data) == (
        dump_raw({"text": "\\u793a", "read_write_token": "<redacted>"}),
        1,
    )


def _earlier_tool_archive(tmp_path: Path) -> tuple[Path, Path]:
    """One fixture thread whose raw_entries.json is in the earlier tool's layout."""
    src = next(
        p for p in sorted(FIXTURES.glob("*/*/*")) if has_live_token((p / RAW_ENTRIES).read_bytes())
    )
    rel = src.relative_to(FIXTURES)
    dest = tmp_path / "archive" / rel
    dest.parent.mkdir(parents=True)
    shutil.copytree(src, dest)
    for f in dest.glob("raw_*.json"):
        f.write_bytes(dump_raw(json.loads(f.read_bytes())))
    return tmp_path / "archive", dest


def test_rerender_redacts_in_the_bytes_with_the_earlier_tools_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, thread = _earlier_tool_archive(tmp_path)
    before = {f.name: json.loads(f.read_bytes()) for f in thread.glob("raw_*.json")}
    live = [f for f in thread.glob("raw_*.json") if has_live_token(f.read_bytes())]
    fsynced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        fsynced.append(os.readlink(f"/proc/self/fd/{fd}"))  # Linux; the test runs there
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    # The tree walk and the re-encode are not needed for such a file.
    monkeypatch.setattr(writer, "redact_tokens", lambda doc: pytest.fail("tree walk"))
    monkeypatch.setattr(writer, "dump_raw", lambda doc: pytest.fail("re-encode"))
    summary = rerender(root, jobs=1)
    assert summary.failed == 0 and summary.redacted_tokens >= 1
    for name, doc in before.items():
        want, _ = redact_tokens(doc)
        assert (thread / name).read_bytes() == dump_raw(want)
        assert not has_live_token((thread / name).read_bytes())
    # Durable: each rewritten raw file, then their directory once (no derived file is synced).
    # (A file is synced under its temp name, before the rename.)
    assert fsynced.count(str(thread)) == 1, fsynced
    temps = [p for p in fsynced if p.startswith(str(thread / TEMP_PREFIX))]
    assert len(temps) == len(live), fsynced
    assert not list(thread.rglob(f"{TEMP_PREFIX}*"))


@pytest.mark.parametrize("indent", [1, None])
def test_other_layouts_are_redacted_in_their_encoding_without_a_tree_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, indent: int | None
) -> None:
    """An indented or ASCII-escaped raw file is rewritten in the earlier tool's layout: the
    document is encoded (as it must be) and the tokens are taken out of those bytes."""
    root, thread = _earlier_tool_archive(tmp_path)
    before = {f.name: json.loads(f.read_bytes()) for f in thread.glob("raw_*.json")}
    for f in thread.glob("raw_*.json"):
        f.write_text(json.dumps(before[f.name], indent=indent))  # ensure_ascii: escaped
        assert redact_token_bytes(f.read_bytes()) is None or indent is None
    monkeypatch.setattr(writer, "redact_tokens", lambda doc: pytest.fail("tree walk"))
    summary = rerender(root, jobs=1)
    assert summary.failed == 0 and summary.redacted_tokens >= 1
    for name, doc in before.items():
        want, count = redact_tokens(doc)
        if count:
            assert (thread / name).read_bytes() == dump_raw(want)
