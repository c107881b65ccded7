"""Mutations between runs: touch, delete, expire; the library directory is never written."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import httpx
import pytest

from pplx_export.emulator import SAMPLE_DIR, run_emulator
from tests.emulator_support import (
    client,
    fetch_pages,
    graphql_all,
    rest_all,
    sample_uuid,
    thread_url,
)


def tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_touch_bumps_and_appends_a_turn() -> None:
    target = sample_uuid("bayes")
    with run_emulator(listing="both") as emu, client(emu) as http:
        before = {n["entryId"]: n["updatedAt"] for n in graphql_all(http)}
        plain_before = sum(len(p["entries"]) for p in fetch_pages(http, target))
        answer = http.post("/__emulator/mutate", json={"touch": target}).json()
        assert answer["status"] == "success"
        nodes = graphql_all(http)
        assert nodes[0]["entryId"] == target
        new_stamp = nodes[0]["updatedAt"]
        assert new_stamp > max(before.values())
        assert new_stamp.endswith("Z") and len(new_stamp.split(".")[1]) == 7  # µs + Z
        others = {n["entryId"]: n["updatedAt"] for n in nodes[1:]}
        assert all(before[k] == v for k, v in others.items())
        plain = [e for p in fetch_pages(http, target) for e in p["entries"]]
        schem = [e for p in fetch_pages(http, target, schematized=True) for e in p["entries"]]
        assert len(plain) == plain_before + 1
        assert plain[-1]["uuid"] == schem[-1]["uuid"]
        assert schem[-1]["blocks"]
        # The REST listing writes the same instant naive, as the live site does (§9.3).
        assert rest_all(http)[0]["last_query_datetime"] + "Z" == new_stamp


def test_delete_hides_and_answers_entry_deleted() -> None:
    target = sample_uuid("tides")
    with run_emulator(listing="both") as emu, client(emu) as http:
        emu.mutate(delete=target)
        assert target not in {n["entryId"] for n in graphql_all(http)}
        assert target not in {r["uuid"] for r in rest_all(http)}
        response = http.get(thread_url(target))
        assert response.status_code == 400
        assert "ENTRY_DELETED" in response.text


def test_delete_can_stay_listed_and_expire_stays_listed() -> None:
    with run_emulator(listing="both") as emu, client(emu) as http:
        http.post("/__emulator/mutate", json={"delete": sample_uuid("tides"), "listed": True})
        http.post("/__emulator/mutate", json={"expire": sample_uuid("bayes")})
        listed = {n["entryId"] for n in graphql_all(http)}
        assert {sample_uuid("tides"), sample_uuid("bayes")} <= listed
        assert "ENTRY_EXPIRED" in http.get(thread_url(sample_uuid("bayes"))).text


def test_mutate_unknown_thread_and_bad_body() -> None:
    with run_emulator() as emu:
        url = f"{emu.base_url}/__emulator/mutate"
        assert httpx.post(url, json={"touch": "nope"}).status_code == 404
        assert httpx.post(url, json={"frobnicate": "x"}).status_code == 400
        with pytest.raises(KeyError):
            emu.mutate(touch="nope")
        answer = emu.mutate({"expire": sample_uuid("tides")})
        assert answer["action"] == "expire"
        assert emu.mutate(restore=sample_uuid("tides"))["action"] == "restore"


def test_library_directory_is_never_written(tmp_path: Path) -> None:
    library = tmp_path / "lib"
    shutil.copytree(SAMPLE_DIR, library)
    before = tree_digest(library)
    with run_emulator(library) as emu, client(emu) as http:
        for key in ("ssg", "sourdough"):
            emu.mutate(touch=sample_uuid(key))
        emu.mutate(delete=sample_uuid("basil"))
        http.post(
            "/rest/sse/perplexity_ask",
            json={"query_str": "new", "params": {"model_preference": "pplx_pro"}},
        ).read()
        http.post("/rest/collections/create_collection", json={"title": "New space"})
    assert tree_digest(library) == before
