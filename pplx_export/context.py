"""The run context: everything a library function needs from one invocation, resolved once.

The CLI builds it from flags and the config; `commands/` and `site/` take it. It lives below
both (and imports nothing but the config's types) so no library module ever imports `cli/`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pplx_export.util.threadref import SITE

if TYPE_CHECKING:
    # Names in annotations only: every command builds a RunOptions, an offline one too.
    from pplx_export.config import Account, Config

# Here, not in site/client.py: every command's context needs it, and importing the client
# imports httpx, which an offline command (re-render, status) never uses.
DEFAULT_BASE_URL = SITE


@dataclass
class RunOptions:
    """One command's resolved options plus the state its calls share (locks, network runtime)."""

    config: Config
    account: Account
    out: Path
    lang: str
    # The render flavour (config.FLAVORS): "github" or "obsidian".
    flavor: str = "github"
    base_url: str = DEFAULT_BASE_URL
    cookies_from: str | None = None
    cookies_file: Path | None = None
    verbose: int = 0
    quiet: bool = False
    # True when `--account` was given: `sync`/`index`/`batch` then run for that account only
    # (else for every configured account, commands/export/every_account.py).
    account_given: bool = False
    # The log file of this invocation (`--log-file`), for `--on-failure` to name.
    log_file: Path | None = None
    # False with --no-progress: no bar and no periodic progress lines (messages still print).
    progress: bool = True
    # Archive roots whose lock this invocation holds: `sync` = index + batch locks once.
    held_locks: set[str] = field(default_factory=set)
    # One pacer and set of counters for every session of the invocation (see
    # site.session.runtime_for); created on first use.
    # A site.pacing.NetRuntime, typed Any so that the context stays below site/ (whose
    # session module takes a RunOptions); only site/session.runtime_for reads or sets it.
    runtime: Any = None
    # The session cookie values the run signed in with: auto-commit refuses any file that
    # holds one (pipeline/autocommit.py).
    secrets: set[str] = field(default_factory=set)
    # `--write-responses DIR` (debug): every request/response pair of the run, redacted.
    write_responses: Path | None = None
