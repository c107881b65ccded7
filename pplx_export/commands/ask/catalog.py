"""The model catalog (protocol §2.9): per-mode defaults, the council pool, model families.

`pplx-ask models` shows it; `--refresh` caches the raw catalog next to the config (0600) and
stamps `[models]` in the config (`last_refreshed`, `source_version`, the per-mode defaults and
the council pool). `init` seeds the same stamps. Without a fresh fetch the cache is shown,
else the pinned offline fallbacks. `ask` warns when the stamp is older than 7 days.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import tomlkit
from tomlkit.items import Table

from pplx_export.config import Config
from pplx_export.context import RunOptions
from pplx_export.errors import ConfigError
from pplx_export.site.constants import API_VERSION
from pplx_export.site.pacing import Clock
from pplx_export.site.session import open_session
from pplx_export.util.atomic import atomic_write_text
from pplx_export.util.jsonobj import attrs_json
from pplx_export.util.lenient import as_dict, as_list, as_str
from pplx_export.util.timefmt import format_utc, parse_iso

log = logging.getLogger(__name__)

CACHE_NAME = "models_cache.json"
REFRESH_TTL = timedelta(days=7)
# API mode name -> CLI mode (protocol §2.9).
API_TO_CLI = {
    "search": "search",
    "pro": "search",
    "research": "deep-research",
    "deep research": "deep-research",
    "agentic_research": "council",
    "study": "study",
    "studio": "study",
}
FALLBACK_DEFAULTS = {
    "search": "pplx_pro",
    "deep-research": "pplx_alpha",
    "council": "pplx_agentic_research",
    "study": "pplx_study",
}
FALLBACK_COUNCIL = ["gpt56_sol_thinking", "claude50opusthinking", "gemini31pro_high"]


@dataclass
class Catalog:
    defaults: dict[str, str]  # CLI mode -> model id
    council: list[str]
    families: dict[str, list[str]]  # provider -> model ids
    labels: dict[str, str]  # model id -> label
    source: str  # "live", "cache <path>", "fallback"
    fetched_at: str = ""
    stale: bool = False

    def to_json(self) -> dict[str, Any]:
        keys = "defaults council_pool families labels source fetched_at stale"
        return attrs_json(self, keys, council_pool=self.council, fetched_at=self.fetched_at or None)


def summarize(raw: Mapping[str, Any], source: str, fetched_at: str = "") -> Catalog:
    """Read the catalog leniently: odd entries are skipped, missing defaults fall back."""
    models = as_dict(raw.get("models"))
    labels: dict[str, str] = {}
    families: dict[str, list[str]] = {}
    for model_id, info in models.items():
        meta = as_dict(info)
        labels[model_id] = as_str(meta.get("label")) or model_id
        families.setdefault(as_str(meta.get("provider")) or "unknown", []).append(model_id)
    defaults = dict(FALLBACK_DEFAULTS)
    for api_mode, model in as_dict(raw.get("default_models")).items():
        cli_mode = API_TO_CLI.get(api_mode.lower())
        if cli_mode and isinstance(model, str) and model:
            defaults[cli_mode] = model
    council = [as_str(m) for m in as_list(raw.get("agentic_research_compare_models")) if as_str(m)]
    return Catalog(
        defaults=defaults,
        council=council or list(FALLBACK_COUNCIL),
        families={k: sorted(v) for k, v in sorted(families.items())},
        labels=labels,
        source=source,
        fetched_at=fetched_at,
    )


def fallback_catalog() -> Catalog:
    """The pinned offline defaults (protocol §2.9), for when no catalog could be read."""
    return summarize({}, "fallback")


def stamp(now: datetime) -> str:
    return format_utc(now)


def cache_path(config_path: Path) -> Path:
    """The raw catalog lives next to the config (not in the archive: it is per user)."""
    return config_path.expanduser().absolute().parent / CACHE_NAME


def write_cache(config_path: Path, raw: Mapping[str, Any], fetched_at: str) -> Path:
    path = cache_path(config_path)
    doc = {"fetched_at": fetched_at, "source_version": API_VERSION, "catalog": dict(raw)}
    atomic_write_text(path, json.dumps(doc, ensure_ascii=False, indent=1) + "\n", mode=0o600)
    return path


def read_cache(config_path: Path) -> Catalog | None:
    """The cached catalog, or None (missing). A damaged cache is a ConfigError naming it."""
    path = cache_path(config_path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(
            f"model catalog cache {path} is unreadable ({type(exc).__name__}); "
            "`pplx-ask models --refresh` rewrites it"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("catalog"), dict):
        raise ConfigError(
            f"model catalog cache {path} has an unexpected shape; "
            "`pplx-ask models --refresh` rewrites it"
        )
    return summarize(data["catalog"], f"cache {path}", as_str(data.get("fetched_at")))


def stamp_config(doc: tomlkit.TOMLDocument, catalog: Catalog) -> None:
    """Write `[models]` (machine-managed): stamps, per-mode defaults, the council pool."""
    table = doc.get("models")
    if not isinstance(table, Table):
        table = tomlkit.table()
        table.comment("machine-managed by `pplx-ask models --refresh` and `init`")
        doc["models"] = table
    table["last_refreshed"] = catalog.fetched_at
    table["source_version"] = API_VERSION
    table["council"] = catalog.council
    defaults = tomlkit.table()
    for mode, model in catalog.defaults.items():
        defaults[mode] = model
    table["defaults"] = defaults


def last_refreshed(cfg: Config) -> datetime | None:
    table = cfg.doc.get("models")
    if not isinstance(table, Mapping):
        return None
    return parse_iso(table.get("last_refreshed"))


def staleness_warning(cfg: Config, now: datetime) -> str:
    """The line `ask` logs when the catalog stamp is older than 7 days ("" when fresh/unknown)."""
    when = last_refreshed(cfg)
    if when is None or now - when <= REFRESH_TTL:
        return ""
    days = (now - when).days
    return (
        f"the model catalog in {cfg.path} is {days} days old; "
        "`pplx-ask models --refresh` updates it"
    )


def catalog_lines(catalog: Catalog) -> list[str]:
    when = f", fetched {catalog.fetched_at}" if catalog.fetched_at else ""
    stale = " (older than 7 days: --refresh)" if catalog.stale else ""
    out = [f"model catalog: {catalog.source}{when}{stale}", "defaults per mode:"]
    for mode, model in catalog.defaults.items():
        out.append(f"  {mode:<14} {model:<24} {catalog.labels.get(model, '')}".rstrip())
    out.append("council pool:")
    out.extend(f"  {m:<24} {catalog.labels.get(m, '')}".rstrip() for m in catalog.council)
    out.append("families:")
    out.extend(f"  {family}: {', '.join(ids)}" for family, ids in catalog.families.items())
    return out


def run_models(
    opts: RunOptions,
    *,
    refresh: bool = False,
    now: datetime | None = None,
    transport: httpx.BaseTransport | None = None,
    clock: Clock | None = None,
) -> Catalog:
    """The catalog: the cache unless `refresh` (then fetched, cached, stamped), else live."""
    cfg = opts.config
    moment = now or datetime.now(UTC)
    if not refresh:
        cached = read_cache(cfg.path)
        if cached is not None:
            fetched = parse_iso(cached.fetched_at)
            cached.stale = fetched is None or moment - fetched > REFRESH_TTL
            return cached
    with open_session(opts, transport=transport, clock=clock) as api:
        raw = api.models_config()
    catalog = summarize(raw, "live", stamp(moment))
    if not refresh:
        log.info("not cached: `pplx-ask models --refresh` keeps a copy")
        return catalog
    write_cache(cfg.path, raw, catalog.fetched_at)
    catalog.source = f"live, cached in {cache_path(cfg.path)}"
    if cfg.exists:
        stamp_config(cfg.doc, catalog)
        cfg.save()
    else:
        log.warning(
            "no config at %s: [models] not stamped (`pplx-export init` writes one)", cfg.path
        )
    return catalog
