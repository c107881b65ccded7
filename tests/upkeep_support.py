"""Shared setup of the upkeep-command tests (sync-deleted and the backfills).

The fixture library is exported once per test module (`exported_archive`) and copied into
each test's directory; each test runs its own emulator, so its mutations stay its own. A
second signed-in account, `tomas`, owns the threads filed under his name when a test says so.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pplx_export.emulator import DEFAULT_EMAIL, run_emulator
from tests.e2e_support import E2E, FIXTURES, thread_dirs

SEARCH_UUID = "24a76805-90eb-5b12-a5e0-d0288d7ceae3"  # How do Rust lifetimes work (maya)
BASIL_UUID = "d47b01e7-aa17-5b3e-a6da-4e1ce47c4a12"  # Best way to store fresh basil (maya)
COMPUTER_UUID = "cb11e506-373b-5e2d-9156-c7629f699010"  # Audit the nginx config (tomas)
EBIKE_UUID = "c0b720ca-5034-5675-b730-44eca9d66db2"  # computer, with sub-agents (tomas)
BG_ASSET = "5e1f0000-0000-4000-8000-00000000b9d1"  # listed by a background entry only
TOMAS_EMAIL = "tomas@example.com"
TOMAS_TOKEN = "emulator-session-token-tomas"
TOMAS_UID = "tomas-uid"


def library_with_background_asset(tmp: Path) -> Path:
    """The fixture library plus a PDF that only the e-bike thread's first sub-agent lists."""
    lib = tmp / "library"
    shutil.copytree(FIXTURES, lib)
    (path,) = lib.glob(f"tomas/computer/*_{EBIKE_UUID[:8]}/raw_blocks.json")
    blocks = json.loads(path.read_text("utf-8"))
    asset = {
        "uuid": BG_ASSET,
        "asset_type": "PDF_FILE",
        "pdf_file": {
            "url": "https://d2z0o16i8xm8ak.cloudfront.net/bg/range_table.pdf",
            "filename": "range_table.pdf",
        },
        "created_at": "1938197500",
    }
    blocks["background_entries"][0]["blocks"].append({"unified_assets_block": {"assets": [asset]}})
    path.write_text(json.dumps(blocks, ensure_ascii=False), "utf-8")
    return lib


def export_fixture_library(tmp: Path, *, library: Path = FIXTURES, url_ttl: int = -1) -> Path:
    """The library exported by `sync`; with `url_ttl` 0 every signed URL is dead on arrival,
    so the manifests list every downloadable version and no file is downloaded."""
    tmp.mkdir(parents=True, exist_ok=True)
    with run_emulator(library) as emu:
        emu.mutate(url_ttl=url_ttl)
        env = E2E(emu, tmp)
        env.write_files(DEFAULT_EMAIL)
        result = env.cli("sync")
        assert result.exit_code == 0, result.output
    return env.out


@contextmanager
def upkeep_env(
    tmp: Path, exported: Path, *, library: Path = FIXTURES, faults: str = ""
) -> Iterator[E2E]:
    """An emulator (with tomas signed in too) and a copy of the exported archive."""
    extra = {TOMAS_TOKEN: (TOMAS_EMAIL, "Tomas Example")}
    tmp.mkdir(parents=True, exist_ok=True)
    with run_emulator(library, extra_accounts=extra, faults=faults) as emu:
        env = E2E(emu, tmp)
        env.write_files(DEFAULT_EMAIL)
        shutil.copytree(exported, env.out)
        yield env


def add_tomas(env: E2E) -> None:
    """Configure tomas as a second account and put his session in the cookie file."""
    text = env.config.read_text("utf-8")
    env.config.write_text(
        f'default_account = "{env.account}"\n{text}\n'
        f'[accounts.tomas]\nemail = "{TOMAS_EMAIL}"\nuser_id = "{TOMAS_UID}"\n',
        encoding="utf-8",
    )
    cookies = dict(env.emu.cookies)
    cookies[f"__Secure-pplx.session.{TOMAS_UID}"] = TOMAS_TOKEN
    env.cookies.write_text(json.dumps(cookies), encoding="utf-8")


def dir_of(env: E2E, uuid: str) -> Path:
    (found,) = [d for d in thread_dirs(env.out) if uuid[:8] in d.name]
    return found


def thread_json(env: E2E, uuid: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((dir_of(env, uuid) / "thread.json").read_text("utf-8"))
    return doc


def set_thread_json(env: E2E, uuid: str, **changes: Any) -> None:
    path = dir_of(env, uuid) / "thread.json"
    doc = json.loads(path.read_text("utf-8"))
    doc.update(changes)
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=1), "utf-8")


def snapshot(directory: Path) -> dict[str, bytes]:
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def as_json(stdout: str) -> dict[str, Any]:
    doc = json.loads(stdout)
    assert isinstance(doc, dict)
    return doc
