"""Title-slug thread URLs (protocol.md §9.4) through the real CLI against the emulator.

Threads made before about 2026 have URLs like `/search/what-is-python-eE52pv1vShiwEj2VPhouPA`:
the last 22 characters are the thread UUID in base64url, so `export` resolves them with no
request. The fixture archive's threads have UUID URLs; the tests compute their slugs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pplx_export.emulator import run_emulator
from pplx_export.util.threadref import slug_tail
from tests.e2e_support import E2E, THREAD_ENDPOINT, by_endpoint, signed_in
from tests.emulator_support import sample_uuid
from tests.test_ask_cli import Rig

COMPUTER_UUID = "cb11e506-373b-5e2d-9156-c7629f699010"  # Audit the nginx config (computer)
SEARCH_UUID = "24a76805-90eb-5b12-a5e0-d0288d7ceae3"  # How do Rust lifetimes work (search)
SITE = "https://www.perplexity.ai"


@pytest.fixture
def e2e(tmp_path: Path) -> Iterator[E2E]:
    with signed_in(tmp_path) as env:
        yield env


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    """`pplx-ask` against the emulator's bundled sample library."""
    with run_emulator() as emu:
        r = Rig(emu, tmp_path)
        r.write_config()
        yield r


def test_export_by_title_slug_url(e2e: E2E) -> None:
    assert e2e.cli("index").exit_code == 0
    e2e.emu.reset_stats()
    slug = f"how-do-rust-lifetimes-work-{slug_tail(SEARCH_UUID)}"
    url = f"{SITE}/search/{slug}"
    result = e2e.cli("export", url + "?utm_source=copy_output")
    assert result.exit_code == 0, result.output
    assert set(e2e.stats()["by_thread"]) == {SEARCH_UUID}  # asked by its UUID, once
    state = e2e.state()
    assert set(state) == {SEARCH_UUID}
    directory = e2e.out / state[SEARCH_UUID]["dir"]
    assert directory.name.endswith("_" + SEARCH_UUID[:8])
    doc = json.loads((directory / "thread.json").read_text("utf-8"))
    assert doc["web_uuid"] == SEARCH_UUID
    assert doc["url"] == url  # the URL the user gave, without its query string
    # `search` shows the thread's URL as the archive holds it.
    found = e2e.offline("search", "lifetimes", "--json")
    assert found.exit_code == 0, found.output
    hits = json.loads(found.stdout)["results"]
    assert [(h["uuid"], h["url"]) for h in hits] == [(SEARCH_UUID, url)]
    assert e2e.offline("verify").exit_code == 0

    # The same thread by its UUID, by an old /thread/ link of its slug: unchanged, skipped;
    # forced, fetched once.
    e2e.emu.reset_stats()
    again = e2e.cli("export", SEARCH_UUID.upper(), f"perplexity.ai/thread/{slug}")
    assert again.exit_code == 0, again.output
    assert by_endpoint(e2e.stats(), THREAD_ENDPOINT) == 0
    forced = e2e.cli("export", "--force", url, f"/search/{slug}", SEARCH_UUID, "--json")
    assert forced.exit_code == 0, forced.output
    assert set(e2e.stats()["by_thread"]) == {SEARCH_UUID}
    assert by_endpoint(e2e.stats(), THREAD_ENDPOINT) == 1
    assert json.loads((directory / "thread.json").read_text("utf-8"))["url"] == url


def test_a_thread_link_keeps_the_computer_url_form(e2e: E2E) -> None:
    """A /thread/ link gives no URL to keep: the index row's mode picks the form (§4.3)."""
    assert e2e.cli("index").exit_code == 0
    result = e2e.cli("export", f"/thread/audit-the-nginx-config-{slug_tail(COMPUTER_UUID)}")
    assert result.exit_code == 0, result.output
    directory = e2e.out / e2e.state()[COMPUTER_UUID]["dir"]
    assert directory.parent.name == "computer"
    doc = json.loads((directory / "thread.json").read_text("utf-8"))
    assert doc["url"] == f"{SITE}/computer/tasks/{COMPUTER_UUID}"


def test_a_slug_that_names_no_thread_is_one_line_that_says_what_is_accepted(e2e: E2E) -> None:
    tail = slug_tail(SEARCH_UUID)
    for bad in (
        f"{SITE}/search/how-do-rust-lifetimes-work-{tail[:-1]}R",  # not 16 bytes' encoding
        f"{SITE}/spaces/rust-notes-{tail}",  # a space, not a thread
        f"how-do-rust-lifetimes-work-{tail}",  # a bare slug: not said to be a thread's
    ):
        result = e2e.cli("export", bad)
        assert result.exit_code == 2, bad
        message = result.stderr.strip()
        assert "\n" not in message
        assert "not a thread URL or UUID" in message
        assert "/search/<title>-<22-character id>" in message
    assert e2e.stats()["total"] == 0


def test_pplx_ask_follow_up_and_mark_read_take_a_title_slug_url(rig: Rig) -> None:
    uuid = sample_uuid("bayes")  # a study thread of the sample library
    url = f"{SITE}/search/explain-bayes-theorem-{slug_tail(uuid)}"
    doc = rig.ask_json("One more example, please", "--follow-up", url)
    assert doc["follow_up"] is True and doc["thread_uuid"] == uuid
    assert rig.record(uuid).entries[-1]["query_str"] == "One more example, please"
    assert Path(doc["archived_to"]).name.endswith("_" + uuid[:8])
    result = rig.run("mark-read", url, "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["thread_uuid"] == uuid
    assert rig.emu.server.app.viewed[-1] == rig.record(uuid).context_uuid
