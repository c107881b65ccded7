"""Settings: TOML load/save with tomlkit (the user's comments survive), paths, accounts.

Resolution (product.md §5): `--config` > `$PPLX_EXPORT_CONFIG` > the platform user config dir.
A missing *default* file means degraded mode (placeholder account `default`, no ownership
check); a missing *explicit* file or a parse error is a ConfigError (exit 2) naming the file
and line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs
import tomlkit
from tomlkit.exceptions import ParseError
from tomlkit.toml_document import TOMLDocument

from pplx_export.errors import ConfigError
from pplx_export.models import Account
from pplx_export.util.atomic import atomic_write_text

ENV_CONFIG = "PPLX_EXPORT_CONFIG"
APP_NAME = "pplx-export"
DEFAULT_ARCHIVE_ROOT = "./web_archive"
PLACEHOLDER_ACCOUNT = "default"
LANGS = ("en", "zh")


def default_config_path() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


@dataclass
class NetworkSettings:
    min_interval: float = 3.0
    max_retries: int = 5
    backoff_cap: float = 300.0
    timeout: float = 120.0


@dataclass
class Config:
    path: Path
    doc: TOMLDocument = field(default_factory=tomlkit.document)
    exists: bool = False
    default_account: str = ""
    archive_root: str = ""
    render_language: str = "en"
    auto_commit: bool = False
    auto_push: bool = False
    user_agent: str = ""
    accounts: dict[str, Account] = field(default_factory=dict)
    bot_space_uuid: str = ""
    bot_space_slug: str = ""
    network: NetworkSettings = field(default_factory=NetworkSettings)

    @property
    def degraded(self) -> bool:
        """No config file: run with a placeholder account and no ownership check."""
        return not self.exists

    def account(self, name: str | None = None) -> Account:
        """`--account` > `default_account` > the only configured account > placeholder."""
        wanted = name or self.default_account
        if wanted:
            if wanted in self.accounts:
                return self.accounts[wanted]
            if self.exists and self.accounts:
                known = ", ".join(sorted(self.accounts))
                raise ConfigError(f"account {wanted!r} is not in {self.path} (known: {known})")
            return Account(name=wanted, display_name=wanted)
        if len(self.accounts) == 1:
            return next(iter(self.accounts.values()))
        if self.accounts:
            known = ", ".join(sorted(self.accounts))
            raise ConfigError(f"several accounts in {self.path} ({known}): pass --account")
        return Account(name=PLACEHOLDER_ACCOUNT, display_name=PLACEHOLDER_ACCOUNT)

    def archive_dir(self, out: str | os.PathLike[str] | None = None) -> Path:
        """`--out` > config `archive_root` > `./web_archive`."""
        raw = os.fspath(out) if out else (self.archive_root or DEFAULT_ARCHIVE_ROOT)
        return Path(raw).expanduser()

    def language(self, lang: str | None = None) -> str:
        chosen = lang or self.render_language or "en"
        if chosen not in LANGS:
            raise ConfigError(f"render_language must be one of {', '.join(LANGS)}, not {chosen!r}")
        return chosen

    def section(self, *keys: str) -> Any:
        """The tomlkit table at `keys`, created if missing (for machine-managed state)."""
        node: Any = self.doc
        for key in keys:
            if key not in node:
                node[key] = tomlkit.table()
            node = node[key]
        return node

    def save(self) -> None:
        """Write back atomically, owner-only; comments and layout of the user's file survive."""
        atomic_write_text(self.path, tomlkit.dumps(self.doc), durable=True, mode=0o600)
        self.exists = True


def resolve_config_path(explicit: str | os.PathLike[str] | None) -> tuple[Path, bool]:
    """Return (path, explicit?) following `--config` > `$PPLX_EXPORT_CONFIG` > user dir."""
    if explicit:
        return Path(explicit).expanduser(), True
    env = os.environ.get(ENV_CONFIG)
    if env:
        return Path(env).expanduser(), True
    return default_config_path(), False


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
    try:
        doc = tomlkit.parse(text)
    except ParseError as exc:
        raise ConfigError(f"cannot parse config file {path}, line {exc.line}: {exc}") from None
    return _from_doc(path, doc)


def _from_doc(path: Path, doc: TOMLDocument) -> Config:
    data = doc.unwrap()
    cfg = Config(path=path, doc=doc, exists=True)
    cfg.default_account = _str(data, "default_account", path)
    cfg.archive_root = _str(data, "archive_root", path)
    cfg.render_language = _str(data, "render_language", path) or "en"
    cfg.auto_commit = _bool(data, "auto_commit", path)
    cfg.auto_push = _bool(data, "auto_push", path)
    cfg.user_agent = _str(data, "user_agent", path)
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
        raise ConfigError(f"{path}: [network] {key} must be a non-negative number")
    return float(value)
