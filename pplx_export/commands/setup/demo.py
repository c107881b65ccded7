"""`pplx-export demo`: the real pipeline against the bundled emulator, no account needed.

Starts the emulator on loopback (port 0) over the bundled sample library, points a
throw-away configuration at it (temporary cookie file, zero pacing, two signed-in accounts:
alice and her second account bob), runs the real `index` and `batch`, then `spaces
--fetch-meta` (a space alice may not view is read through bob), `space-index` + `batch
--space` for the shared spaces (another member's thread), `spaces` and `relations`, and
reports what landed where. Nothing here is a mock: the same client, parser, renderer and
writer run as against perplexity.ai.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pplx_export.archive.paths import iter_thread_dirs
from pplx_export.commands.export.batch import BatchFilters, BatchSummary, run_batch, run_index
from pplx_export.commands.export.official_import import fetch_recovered, run_import
from pplx_export.commands.inspect.search import demo_search
from pplx_export.commands.relations.run import RelationsResult, run_relations
from pplx_export.commands.spaces.pages import run_spaces
from pplx_export.commands.spaces.space_index import run_space_index
from pplx_export.config import Account, Config, NetworkSettings
from pplx_export.context import RunOptions
from pplx_export.emulator import (
    DEFAULT_EMAIL,
    DEFAULT_NAME,
    DEFAULT_USERNAME,
    SESSION_COOKIE,
    run_emulator,
)
from pplx_export.emulator.library import Library
from pplx_export.emulator.official_export import write_export_zip
from pplx_export.site.api import PerplexityAPI
from pplx_export.site.session import open_session
from pplx_export.store.official_state import recovered_summary
from pplx_export.util.atomic import atomic_write_text

DEFAULT_DEMO_DIR = Path("./pplx-demo-archive")
# The emulated "Export my data" archive, kept in the demo archive for `verify --against`.
EXPORT_NAME = "perplexity-data-export.zip"
# alice's second signed-in account: it can view the space alice was removed from.
SECOND_USERNAME = "bob"
SECOND_EMAIL = "bob@example.com"
SECOND_NAME = "Bob Rivera"
SECOND_TOKEN = "emulator-session-token-bob"
ACCOUNT_COOKIE = "__Secure-pplx.session."


@dataclass
class DemoSummary:
    directory: Path
    by_mode: dict[str, int] = field(default_factory=dict)
    files: int = 0
    batch: BatchSummary | None = None
    elapsed: float = 0.0
    search: str = ""  # the search index built, and a search to try (commands/inspect/search.py)
    relations: RelationsResult | None = None
    official: str = ""  # the audit against Perplexity's data export, and its file

    def text(self) -> str:
        modes = ", ".join(f"{mode} {n}" for mode, n in sorted(self.by_mode.items()))
        lines = [
            f"demo archive: {self.directory.resolve()}",
            f"threads per mode: {modes or 'none'}",
            f"files: {self.files}; time: {self.elapsed:.1f}s",
        ]
        lines += [
            "look at: <account>/<mode>/<date>_<title>_<uuid8>/conversation.md and turns/",
            "spaces: spaces/index.md (one page per space, members, links to the threads)",
            "relations: relations/graph.md (same space, same prompt, references, sub-agents)",
            f"then try: pplx-export status --out {self.directory}",
        ]
        if self.search:
            lines.append(self.search)
        if self.official:
            lines.append(self.official)
        return "\n".join(lines)


def _official_export(opts: RunOptions, api: PerplexityAPI, library: Library) -> str:
    """Perplexity's "Export my data" archive of the sample (emulated, with its planted
    cases): audit, recover, ask the API for the recovered threads, as `import --fetch`."""
    path = opts.out / EXPORT_NAME
    write_export_zip(library, path, DEFAULT_USERNAME)
    report = run_import(opts, path)
    fetch_recovered(opts, api)
    waiting = (recovered_summary(opts.out) or {}).get("export_only") or []
    counts = report.to_json()
    return (
        f"data export: {counts['conversations']} conversations: {counts['complete']} complete, "
        f"{counts['missing_turns']} missing turns ({report.turns_added} added, marked "
        f"imported), {counts['not_archived']} not archived ({report.recovered} recovered; "
        f"{len(waiting)} not served by the API); "
        f"try: pplx-export verify --against {path}"
    )


def run_demo(
    directory: Path,
    *,
    lang: str = "en",
    flavor: str = "github",
    quiet: bool = False,
    progress: bool = True,
) -> DemoSummary:
    """Export the bundled sample library into `directory` through the emulator."""
    started = time.monotonic()
    directory.mkdir(parents=True, exist_ok=True)
    extra = {SECOND_TOKEN: (SECOND_EMAIL, SECOND_NAME)}
    with (
        run_emulator(extra_accounts=extra) as emu,
        tempfile.TemporaryDirectory(prefix="pplx-demo-") as tmp,
    ):
        cookies = Path(tmp) / "cookies.json"
        jar = {
            **emu.cookies,
            f"{ACCOUNT_COOKIE}u-{DEFAULT_USERNAME}": emu.cookies[SESSION_COOKIE],
            f"{ACCOUNT_COOKIE}u-{SECOND_USERNAME}": SECOND_TOKEN,
        }
        atomic_write_text(cookies, json.dumps(jar), mode=0o600)
        config = Config(path=Path(tmp) / "config.toml")  # never saved: degraded, in memory
        config.network = NetworkSettings(
            min_interval=0.0, max_retries=3, backoff_cap=0.0, timeout=30.0
        )
        account = Account(name=DEFAULT_USERNAME, display_name=DEFAULT_NAME, email=DEFAULT_EMAIL)
        config.accounts[account.name] = account
        config.accounts[SECOND_USERNAME] = Account(
            name=SECOND_USERNAME, display_name=SECOND_NAME, email=SECOND_EMAIL
        )
        opts = RunOptions(
            config=config,
            account=account,
            out=directory,
            lang=lang,
            flavor=flavor,
            base_url=emu.base_url,
            cookies_file=cookies,
            quiet=quiet,
            progress=progress,
        )
        with open_session(opts) as api:
            run_index(opts, full=True, api=api)
            batch = run_batch(opts, api=api)
            shared = run_spaces(opts, fetch_meta=True, api=api)
            for slug in shared.visible_to(account.name):
                run_space_index(opts, slug, api=api)
                run_batch(opts, BatchFilters(space=slug), api=api)
            official = _official_export(opts, api, emu.library)
        run_spaces(opts)
        relations = run_relations(opts)
    summary = DemoSummary(
        directory=directory,
        batch=batch if isinstance(batch, BatchSummary) else None,
        relations=relations,
        official=official,
    )
    modes: Counter[str] = Counter()
    for thread in iter_thread_dirs(directory):
        modes[thread.parent.name] += 1
    summary.by_mode = dict(modes)
    summary.search = demo_search(directory)
    summary.files = sum(len(files) for _, _, files in os.walk(directory))
    summary.elapsed = time.monotonic() - started
    return summary
