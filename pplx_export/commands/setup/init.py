"""`init`: from browser cookies to a working config (product.md §4-§5, protocol §1.3, §2.1).

Steps, all network before any write (a failure leaves no partial config):
1. discover every signed-in account of the cookie jar (each `__Secure-pplx.session.<uid>`
   token probed with `/api/auth/session`);
2. name each account from its email's local part (`[a-z0-9_-]`, collisions `-2`, `-3`);
   with `--force`, an account already in the config (same email) keeps its name;
3. as the active account: find the BOT space by title (case-insensitive), or create it when
   asked; read the model catalog (a failure there is a warning: pinned fallbacks are used);
4. write the config atomically with mode 0600 through tomlkit, so on `--force` the user's
   comments and unknown keys survive and only the keys init owns change; cache the catalog;
   write the archive's `.gitignore` (and `git init` it with `--git`).

Cookies never reach the config: the verified jar stays in the 0600 cookie cache.

Long because init is one transaction: discovery, naming, the BOT space, the catalog and the
config edit run in that order with every network step before any write, and the seams tests
inject (`Seams`) span them all.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import tomlkit
from tomlkit.items import Table

from pplx_export.commands.ask import catalog as models
from pplx_export.commands.setup.schedule import wrapped
from pplx_export.commands.setup.schedule_manage import cookie_advice
from pplx_export.config import Account, Config, default_config_path
from pplx_export.context import RunOptions
from pplx_export.errors import ApiError, AuthError, TransportError, UsageError
from pplx_export.pipeline import autocommit
from pplx_export.site.api import PerplexityAPI
from pplx_export.site.cookies import BrowserLoader
from pplx_export.site.pacing import Clock
from pplx_export.site.session import SignedInAccount, discover_accounts, open_session
from pplx_export.util.lenient import as_str

log = logging.getLogger(__name__)

DEFAULT_BOT_TITLE = "BOT"
_NAME_BAD = re.compile(r"[^a-z0-9_-]+")


def account_name(email: str) -> str:
    """`Alice.Example+x@…` -> `alice-example-x`: lowercase, `[a-z0-9_-]`, never empty."""
    local = email.split("@", 1)[0].strip().lower()
    name = _NAME_BAD.sub("-", local).strip("-")
    return name or "account"


def assign_names(emails: Iterable[str], taken: Mapping[str, str] | None = None) -> dict[str, str]:
    """`email -> account name`. `taken` maps names already in the config to their email
    (lowercase): an email found there keeps its name, other emails avoid those names."""
    taken = dict(taken or {})
    by_email = {email: name for name, email in taken.items()}
    used = set(taken)
    out: dict[str, str] = {}
    for email in emails:
        key = email.lower()
        if key in by_email:
            out[email] = by_email[key]
            continue
        base = account_name(email)
        name, n = base, 1
        while name in used:
            n += 1
            name = f"{base}-{n}"
        used.add(name)
        out[email] = name
    return out


@dataclass
class InitAccount:
    name: str
    email: str
    display_name: str
    user_id: str
    active: bool

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class BotSpace:
    uuid: str = ""
    slug: str = ""
    title: str = ""
    created: bool = False

    def to_json(self) -> dict[str, Any] | None:
        if not self.uuid:
            return None
        return {"uuid": self.uuid, "slug": self.slug, "title": self.title, "created": self.created}


@dataclass
class InitResult:
    config: Path
    archive_root: Path
    accounts: list[InitAccount]
    default_account: str
    bot_space: BotSpace
    bot_title: str
    cookies_from: str  # where the cookies came from (a description, never a value)
    models_cache: Path | None = None
    git: str = ""  # "", "created", "existing"
    replaced: bool = False
    warnings: list[str] = field(default_factory=list)
    # Which cookie source a scheduled sync can use with nobody logged in (Linux).
    unattended: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "config": str(self.config),
            "archive_root": str(self.archive_root),
            "accounts": [a.to_json() for a in self.accounts],
            "default_account": self.default_account,
            "bot_space": self.bot_space.to_json(),
            "cookies_from": self.cookies_from,
            "models_cache": str(self.models_cache) if self.models_cache else None,
            "git": self.git or None,
            "warnings": self.warnings,
            "unattended_cookies": self.unattended,
        }

    def lines(self) -> list[str]:
        out = [f"{'updated' if self.replaced else 'wrote'} {self.config} (mode 0600)"]
        out.append(f"cookies: {self.cookies_from}")
        for acc in self.accounts:
            mark = " (default)" if acc.name == self.default_account else ""
            out.append(f"account {acc.name}: {acc.email}, folder {acc.display_name!r}{mark}")
        bot = self.bot_space
        if bot.uuid:
            how = "created" if bot.created else "found"
            out.append(f"BOT space {how}: {bot.title} ({bot.slug})")
        else:
            out.append(
                f"BOT space: none titled {self.bot_title!r} "
                f"(`pplx-export init --force --create-bot-space {self.bot_title}` makes one)"
            )
        if self.git:
            out.append(f"archive: {self.archive_root} (git repository {self.git}; auto_commit on)")
        else:
            out.append(
                f"archive: {self.archive_root} (`init --force --git` makes it a git repository "
                "and commits each sync)"
            )
        out.extend(f"warning: {w}" for w in self.warnings)
        out.extend(wrapped(self.unattended))
        quoted = shlex.quote(str(self.config))
        config = "" if self.config == default_config_path() else f" --config {quoted}"
        out.append(f"next: pplx-export sync{config}   then: pplx-export schedule{config}")
        return out


def find_bot_space(spaces: Iterable[Mapping[str, Any]], title: str) -> BotSpace | None:
    """The first of the user's spaces titled `title`, case-insensitively (and trimmed)."""
    wanted = title.strip().casefold()
    for space in spaces:
        if as_str(space.get("title")).strip().casefold() == wanted and as_str(space.get("uuid")):
            return BotSpace(
                as_str(space.get("uuid")), as_str(space.get("slug")), as_str(space.get("title"))
            )
    return None


def resolve_bot_space(api: PerplexityAPI, title: str, create: bool) -> BotSpace:
    found = find_bot_space(api.list_user_collections(), title)
    if found is not None or not create:
        return found or BotSpace()
    made = api.create_collection(title, description="Threads started by pplx-ask")
    space = BotSpace(
        as_str(made.get("uuid")), as_str(made.get("slug")), as_str(made.get("title")) or title
    )
    if not space.uuid:
        raise ApiError("create_collection answered without a uuid", endpoint="create space")
    space.created = True
    return space


NEW_CONFIG_HEADER = """\
# pplx-export configuration, written by `pplx-export init`.
# Edit freely: `init --force` keeps your comments and keys, and changes only the keys it owns
# (default_account, archive_root, [accounts.*] email/user_id, [bot_space], [models]).
# Every key is documented in config.example.toml.

"""


def _commented(value: Any, comment: str) -> Any:
    item = tomlkit.item(value)
    item.comment(comment)
    return item


def new_document(archive_root: str) -> tomlkit.TOMLDocument:
    """A fresh config with the user-facing keys spelled out (and commented)."""
    doc = tomlkit.parse(NEW_CONFIG_HEADER)
    doc["default_account"] = ""
    doc["archive_root"] = archive_root
    doc["render_language"] = _commented("en", "or zh")
    doc["render_flavor"] = _commented("github", "or obsidian: callouts and wikilinks")
    doc["auto_commit"] = _commented(False, "git-commit the archive after export/batch/sync")
    doc["auto_push"] = _commented(False, "git push after that commit")
    return doc


def _table(parent: Any, key: str, *, super_table: bool = False) -> Table:
    node = parent.get(key)
    if not isinstance(node, Table):
        node = tomlkit.table(is_super_table=super_table)
        parent[key] = node
    return node


def apply_to_document(
    doc: tomlkit.TOMLDocument,
    *,
    archive_root: str | None,
    accounts: list[InitAccount],
    default_account: str,
    bot: BotSpace,
) -> None:
    """Set the keys init owns; every other key, table and comment of `doc` stays as it is."""
    doc["default_account"] = default_account
    if archive_root is not None:
        doc["archive_root"] = archive_root
    table = _table(doc, "accounts", super_table=True)
    for acc in accounts:
        entry = table.get(acc.name)
        if not isinstance(entry, Table):
            entry = tomlkit.table()
            entry["display_name"] = _commented(acc.display_name, "names the archive folder")
            table[acc.name] = entry
        entry["email"] = acc.email
        entry["user_id"] = acc.user_id
    space = _table(doc, "bot_space")
    space["uuid"] = bot.uuid
    space["slug"] = bot.slug
    space["title"] = bot.title


@dataclass
class InitOptions:
    force: bool = False
    create_bot_space: bool = False
    bot_title: str = DEFAULT_BOT_TITLE
    git: bool = False


@dataclass
class Seams:
    """What tests inject: the HTTP transport, the clock, the browser cookie reader, git."""

    transport: httpx.BaseTransport | None = None
    clock: Clock | None = None
    browser_loader: BrowserLoader | None = None
    git: str = "git"


def check_writable(cfg: Config, force: bool) -> None:
    if cfg.path.exists() and not force:
        raise UsageError(
            f"{cfg.path} already exists; `pplx-export init --force` updates it "
            "(your comments and other keys are kept)"
        )


def _discover(opts: RunOptions, seams: Seams) -> tuple[list[SignedInAccount], str]:
    try:
        return discover_accounts(
            opts, transport=seams.transport, clock=seams.clock, browser_loader=seams.browser_loader
        )
    except TransportError as exc:
        if exc.status is not None:
            # A 200 whose body is HTML (a Cloudflare interstitial or a login page): the
            # cookies do not open a session from here. That is a sign-in failure (exit 3).
            raise AuthError(
                f"the session probe answered with a page, not JSON ({exc.reason}); "
                "open perplexity.ai in the browser, then retry",
                endpoint=exc.endpoint,
            ) from None
        raise


def name_accounts(found: list[SignedInAccount], cfg: Config) -> tuple[list[InitAccount], str]:
    """Config names for the discovered accounts, and the default (the active session's)."""
    taken = {name: acc.email.lower() for name, acc in cfg.accounts.items()} if cfg.exists else {}
    names = assign_names([a.email for a in found], taken)
    accounts: list[InitAccount] = []
    for a in found:
        name = names[a.email]
        known = cfg.accounts.get(name)
        display = (known.display_name if known else "") or a.name or name
        accounts.append(InitAccount(name, a.email, display, a.user_id, a.active))
    default = next((acc.name for acc in accounts if acc.active), accounts[0].name)
    return accounts, default


def run_init(
    opts: RunOptions, options: InitOptions | None = None, seams: Seams | None = None
) -> InitResult:
    """Discover, name, look up, then write; see the module doc."""
    options = options or InitOptions()
    seams = seams or Seams()
    cfg = opts.config
    check_writable(cfg, options.force)
    root = opts.out.expanduser().absolute()
    opts = dataclasses.replace(opts, out=root)

    found, where = _discover(opts, seams)
    accounts, default = name_accounts(found, cfg)
    chosen = next(acc for acc in accounts if acc.name == default)
    as_default = dataclasses.replace(
        opts, account=Account(chosen.name, chosen.display_name, chosen.email, chosen.user_id)
    )
    warnings: list[str] = []
    with open_session(
        as_default,
        transport=seams.transport,
        clock=seams.clock,
        browser_loader=seams.browser_loader,
    ) as api:
        bot = resolve_bot_space(api, options.bot_title, options.create_bot_space)
        try:
            raw_catalog: Mapping[str, Any] | None = api.models_config()
        except ApiError as exc:
            raw_catalog = None
            warnings.append(f"model catalog unavailable ({exc}); pinned defaults used")
        now = datetime.fromtimestamp(api.client.runtime.clock.time(), tz=UTC)

    if not bot.uuid and cfg.exists and cfg.bot_space_uuid:
        # Not among the spaces listed now (renamed, or past the first page): a configured
        # space is kept rather than forgotten.
        kept_title = as_str(cfg.doc.unwrap().get("bot_space", {}).get("title"))
        bot = BotSpace(cfg.bot_space_uuid, cfg.bot_space_slug, kept_title)
        warnings.append(
            f"no space titled {options.bot_title!r} listed; kept the configured BOT space "
            f"{cfg.bot_space_slug or cfg.bot_space_uuid}"
        )

    # Everything below writes; nothing below talks to the network.
    check_writable(cfg, options.force)  # still true after the probes (no race with a 2nd init)
    replaced = cfg.exists
    doc = cfg.doc if cfg.exists else new_document(str(root))
    existing_root = cfg.archive_dir(None).expanduser().absolute() if cfg.archive_root else None
    apply_to_document(
        doc,
        archive_root=None if existing_root == root else str(root),
        accounts=accounts,
        default_account=default,
        bot=bot,
    )
    catalog = (
        models.summarize(raw_catalog, "live", models.stamp(now))
        if raw_catalog is not None
        else models.fallback_catalog()
    )
    models.stamp_config(doc, catalog)
    if options.git:
        doc["auto_commit"] = True
    cfg.doc = doc
    cfg.save()
    result = InitResult(
        config=cfg.path.expanduser().absolute(),
        archive_root=root,
        accounts=accounts,
        default_account=default,
        bot_space=bot,
        bot_title=options.bot_title,
        cookies_from=where,
        replaced=replaced,
        warnings=warnings,
        # The session above filled the cookie cache: what a job with no cookie option uses.
        unattended=cookie_advice(root, None, None),
    )
    if raw_catalog is not None:
        result.models_cache = models.write_cache(cfg.path, raw_catalog, catalog.fetched_at)
    root.mkdir(parents=True, exist_ok=True)
    autocommit.ensure_gitignore(root)
    if options.git:
        try:
            result.git = "created" if autocommit.init_repo(root, seams.git) else "existing"
        except autocommit.GitError as exc:
            result.warnings.append(f"git: {exc}")
    return result
