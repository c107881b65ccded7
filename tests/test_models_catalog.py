"""`pplx-ask models` (issue 12): the catalog per mode, the council pool and families; --refresh
caches it next to the config (0600) and stamps [models]; `ask`'s 7-day staleness warning."""

from __future__ import annotations

import json
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import tomlkit
from click.testing import CliRunner, Result

from pplx_export.cli.ask import main
from pplx_export.commands.ask.catalog import (
    FALLBACK_DEFAULTS,
    cache_path,
    staleness_warning,
    summarize,
)
from pplx_export.config import load_config
from pplx_export.emulator import DEFAULT_EMAIL, run_emulator


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    config = tmp_path / "conf" / "config.toml"
    config.parent.mkdir()
    config.write_text(
        f'# mine\n[accounts.alice]\nemail = "{DEFAULT_EMAIL}"\n\n[network]\nmin_interval = 0\n',
        encoding="utf-8",
    )
    return config, tmp_path / "cookies.json"


def test_refresh_caches_and_stamps_then_shows_the_cache(files: tuple[Path, Path]) -> None:
    config, cookies = files
    with run_emulator() as emu:
        cookies.write_text(json.dumps(emu.cookies), encoding="utf-8")
        common = ["--config", str(config), "--cookies", str(cookies), "--base-url", emu.base_url]
        result = _cli("models", "--refresh", *common)
        assert result.exit_code == 0, result.output
        assert emu.stats()["by_endpoint"]["GET /rest/models/config/v2"] == 1
        shown = _cli("models", "--json", *common)
        assert emu.stats()["by_endpoint"]["GET /rest/models/config/v2"] == 1  # from the cache
    assert "deep-research  pplx_alpha" in result.stdout
    assert "council pool:" in result.stdout and "gemini31pro_high" in result.stdout
    cache = cache_path(config)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    assert json.loads(cache.read_text("utf-8"))["catalog"]["default_models"]["study"]
    text = config.read_text("utf-8")
    assert text.startswith("# mine\n")
    models = tomlkit.parse(text).unwrap()["models"]
    assert models["source_version"] == "2.18"
    assert models["defaults"]["council"] == "pplx_agentic_research"
    assert len(models["council"]) == 3
    doc = json.loads(shown.stdout)
    assert doc["source"].startswith("cache ") and doc["stale"] is False
    assert doc["families"]["anthropic"] == ["claude50opusthinking"]
    assert stat.S_IMODE(config.stat().st_mode) == 0o600


def test_a_damaged_cache_is_named(files: tuple[Path, Path]) -> None:
    config, _cookies = files
    cache_path(config).write_text("{not json", encoding="utf-8")
    result = _cli("models", "--config", str(config))
    assert result.exit_code == 2
    assert str(cache_path(config)) in result.stderr and "--refresh" in result.stderr


def test_lenient_summary_and_fallbacks() -> None:
    odd = summarize(
        {"models": {"x": "not a dict", "y": {"provider": "p"}}, "default_models": {"pro": 3}},
        "live",
    )
    assert odd.defaults == FALLBACK_DEFAULTS
    assert odd.families == {"p": ["y"], "unknown": ["x"]}
    assert len(odd.council) == 3
    mapped = summarize({"default_models": {"studio": "s2", "deep research": "dr"}}, "live")
    assert mapped.defaults["study"] == "s2" and mapped.defaults["deep-research"] == "dr"


def test_staleness_warning_after_seven_days(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[models]\nlast_refreshed = "2026-01-01T00:00:00Z"\n', encoding="utf-8")
    cfg = load_config(config)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    assert staleness_warning(cfg, start + timedelta(days=7)) == ""
    warning = staleness_warning(cfg, start + timedelta(days=9))
    assert "9 days old" in warning and "--refresh" in warning
    assert staleness_warning(load_config(tmp_path / "none.toml", missing_ok=True), start) == ""
