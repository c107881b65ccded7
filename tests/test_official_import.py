"""`import` of Perplexity's "Export my data" archive (issue 37) against the emulator: the
audit finds exactly the planted cases, recovery makes them searchable, `sync` upgrades
what the API still serves, and nothing the API gave is overwritten."""

from __future__ import annotations

import json
import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pplx_export.emulator import run_emulator
from pplx_export.emulator.official_export import (
    EXTRA_QUESTION,
    MEMBER,
    ONLY_IN_EXPORT,
    Planted,
    write_export_zip,
)
from pplx_export.store.docs import load_bytes
from tests.e2e_support import E2E, THREAD_ENDPOINT, by_endpoint


@pytest.fixture
def env(tmp_path: Path) -> Iterator[E2E]:
    """The bundled sample library (account alice), signed in."""
    with run_emulator(None) as emu:
        e = E2E(emu, tmp_path, account="alice")
        e.write_files("alice@example.com")
        yield e


def _export(env: E2E) -> tuple[Path, Planted]:
    path = env.tmp / "user_data_export.zip"
    return path, write_export_zip(env.emu.library, path)


def _import(env: E2E, path: Path, *args: str) -> dict[str, Any]:
    result = env.cli("import", str(path), "--json", *args)
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def _thread_json(env: E2E, rel: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((env.out / rel / "thread.json").read_text("utf-8"))
    return doc


def _files(root: Path) -> dict[Path, bytes]:
    """Every file of the archive's threads (not index/, whose run logs change)."""
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and "index" not in p.parts}


def _by_uuid(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["web_uuid"]: t for t in report["threads"]}


def test_audit_after_sync_finds_exactly_the_planted_cases(env: E2E) -> None:
    assert env.cli("sync").exit_code in (0, 4)
    path, planted = _export(env)
    audit = _import(env, path, "--audit-only")
    threads = _by_uuid(audit)
    assert audit["conversations"] == planted.conversations
    assert {u for u, t in threads.items() if t["status"] == "not_archived"} == set(
        planted.not_served
    )
    missing = {u: t["missing"] for u, t in threads.items() if t["status"] == "missing_turns"}
    assert missing == planted.extra_turns
    # verify --against is the same check, and fails while something is missing.
    result = env.offline("verify", "--against", str(path))
    assert result.exit_code == 4, result.output
    assert "3 not archived" in result.stdout


def test_recovery_is_searchable_idempotent_and_never_touches_api_files(env: E2E) -> None:
    assert env.cli("sync").exit_code in (0, 4)
    path, planted = _export(env)
    (extra_uuid,) = planted.extra_turns
    report = _import(env, path)
    threads = _by_uuid(report)
    assert report["recovered"] == 3 and report["turns_added"] == 1
    rel = threads[extra_uuid]["dir"]
    raw_before = (env.out / rel / "raw_entries.json").read_bytes()
    # The archived thread shows the export's extra turn, marked, and keeps its API turns.
    doc = _thread_json(env, rel)
    assert doc["imported_turns"] == 1 and "source" not in doc
    conversation = (env.out / rel / "conversation.md").read_text(encoding="utf-8")
    assert EXTRA_QUESTION in conversation and "Imported from Perplexity's data export" in (
        conversation
    )
    only = threads[planted.not_served[-1]]
    assert only["action"] == "recovered"
    assert _thread_json(env, only["dir"])["source"] == "official_export"
    # Searchable.
    found = env.offline("search", ONLY_IN_EXPORT[1][0].split()[-1].rstrip("?"), "--json")
    assert found.exit_code == 0, found.output
    assert only["web_uuid"] in found.stdout
    # `status` lists the recovered threads.
    status = env.offline("status", "--json")
    official = json.loads(status.stdout)["official_export"]
    assert official["recovered"] == 3
    assert {t["uuid"] for t in official["export_only"]} == set(planted.not_served)
    assert "3 thread(s) recovered from Perplexity's data export" in env.offline("status").stdout
    # The same file again changes nothing.
    snapshot = {
        p: p.read_bytes() for p in env.out.rglob("*") if p.is_file() and "index" not in p.parts
    }
    again = _import(env, path)
    assert again["recovered"] == 0 and again["turns_added"] == 0
    assert {u: t["status"] for u, t in _by_uuid(again).items()} == {u: "complete" for u in threads}
    after = {
        p: p.read_bytes() for p in env.out.rglob("*") if p.is_file() and "index" not in p.parts
    }
    assert after == snapshot
    assert (env.out / rel / "raw_entries.json").read_bytes() == raw_before
    # The archive stays consistent: verify (re-render in memory) and the audit agree.
    result = env.offline("verify", "--against", str(path))
    assert result.exit_code == 0, result.output
    # A re-render keeps the imported turns and the API's raw file as they are.
    assert env.offline("re-render").exit_code == 0
    assert (env.out / rel / "raw_entries.json").read_bytes() == raw_before
    assert EXTRA_QUESTION in (env.out / rel / "conversation.md").read_text(encoding="utf-8")


def test_sync_upgrades_what_the_api_still_serves(env: E2E) -> None:
    path, planted = _export(env)
    report = _import(env, path)  # a fresh archive: every conversation is recovered
    assert report["recovered"] == planted.conversations
    (extra_uuid,) = planted.extra_turns
    before = env.emu.stats()
    assert env.cli("sync").exit_code in (0, 4)
    stats = env.emu.stats()
    threads = _by_uuid(_import(env, path, "--audit-only"))
    for uuid, t in threads.items():
        doc = _thread_json(env, t["dir"])
        if uuid in planted.not_served:
            assert doc.get("source") == "official_export", uuid
        else:
            assert doc.get("source") is None, uuid  # the API's export replaced it
        assert t["status"] == "complete"
    # The thread the API serves with fewer turns kept the imported version in history/.
    extra = _thread_json(env, threads[extra_uuid]["dir"])
    assert extra["imported_turns"] == 1
    (kept,) = extra["history"]
    assert kept["turns"] == extra["n_turns"]
    kept_dir = env.out / threads[extra_uuid]["dir"] / kept["dir"]
    assert {p.name for p in kept_dir.iterdir()} >= {
        "raw_entries.json",
        "raw_official_export.json",
        "thread.json",
    }
    # The recovered threads nobody lists were asked for by the sync, and the answers kept.
    asked = by_endpoint(stats, THREAD_ENDPOINT) - by_endpoint(before, THREAD_ENDPOINT)
    assert asked >= len(planted.not_served)
    state = json.loads(load_bytes(env.out, "official_import") or b"")
    said = {u: r["api"] for u, r in state["recovered"].items() if u in planted.not_served}
    expected = {u: "not_found" for u in planted.not_served}
    for uuid in planted.not_served:
        record = env.emu.library.get(uuid)
        if record is not None:
            expected[uuid] = record.state  # deleted | expired
    assert sorted(said.values()) == ["deleted", "expired", "not_found"]
    assert said == expected
    # Deleted and expired threads are not asked again; the unknown one is, once.
    before = env.emu.stats()
    assert env.cli("sync").exit_code in (0, 4)
    again = by_endpoint(env.emu.stats(), THREAD_ENDPOINT) - by_endpoint(before, THREAD_ENDPOINT)
    assert again == 1


def test_damaged_inputs_are_one_line(env: E2E) -> None:
    path, _ = _export(env)
    data = path.read_bytes()
    cut = env.tmp / "cut.zip"
    cut.write_bytes(data[: len(data) // 2])
    notjson = env.tmp / "export.json"
    notjson.write_text('{"conversations": [{"context_uuid": "x", "entries": [', "utf-8")
    other = env.tmp / "other.zip"
    with zipfile.ZipFile(other, "w") as zf:
        zf.writestr("conversations-1.json", "{}")
    for bad in (cut, notjson, other, env.tmp / "missing.zip"):
        result = env.cli("import", str(bad))
        assert result.exit_code == 2, (bad, result.output)
        lines = [line for line in result.stderr.splitlines() if line.startswith("error")]
        assert len(lines) == 1 and "Traceback" not in result.output, result.output
        assert str(bad.name) in lines[0]
    assert MEMBER


def test_a_thread_lost_from_the_archive_comes_back_in_full(env: E2E) -> None:
    """Listed and unchanged (the batch skips it) but its directory is gone: the import
    recovers it from the export, and `import --fetch` replaces it with the API's export."""
    assert env.cli("sync").exit_code in (0, 4)
    path, _ = _export(env)
    lost = "835cd566-8b15-5f82-9ac1-a0c6cc2c1b2e"
    (gone,) = [d for d in (env.out / "alice" / "search").iterdir() if d.name.endswith(lost[:8])]
    api_raw = (gone / "raw_entries.json").read_bytes()
    shutil.rmtree(gone)
    report = _import(env, path)
    recovered = _by_uuid(report)[lost]
    assert recovered["status"] == "not_archived" and recovered["action"] == "recovered"
    assert "imported_from" in (env.out / recovered["dir"] / "raw_entries.json").read_text("utf-8")
    before = env.emu.stats()
    fetched = _import(env, path, "--fetch")["fetch"]
    assert fetched["upgraded"] == [lost]
    assert by_endpoint(env.emu.stats(), THREAD_ENDPOINT) - by_endpoint(
        before, THREAD_ENDPOINT
    ) == 1 + len(fetched["not_served"])
    (back,) = [d for d in (env.out / "alice" / "search").iterdir() if d.name.endswith(lost[:8])]
    assert (back / "raw_entries.json").read_bytes() == api_raw
    doc = _thread_json(env, back.relative_to(env.out).as_posix())
    assert "source" not in doc and "imported_turns" not in doc
    assert "history" not in doc  # the API's has as many turns: nothing to keep


def test_damage_midway_keeps_what_came_before_and_says_so(env: E2E) -> None:
    path, _ = _export(env)
    with zipfile.ZipFile(path) as zf:
        text = zf.read(MEMBER).decode("utf-8")
    doc = json.loads(text)
    first = json.dumps(doc["conversations"][0])
    broken = env.tmp / "conversations.json"
    broken.write_text('{"conversations": [' + first + ', {"context_uuid": "x", "en', "utf-8")
    result = env.cli("import", str(broken))
    assert result.exit_code == 4, result.output
    assert "recovered 1 thread(s)" in result.stdout
    assert "damaged or truncated JSON" in result.stderr and "Traceback" not in result.output
    assert len(list(env.out.glob("*/*/*/raw_official_export.json"))) == 1
