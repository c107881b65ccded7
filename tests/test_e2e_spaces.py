"""Spaces online, against the emulator: metadata with a second account, space listings,
`batch --space`, `sync --refresh-spaces`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pplx_export.cli.export import main
from pplx_export.emulator import SESSION_COOKIE, RunningEmulator, run_emulator
from pplx_export.store.docs import load_bytes
from tests.spaces_support import space, uid, write_thread

BOB_TOKEN = "emulator-session-token-bob"
ROADMAP = "team-roadmap-7a3e55"
GARDEN = "garden-club-2f81c4"
BOB_THREAD = "17b8ffee-91bd-5f7d-b028-59d6575ec9d7"  # uid("thread:tomatoes") of the sample


@dataclass
class Run:
    emu: RunningEmulator
    tmp: Path

    @property
    def out(self) -> Path:
        return self.tmp / "out"

    def setup(self, accounts: tuple[str, ...] = ("alice", "bob")) -> None:
        lines = ["[network]", "min_interval = 0", "backoff_cap = 0", "max_retries = 1", ""]
        names = {"alice": "Alice Example", "bob": "Bob Rivera"}
        for name in accounts:
            lines += [f"[accounts.{name}]", f'display_name = "{names[name]}"']
            lines += [f'email = "{name}@example.com"', ""]
        (self.tmp / "config.toml").write_text("\n".join(lines), "utf-8")
        token = self.emu.cookies[SESSION_COOKIE]
        jar = {
            SESSION_COOKIE: token,
            "__Secure-pplx.session.u-alice": token,
            "__Secure-pplx.session.u-bob": BOB_TOKEN,
        }
        (self.tmp / "cookies.json").write_text(json.dumps(jar), "utf-8")

    def cli(self, *args: str) -> Result:
        common = ["--config", str(self.tmp / "config.toml"), "--cookies"]
        common += [str(self.tmp / "cookies.json"), "--out", str(self.out)]
        common += ["--base-url", self.emu.base_url, "--account", "alice"]
        return CliRunner().invoke(main, [*args, *common])

    def requests(self, endpoint: str) -> int:
        return int(self.emu.stats()["by_endpoint"].get(endpoint, 0))


@pytest.fixture
def run(tmp_path: Path) -> Iterator[Run]:
    with run_emulator(extra_accounts={BOB_TOKEN: ("bob@example.com", "Bob Rivera")}) as emu:
        r = Run(emu, tmp_path)
        r.setup()
        yield r


def test_a_denied_space_is_read_through_the_second_account(run: Run) -> None:
    assert run.cli("index").exit_code == 0
    run.emu.reset_stats()
    result = run.cli("spaces", "--fetch-meta", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["meta"] == {
        "fetched": 4, "via_other_account": 1, "failed": 0, "requests": 8,
    }  # fmt: skip
    # alice: 1 session probe + 4 spaces; bob: 2 probes (the active token is alice's) + the
    # denied space again
    assert run.requests("GET /rest/collections/get_collection") == 5
    meta = json.loads(load_bytes(run.out, "space_meta") or b"")["spaces"]
    assert meta[ROADMAP]["via"] == "bob" and meta[ROADMAP]["owner_user"]["username"] == "erin"
    assert meta[GARDEN]["via"] == "alice"
    page = (run.out / "spaces" / f"{ROADMAP}.md").read_text("utf-8")
    assert page.startswith("# 🗺 Team Roadmap\n")
    assert "| Erin Walsh | erin | 4 owner |" in page
    assert "| Bob Rivera | bob | 2 can edit |" in page
    garden = (run.out / "spaces" / f"{GARDEN}.md").read_text("utf-8")
    for row in ("| Alice Example | alice | 4 owner |", "| Dave Okafor | dave | 3 can manage |",
                "| Carol Diaz | carol | 1 can view |"):  # fmt: skip
        assert row in garden


def test_a_space_nobody_can_see_is_recorded_with_its_error(run: Run) -> None:
    run.setup(accounts=("alice",))
    assert run.cli("index").exit_code == 0
    result = run.cli("spaces", "--fetch-meta")
    assert result.exit_code == 0, result.output
    meta = json.loads(load_bytes(run.out, "space_meta") or b"")["spaces"]
    assert meta[ROADMAP] == {
        "slug": ROADMAP,
        "error": "alice: VIEW_COLLECTION_NOT_ALLOWED",
        "denied_for": ["alice"],
    }
    page = (run.out / "spaces" / f"{ROADMAP}.md").read_text("utf-8")
    assert "Metadata unavailable: alice: VIEW_COLLECTION_NOT_ALLOWED" in page
    assert "Summarise the Q3 roadmap review" in page  # its thread is still listed


def test_batch_space_exports_another_members_thread(run: Run) -> None:
    assert run.cli("index").exit_code == 0
    result = run.cli("space-index", f"https://www.perplexity.ai/spaces/{GARDEN}")
    assert result.exit_code == 0, result.output
    listing = json.loads((run.out / "index" / f"space_{GARDEN}.json").read_text("utf-8"))
    assert {(t["author"], t["author_name"]) for t in listing["threads"]} == {
        ("alice", "Alice Example"), ("bob", "Bob Rivera"),
    }  # fmt: skip
    assert listing["space"]["uuid"]  # known from the library index
    run.emu.reset_stats()
    result = run.cli("batch", "--space", GARDEN, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["ok"] == 2
    exported = list((run.out / "Bob Rivera" / "search").glob("*_17b8ffee/thread.json"))
    assert len(exported) == 1
    doc = json.loads(exported[0].read_text("utf-8"))
    assert doc["author"] == "bob" and doc["space"]["slug"] == GARDEN
    # unchanged threads are skipped on the next run: no thread fetched again
    run.emu.reset_stats()
    result = run.cli("batch", "--space", GARDEN, "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["ok"] == 0
    assert run.requests("GET /rest/thread") == 0


def test_batch_space_without_a_listing_says_what_to_run(run: Run) -> None:
    result = run.cli("batch", "--space", GARDEN)
    assert result.exit_code == 2
    assert f"run `pplx-export space-index {GARDEN}` first" in result.stderr


@pytest.mark.parametrize("ref", ["../x", "a/b/c", "", "https://www.perplexity.ai/search/x"])
def test_space_index_refuses_what_is_not_a_space(run: Run, ref: str) -> None:
    result = run.cli("space-index", ref)
    assert result.exit_code == 2 and "not a space URL or slug" in result.stderr
    assert run.emu.stats()["total"] == 0


def paged_library(root: Path) -> None:
    """Three spaces: 45 threads, 25 behind a server that ignores the offset, 25 whose last
    page still claims a next one."""
    n = 0
    for slug, count in (("big", 45), ("stuck", 25), ("tail", 25)):
        for _ in range(count):
            n += 1
            write_thread(root, uid(n), title=f"{slug} {n}", space_ref=space(slug),
                         day=f"2026-10-{1 + n % 28:02d}")  # fmt: skip
    quirks = {"space_quirks": {"stuck": "ignore_offset", "tail": "empty_last_page"}}
    (root / "_emulator.json").write_text(json.dumps(quirks), "utf-8")


@pytest.mark.parametrize(
    ("slug", "threads", "pages"),
    [("big", 45, 3), ("stuck", 20, 2), ("tail", 25, 3)],
)
def test_space_index_pages_and_stops(tmp_path: Path, slug: str, threads: int, pages: int) -> None:
    library = tmp_path / "library"
    paged_library(library)
    with run_emulator(library) as emu:
        run = Run(emu, tmp_path)
        run.setup(accounts=("alice",))
        result = run.cli("space-index", slug, "--json")
        assert result.exit_code == 0, result.output
        assert run.requests("GET /rest/collections/list_collection_threads") == pages
    doc = json.loads(result.stdout)
    assert doc["threads"] == threads
    listing = json.loads((run.out / "index" / f"space_{slug}.json").read_text("utf-8"))
    assert listing["count"] == threads
    assert len({t["entryUUID"] for t in listing["threads"]}) == threads


def test_sync_refresh_spaces_runs_spaces_and_sync_space(run: Run) -> None:
    result = run.cli("sync", "--refresh-spaces")
    assert result.exit_code == 0, result.output
    assert load_bytes(run.out, "space_meta")
    assert (run.out / "spaces" / "index.md").is_file()
    assert "sync-space: 19 threads checked, 0 patched" in result.stderr  # alice's exported
    assert run.requests("GET /rest/collections/get_collection") == 5


def test_space_index_of_a_denied_space_names_it_and_writes_nothing(run: Run) -> None:
    result = run.cli("space-index", ROADMAP)
    assert result.exit_code == 1
    assert f"space {ROADMAP}: alice may not view it (VIEW_COLLECTION_NOT_ALLOWED)" in result.stderr
    assert "Traceback" not in result.output
    assert not (run.out / "index" / f"space_{ROADMAP}.json").exists()
