"""Helpers for the end-to-end tests (tests/test_e2e_*.py): the real CLI against the emulator.

An `E2E` bundles one running emulator with a throw-away configuration in tmp_path (zero
pacing, zero backoff, one account whose email matches the emulator's session) and the
cookie file written from the emulator's cookies, and runs `pplx-export` commands through
click's CliRunner (in-process) or a subprocess.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from click.testing import CliRunner, Result

from pplx_export.archive.raw import redact_tokens
from pplx_export.cli.export import main
from pplx_export.emulator import DEFAULT_EMAIL, RunningEmulator, run_emulator
from pplx_export.site.thread import merge_pages
from pplx_export.store.batch_state import BatchState
from tests.emulator_support import fetch_pages

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "archive"
FIDELITY = REPO.parent / "shared" / "tools" / "fidelity.py"
ACCOUNT = "maya"  # the fixture archive's first author; config display name = folder name
CLI = "from pplx_export.cli.export import run; run()"
TEMP_MARKERS = (".pplx-tmp-",)
THREAD_ENDPOINT = "GET /rest/thread"
GRAPHQL_ENDPOINT = "POST /rest/perplexity_ask/graphql"
REST_LISTING_ENDPOINT = "POST /rest/thread/list_ask_threads"
SESSION_ENDPOINT = "GET /api/auth/session"


@dataclass
class E2E:
    emu: RunningEmulator
    tmp: Path
    account: str = ACCOUNT

    @property
    def out(self) -> Path:
        return self.tmp / "out"

    @property
    def config(self) -> Path:
        return self.tmp / "config.toml"

    @property
    def cookies(self) -> Path:
        return self.tmp / "cookies.json"

    def write_files(
        self, email: str, cookies: dict[str, str] | None = None, *, listing: str = ""
    ) -> None:
        """The config (`listing`: its `[network] listing`, else the default) and cookies."""
        chosen = f'listing = "{listing}"\n' if listing else ""
        self.config.write_text(
            f"[network]\nmin_interval = 0\nbackoff_cap = 0\n{chosen}\n"
            f'[accounts.{self.account}]\nemail = "{email}"\n',
            encoding="utf-8",
        )
        self.cookies.write_text(json.dumps(cookies or self.emu.cookies), encoding="utf-8")

    def common(self) -> list[str]:
        return [
            "--config",
            str(self.config),
            "--cookies",
            str(self.cookies),
            "--out",
            str(self.out),
            "--base-url",
            self.emu.base_url,
        ]

    def cli(self, *args: str) -> Result:
        """Run `pplx-export <args> <common options>` in-process (stdout/stderr apart)."""
        return CliRunner().invoke(main, [*args, *self.common()], catch_exceptions=False)

    def offline(self, *args: str) -> Result:
        """An offline command (no cookie or network options): only the config and --out."""
        common = ["--config", str(self.config), "--out", str(self.out)]
        return CliRunner().invoke(main, [*args, *common], catch_exceptions=False)

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-c", CLI, *args, *self.common()]

    def popen(self, *args: str, stderr: int = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            self.argv(*args),
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )

    def state(self) -> dict[str, Any]:
        """The batch state as the tool reads it (read-only)."""
        state = BatchState.load(self.out, repair=False)
        state.close()
        return state.threads

    def stats(self) -> dict[str, Any]:
        return self.emu.stats()


@contextlib.contextmanager
def signed_in(tmp_path: Path, **emulator: Any) -> Iterator[E2E]:
    """An emulator over the fixture archive (`emulator`: run_emulator's options) and a
    configuration signed in to it: what each e2e module's `e2e` fixture yields."""
    with run_emulator(FIXTURES, **emulator) as emu:
        env = E2E(emu, tmp_path)
        env.write_files(DEFAULT_EMAIL)
        yield env


def rerender_json(env: E2E, *args: str) -> dict[str, int]:
    """`re-render --json --jobs 1 ARGS`, which must succeed: its summary."""
    result = env.offline("re-render", "--json", "--jobs", "1", *args)
    assert result.exit_code == 0, result.output
    doc: dict[str, int] = json.loads(result.stdout)
    return doc


def by_endpoint(stats: dict[str, Any], key: str) -> int:
    return int(stats["by_endpoint"].get(key, 0))


def thread_dirs(root: Path) -> list[Path]:
    """Thread directories of an archive (`<account>/<mode>/<dir>` holding raw_entries.json)."""
    return sorted(
        p.parent
        for p in root.glob("*/*/*/raw_entries.json")
        if p.parts[-4] != "index" and not p.parts[-2].startswith(".")
    )


def thread_uuid(directory: Path) -> str:
    return str(json.loads((directory / "thread.json").read_text("utf-8"))["web_uuid"])


def fixture_threads() -> dict[str, Path]:
    """web_uuid -> fixture thread directory."""
    return {thread_uuid(d): d for d in thread_dirs(FIXTURES)}


def served_raw(emu: RunningEmulator, uuid: str, *, schematized: bool) -> dict[str, Any]:
    """What the emulator serves for a thread, every page merged, as the client merges them."""
    with httpx.Client(base_url=emu.base_url, cookies=emu.cookies, timeout=10) as http:
        return merge_pages(fetch_pages(http, uuid, schematized=schematized))


def redacted(doc: Any) -> Any:
    return redact_tokens(doc)[0]


def leftover_temp_files(root: Path) -> list[str]:
    """Names of torn writes: atomic-write temp files and partial downloads."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + dirnames:
            if name.startswith(TEMP_MARKERS) or name.endswith(".part"):
                out.append(os.path.join(dirpath, name))
    return sorted(out)


def unparseable_json(root: Path) -> list[str]:
    bad = []
    for path in sorted(root.rglob("*.json")):
        try:
            json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            bad.append(str(path))
    for path in sorted(root.rglob("*.jsonl")):
        for line in path.read_text("utf-8").splitlines():
            # index/rendered.jsonl holds two JSON values per line (directory TAB record)
            # after its header; every other line is one.
            parts = line.split("\t", 1) if path.name == "rendered.jsonl" else [line]
            try:
                for part in parts:
                    json.loads(part)
            except ValueError:
                bad.append(f"{path}: {line[:60]}")
    return bad


def run_fidelity(archive: Path, extra: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(FIDELITY), str(archive), *extra],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
