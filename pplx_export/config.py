"""Settings: TOML load (tomllib) and save (tomlkit: the user's comments survive), paths, accounts.

Resolution (product.md §5): `--config` > `$PPLX_EXPORT_CONFIG` > the platform user config dir.
A missing *default* file means degraded mode (placeholder account `default`, no ownership
check); a missing *explicit* file or a parse error is a ConfigError (exit 2) naming the file
and line.

Long because the config is one schema: the dataclasses, the TOML reading with its
unknown-key warnings and the tomlkit round trip follow the same keys, and in one module they
cannot drift apart.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pplx_export.errors import ConfigError

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from tomlkit.toml_document import TOMLDocument

# tomlkit, platformdirs and the atomic writer are imported where used: `--help` imports this
# module and must start fast (tomlkit alone costs about as much as starting Python). Reading
# the settings needs only the stdlib's tomllib; tomlkit parses the file again only when
# something edits the document (`doc`, `section`, `save`).

ENV_CONFIG = "PPLX_EXPORT_CONFIG"
APP_NAME = "pplx-export"
DEFAULT_ARCHIVE_ROOT = "./web_archive"
PLACEHOLDER_ACCOUNT = "default"
LANGS = ("en", "zh")
# Render flavours (render.text.FLAVORS; a test holds the two equal): "github" writes folds as
# HTML <details> and Markdown links, "obsidian" foldable callouts, wikilinks and ![[embeds]].
FLAVORS = ("github", "obsidian")


def default_config_path() -> Path:
    """The platform user config dir (platformdirs) + `pplx-export/config.toml`."""
    if sys.platform.startswith("linux"):
        # platformdirs' XDG rule, without importing it (and its tempfile, random, ...)
        # for every `--help`; a test holds the two equal.
        base = os.environ.get("XDG_CONFIG_HOME", "")
        if not base.strip():
            base = os.path.expanduser("~/.config")
        return Path(base) / APP_NAME / "config.toml"
    import platformdirs

    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


@dataclass
class Account:
    """An `[accounts.NAME]` table of the config (or the placeholder of degraded mode)."""

    name: str  # config key, e.g. "alice"
    display_name: str = ""  # names the archive folder
    email: str = ""  # session ownership check
    user_id: str = ""


LISTINGS = ("auto", "rest", "graphql")


@dataclass
class NetworkSettings:
    min_interval: float = 3.0
    max_retries: int = 5
    backoff_cap: float = 300.0
    timeout: float = 120.0
    # Which library listing is tried first: "auto" (the one that worked last time, else
    # REST), "rest" or "graphql"; the other is always the second (site/library.py).
    listing: str = "auto"


@dataclass
class Config:
    path: Path
    exists: bool = False
    default_account: str = ""
    archive_root: str = ""
    render_language: str = "en"
    render_flavor: str = "github"
    auto_commit: bool = False
    auto_push: bool = False
    user_agent: str = ""
    # `sync`: a shell command run when it fails (commands/upkeep/notify.py), a
    # healthchecks-style URL, and how many days may pass between full index sweeps before
    # sync does one (0: never).
    on_failure: str = ""
    healthcheck_url: str = ""
    full_index_days: float = 7.0
    accounts: dict[str, Account] = field(default_factory=dict)
    bot_space_uuid: str = ""
    bot_space_slug: str = ""
    network: NetworkSettings = field(default_factory=NetworkSettings)
    # The file's text as loaded, for `doc`: the round-trip document is parsed on first use.
    text: str = field(default="", repr=False)
    _doc: TOMLDocument | None = field(default=None, repr=False, compare=False)

    @property
    def doc(self) -> TOMLDocument:
        """The config as a tomlkit document (comments and layout kept), for edits and save."""
        if self._doc is None:
            self._doc = _parse_doc(self.path, self.text)  # "" (no file): an empty document
        return self._doc

    @doc.setter
    def doc(self, value: TOMLDocument) -> None:
        self._doc = value

    @property
    def degraded(self) -> bool:
        """No config file: run with a placeholder account and no ownership check."""
        return not self.exists

    def account(self, name: str | None = None) -> Account:
        """`--account` > `default_account` > the only configured account > placeholder.

        With a config file, a named account must be defined in it: an account without an
        `[accounts.NAME]` table has no email, so whose session the cookies hold could not be
        checked and a wrong browser profile would fill the archive with another person's
        threads. Without a config file (degraded mode) any name runs unchecked.
        """
        wanted = name or self.default_account
        if wanted:
            if wanted in self.accounts:
                return self.accounts[wanted]
            if self.exists:
                known = ", ".join(sorted(self.accounts)) or "none defined"
                how = "--account" if name else "default_account"
                raise ConfigError(
                    f"{how} {wanted!r} is not defined in {self.path} (accounts: {known}); "
                    f"add [accounts.{wanted}] with its email so the session can be checked"
                )
            return Account(name=wanted, display_name=wanted)
        if len(self.accounts) == 1:
            return next(iter(self.accounts.values()))
        if self.accounts:
            known = ", ".join(sorted(self.accounts))
            raise ConfigError(f"several accounts in {self.path} ({known}): pass --account")
        return Account(name=PLACEHOLDER_ACCOUNT, display_name=PLACEHOLDER_ACCOUNT)

    def archive_dir(self, out: str | os.PathLike[str] | None = None) -> Path:
        """`--out` > config `archive_root` > `./web_archive`, as an absolute path.

        `--out` and the default are relative to the current directory, as any command-line
        path is; a relative `archive_root` is relative to the config file's directory, so a
        cron job started from another directory finds the same archive.
        """
        if out:
            return Path(os.fspath(out)).expanduser().absolute()
        if self.archive_root:
            root = Path(self.archive_root).expanduser()
            return root if root.is_absolute() else (self.path.parent / root).absolute()
        return Path(DEFAULT_ARCHIVE_ROOT).absolute()

    def language(self, lang: str | None = None) -> str:
        chosen = lang or self.render_language or "en"
        if chosen not in LANGS:
            raise ConfigError(f"render_language must be one of {', '.join(LANGS)}, not {chosen!r}")
        return chosen

    def flavor(self, flavor: str | None = None) -> str:
        """`--flavor` > config `render_flavor` > "github"."""
        chosen = flavor or self.render_flavor or "github"
        if chosen not in FLAVORS:
            raise ConfigError(f"render_flavor must be one of {', '.join(FLAVORS)}, not {chosen!r}")
        return chosen

    def section(self, *keys: str) -> Any:
        """The tomlkit table at `keys`, created if missing (for machine-managed state)."""
        node: Any = self.doc
        for key in keys:
            if key not in node:
                node[key] = _tomlkit().table()
            node = node[key]
        return node

    def save(self) -> None:
        """Write back atomically, owner-only; comments and layout of the user's file survive."""
        from pplx_export.util.atomic import atomic_write_text

        atomic_write_text(self.path, _tomlkit().dumps(self.doc), durable=True, mode=0o600)
        self.exists = True


def resolve_config_path(explicit: str | os.PathLike[str] | None) -> tuple[Path, bool]:
    """Return (path, explicit?) following `--config` > `$PPLX_EXPORT_CONFIG` > user dir."""
    if explicit:
        return Path(explicit).expanduser(), True
    env = os.environ.get(ENV_CONFIG)
    if env:
        return Path(env).expanduser(), True
    return default_config_path(), False


def _tomlkit() -> Any:
    import tomlkit

    return tomlkit


def peek_locations(
    explicit: str | os.PathLike[str] | None = None,
) -> tuple[Path, bool, str]:
    """(config path, exists?, archive root) without loading the config: for `--help`.

    The root is absolute when the config names one; the default stays `./web_archive`
    (relative to wherever the command runs).

    Uses the stdlib TOML reader (fast to import) and ignores what it cannot read; commands
    load and validate the config for real.
    """
    import tomllib

    path, _explicit = resolve_config_path(explicit)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return path, path.is_file(), DEFAULT_ARCHIVE_ROOT
    root = data.get("archive_root")
    if not isinstance(root, str) or not root:
        return path, True, DEFAULT_ARCHIVE_ROOT
    cfg = Config(path=path, exists=True, archive_root=root)
    return path, True, str(cfg.archive_dir())


def load_config(
    explicit: str | os.PathLike[str] | None = None, *, missing_ok: bool = False
) -> Config:
    """The config at the resolved path. `missing_ok`: a missing explicit file is not an error
    (`init` is about to write it)."""
    path, is_explicit = resolve_config_path(explicit)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if is_explicit and not missing_ok:
            raise ConfigError(f"config file not found: {path}") from None
        return Config(path=path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    import tomllib

    doc: TOMLDocument | None = None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomlkit decides, as it always has: its error names the line, and whatever it
        # accepts (if anything tomllib refuses) loads as before.
        doc = _parse_doc(path, text, str(exc))
        data = doc.unwrap()
    return _from_data(Config(path=path, exists=True, text=text, _doc=doc), data)


def _parse_doc(path: Path, text: str, reason: str = "") -> TOMLDocument:
    """The round-trip document of `text`; a one-line ConfigError when it is not valid TOML
    (`reason`: what tomllib said of it, which names the place where tomlkit's errors other
    than a parse error, such as a key defined twice, do not)."""
    from tomlkit.exceptions import ParseError, TOMLKitError

    try:
        doc: TOMLDocument = _tomlkit().parse(text)
    except ParseError as exc:
        raise ConfigError(_parse_error(path, str(exc), exc.line)) from None
    except TOMLKitError as exc:
        raise ConfigError(_parse_error(path, reason or str(exc))) from None
    return doc


# Both parsers append the place to their message: tomlkit "… at line 3 col 0", tomllib
# "… (at line 3, column 10)". Taken off, so the place is said once, in front.
_PLACE = re.compile(r"\s*(?:\(at line (\d+), column \d+\)|at line (\d+) col \d+)\s*$")


def _parse_error(path: Path, message: str, line: int | None = None) -> str:
    """`cannot parse config file PATH, line N: what` (no line when neither parser gave one)."""
    match = _PLACE.search(message)
    if match:
        message = message[: match.start()]
        line = line or int(match.group(1) or match.group(2))
    place = f", line {line}" if line else ""
    return f"cannot parse config file {path}{place}: {message.rstrip('. ')}"


# Every key this version reads (or writes: the machine-managed sections), by table; None
# for a table whose keys are names (accounts, index_state) or that another module owns.
_KNOWN: dict[str, frozenset[str] | None] = {
    "": frozenset(
        {
            "default_account",
            "archive_root",
            "render_language",
            "render_flavor",
            "auto_commit",
            "auto_push",
            "user_agent",
            "on_failure",
            "healthcheck_url",
            "full_index_days",
            "accounts",
            "bot_space",
            "network",
            "index_state",
            "models",
            "last_export",  # the earlier tool's; kept, unread
        }
    ),
    "accounts.*": frozenset({"display_name", "email", "user_id"}),
    "bot_space": frozenset({"uuid", "slug", "title"}),
    "network": frozenset({"min_interval", "max_retries", "backoff_cap", "timeout", "listing"}),
}


def _unknown_keys(data: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, key) of every key no table of this version knows."""
    found: list[tuple[str, str]] = []
    tables: list[tuple[str, str, Any]] = [("", "", data)]
    tables += [(t, t, data.get(t)) for t in ("bot_space", "network")]
    accounts = data.get("accounts")
    if isinstance(accounts, dict):
        tables += [("accounts.*", f"accounts.{n}", a) for n, a in accounts.items()]
    for known_at, where, table in tables:
        known = _KNOWN[known_at]
        if not isinstance(table, dict) or known is None:
            continue
        found += [(where, key) for key in table if key not in known]
    return found


def _warn_unknown(data: dict[str, Any], path: Path) -> None:
    """A warning per unknown key, naming the nearest known one: a misspelt setting
    (`archive_roots`, `[netwrok]`) would otherwise be ignored without a word."""
    import difflib

    for where, key in _unknown_keys(data):
        known_at = "accounts.*" if where.startswith("accounts.") else where
        candidates = sorted(_KNOWN[known_at] or ())
        near = difflib.get_close_matches(key, candidates, n=1, cutoff=0.6)
        name = f"[{where}] {key}" if where else (f"[{key}]" if isinstance(data[key], dict) else key)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        log.warning("%s: unknown setting %s, ignored%s", path, name, hint)


def _from_data(cfg: Config, data: dict[str, Any]) -> Config:
    """`cfg` with the settings of `data` (the file's decoded TOML), each checked."""
    path = cfg.path
    _warn_unknown(data, path)
    cfg.default_account = _str(data, "default_account", path)
    cfg.archive_root = _str(data, "archive_root", path)
    cfg.render_language = _str(data, "render_language", path) or "en"
    cfg.render_flavor = _str(data, "render_flavor", path) or "github"
    if cfg.render_flavor not in FLAVORS:
        raise ConfigError(
            f"{path}: render_flavor must be one of {', '.join(FLAVORS)}, not {cfg.render_flavor!r}"
        )
    cfg.auto_commit = _bool(data, "auto_commit", path)
    cfg.auto_push = _bool(data, "auto_push", path)
    cfg.user_agent = _str(data, "user_agent", path)
    cfg.on_failure = _str(data, "on_failure", path)
    cfg.healthcheck_url = _str(data, "healthcheck_url", path)
    cfg.full_index_days = _num(data, "full_index_days", cfg.full_index_days, path)
    accounts = data.get("accounts") or {}
    if not isinstance(accounts, dict):
        raise ConfigError(f"{path}: [accounts] must be a table")
    for name, acc in accounts.items():
        if not isinstance(acc, dict):
            raise ConfigError(f"{path}: [accounts.{name}] must be a table")
        cfg.accounts[name] = Account(
            name=name,
            display_name=_str(acc, "display_name", path) or name,
            email=_str(acc, "email", path),
            user_id=_str(acc, "user_id", path),
        )
    bot = data.get("bot_space") or {}
    if isinstance(bot, dict):
        cfg.bot_space_uuid = _str(bot, "uuid", path)
        cfg.bot_space_slug = _str(bot, "slug", path)
    net = data.get("network") or {}
    if isinstance(net, dict):
        defaults = NetworkSettings()
        cfg.network = NetworkSettings(
            min_interval=_num(net, "min_interval", defaults.min_interval, path),
            max_retries=int(_num(net, "max_retries", defaults.max_retries, path)),
            backoff_cap=_num(net, "backoff_cap", defaults.backoff_cap, path),
            timeout=_num(net, "timeout", defaults.timeout, path),
            listing=_str(net, "listing", path) or defaults.listing,
        )
        if cfg.network.listing not in LISTINGS:
            raise ConfigError(
                f"{path}: [network] listing must be one of {', '.join(LISTINGS)}, "
                f"not {cfg.network.listing!r}"
            )
    return cfg


def _str(data: dict[str, Any], key: str, path: Path) -> str:
    value = data.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ConfigError(f"{path}: {key} must be a string, not {type(value).__name__}")
    return value


def _bool(data: dict[str, Any], key: str, path: Path) -> bool:
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: {key} must be true or false")
    return value


def _num(data: dict[str, Any], key: str, default: float, path: Path) -> float:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ConfigError(f"{path}: {key} must be a non-negative number")
    return float(value)
