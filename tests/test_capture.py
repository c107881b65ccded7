"""`pplx-export capture` (issue 36): a redacted bundle of what an export sends and gets,
which the emulator serves back (`--replay`) to the same archive, byte for byte."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pplx_export.cli.export import main
from pplx_export.emulator import run_emulator
from pplx_export.emulator.library import SAMPLE_DIR
from pplx_export.util.bundle import read_bundle

SECRET_TOKEN = "sessiontoken-Zq7Xk2Pw9Lm4Vb8Nc3Rt6Yh1"
SECRET_EMAIL = "planted.secret@mail-host.example"
SECRET_NAME = "Quincy Plantedname"
SECRET_RWT = "rwt-planted-5e1f9a2c7b3d4e6f"
# One thread of each mode in the bundled sample (and the title-slug one).
THREADS = {
    "search": "835cd566-8b15-5f82-9ac1-a0c6cc2c1b2e",  # tides, in a space
    "deep-research": "698dc93c-6076-5904-beda-be59aa8c8b7f",  # heat pumps: report, assets
    "computer": "70a2d4e2-1ab9-5391-b446-fbf77a823d63",  # sub-agents, files
    "council": "1ab3c79e",
    "study": "fa3791b3",
}
SLUG_URL = (
    "https://www.perplexity.ai/search/how-do-i-descale-an-electric-kettle-14zUZI4rWsq-aSz__YCImA"
)


def _uuid(library: Path, prefix: str) -> str:
    for doc in library.glob("*/*/*/thread.json"):
        web_uuid = str(json.loads(doc.read_text("utf-8"))["web_uuid"])
        if web_uuid.startswith(prefix):
            return web_uuid
    raise AssertionError(prefix)


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample library with secrets planted in its payloads; asset URLs signed."""
    library = tmp_path_factory.mktemp("lib") / "sample"
    shutil.copytree(SAMPLE_DIR, library)
    tides = next(library.glob("alice/search/*How-do-tides-work*"))
    raw = tides / "raw_entries.json"
    text = raw.read_text("utf-8")
    text = text.replace("8ef55ff7-2eab-5d40-949b-4a1bddb13bbb", SECRET_RWT)
    text = text.replace("Moon beats the far more", f"Moon ({SECRET_EMAIL}) beats the far more")
    text = text.replace(
        '"contributor_users":[]',
        f'"contributor_users":[{{"username":"quincy","name":"{SECRET_NAME}","email":"{SECRET_EMAIL}","user_permission":2}}]',
    )
    raw.write_text(text, "utf-8")
    manifest = library / "_emulator.json"
    facts = json.loads(manifest.read_text("utf-8"))
    facts["url_ttl"] = 100000
    manifest.write_text(json.dumps(facts), "utf-8")
    return library


@pytest.fixture(scope="module")
def captured(
    planted: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("capture")
    refs = [THREADS["search"], THREADS["deep-research"], THREADS["computer"], SLUG_URL]
    refs += [_uuid(planted, THREADS["council"]), _uuid(planted, THREADS["study"])]
    with run_emulator(planted, session_token=SECRET_TOKEN) as emu:
        config = tmp / "config.toml"
        config.write_text(
            "[network]\nmin_interval = 0\nbackoff_cap = 0\n\n"
            '[accounts.alice]\nemail = "alice@example.com"\n',
            "utf-8",
        )
        cookies = tmp / "cookies.json"
        cookies.write_text(json.dumps(emu.cookies), "utf-8")
        out = tmp / "bundle.zip"
        result = CliRunner().invoke(
            main,
            [
                "capture",
                *refs,
                "--listing",
                "--space",
                "ocean-notes-4b1e0a",
                "-o",
                str(out),
                "--json",
                "--config",
                str(config),
                "--cookies",
                str(cookies),
                "--out",
                str(tmp / "archive"),
                "--base-url",
                emu.base_url,
            ],
            catch_exceptions=False,
        )
    assert result.exit_code == 0, result.output
    assert not (tmp / "archive").exists()  # a capture writes nothing to the archive
    return out, json.loads(result.stdout)


def test_the_bundle_holds_no_cookie_token_email_name_or_signature(
    captured: tuple[Path, dict[str, Any]],
) -> None:
    out, _doc = captured
    files = read_bundle(out)
    blob = "\n".join(data.decode("utf-8", "replace") for data in files.values())
    for secret in (
        SECRET_TOKEN,
        SECRET_EMAIL,
        SECRET_NAME,
        SECRET_RWT,
        "8ef55ff7-2eab-5d40-949b-4a1bddb13bbb",
        "alice@example.com",
        "Alice Example",
        "00000000-0000-4000-8000-00000000e001",  # alice's user id
        "emulator-ttl",  # the signature of the signed asset URLs
        "emulator-fresh",
        "__Secure-next-auth",
    ):
        assert secret not in blob, secret
    assert "cookie" not in blob.lower().replace("cookies", "")
    # Stable placeholders: the same value, the same placeholder, everywhere.
    assert "email-1@redacted.invalid" in blob
    assert "sig-1" in blob


def test_the_bundle_shows_requests_in_order_version_summary_and_markdown(
    captured: tuple[Path, dict[str, Any]],
) -> None:
    out, doc = captured
    files = read_bundle(out)
    manifest = json.loads(files["capture.json"])
    assert manifest["tool"] == "pplx-export" and manifest["version"]
    assert manifest["captured"][:2] == ["listing", "space ocean-notes-4b1e0a"]
    exchanges = [json.loads(files[n]) for n in sorted(files) if n.startswith("exchanges/")]
    assert [e["n"] for e in exchanges] == list(range(1, len(exchanges) + 1))
    paths = [e["request"]["path"] for e in exchanges]
    assert paths[:4] == [
        "/api/auth/session",
        "/rest/thread/list_ask_threads",
        "/rest/collections/get_collection",
        "/rest/collections/list_collection_threads",
    ]
    # The downloads too, their paths shaped like the URLs that named them.
    assert any(p.startswith("/__xxxxxxxx/xxxxx/") for p in paths)
    threads = manifest["threads"]
    assert len(threads) == 6 and all(not t.get("error") for t in threads)
    assert {f for t in threads for f in t["answer_forms"]} >= {"steps"}
    for t in threads:
        assert f"{t['markdown']}/conversation.md" in files
    # Without --keep-content the text keeps its shape, not its words.
    blob = "\n".join(files[n].decode() for n in files if n.endswith(".md"))
    assert "tides" not in blob.lower() and "Xxxxx" in blob
    assert "descale" not in json.dumps(doc)
    assert doc["exchanges"] == len(exchanges)


def test_the_emulator_replays_the_bundle_to_the_same_archive_byte_for_byte(
    captured: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    out, doc = captured
    files = read_bundle(out)
    with run_emulator(replay=out) as emu:
        cookies = tmp_path / "cookies.json"
        cookies.write_text('{"__Secure-next-auth.session-token": "any"}', "utf-8")
        archive = tmp_path / "archive"
        config = tmp_path / "config.toml"  # no pacing: the emulator is on loopback
        config.write_text("[network]\nmin_interval = 0\nbackoff_cap = 0\n", "utf-8")
        urls = [t["url"] for t in doc["threads"]]
        result = CliRunner().invoke(
            main,
            [
                "export",
                *urls,
                "--cookies",
                str(cookies),
                "--out",
                str(archive),
                "--base-url",
                emu.base_url,
                "--config",
                str(config),
            ],
            catch_exceptions=False,
        )
    assert result.exit_code == 0, result.output
    shown = {n: data for n, data in files.items() if n.startswith("markdown/")}
    assert len(shown) > 20
    for name, data in shown.items():
        path = archive / name.removeprefix("markdown/")
        assert path.read_bytes() == data, name


def test_keep_content_keeps_the_words(planted: Path, tmp_path: Path) -> None:
    with run_emulator(planted, session_token=SECRET_TOKEN) as emu:
        cookies = tmp_path / "cookies.json"
        cookies.write_text(json.dumps(emu.cookies), "utf-8")
        out = tmp_path / "b"
        result = CliRunner().invoke(
            main,
            [
                "capture",
                THREADS["search"],
                "--keep-content",
                "-o",
                str(out),
                "-q",
                "--cookies",
                str(cookies),
                "--out",
                str(tmp_path / "a"),
                "--base-url",
                emu.base_url,
            ],
            catch_exceptions=False,
        )
    assert result.exit_code == 0, result.output
    blob = "\n".join(p.read_text("utf-8") for p in out.rglob("*.md"))
    assert "tides" in blob.lower()
    assert SECRET_EMAIL not in blob and "email-" in blob  # still redacted


def test_a_leaked_secret_refuses_the_bundle(planted: Path, tmp_path: Path) -> None:
    """The final scan: a session value in a response no rule knows is refused."""
    library = tmp_path / "lib"
    shutil.copytree(planted, library)
    tides = next(library.glob("alice/search/*How-do-tides-work*"))
    raw = tides / "raw_entries.json"
    raw.write_text(
        raw.read_text("utf-8").replace('"mode":"1"', f'"mode":"1","x":"{SECRET_TOKEN}"', 1), "utf-8"
    )
    with run_emulator(library, session_token=SECRET_TOKEN) as emu:
        cookies = tmp_path / "cookies.json"
        cookies.write_text(json.dumps(emu.cookies), "utf-8")
        out = tmp_path / "b.zip"
        result = CliRunner().invoke(
            main,
            [
                "capture",
                THREADS["search"],
                "-o",
                str(out),
                "--cookies",
                str(cookies),
                "--out",
                str(tmp_path / "a"),
                "--base-url",
                emu.base_url,
            ],
            catch_exceptions=False,
        )
    assert result.exit_code == 1
    assert "secret" in result.stderr and SECRET_TOKEN not in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("command", ["export", "batch", "sync"])
def test_write_responses_keeps_a_whole_run_redacted(
    planted: Path, tmp_path: Path, command: str
) -> None:
    with run_emulator(planted, session_token=SECRET_TOKEN) as emu:
        cookies = tmp_path / "cookies.json"
        cookies.write_text(json.dumps(emu.cookies), "utf-8")
        config = tmp_path / "config.toml"  # no pacing: the emulator is on loopback
        config.write_text("[network]\nmin_interval = 0\nbackoff_cap = 0\n", "utf-8")
        common = ["--cookies", str(cookies), "--out", str(tmp_path / "a")]
        common += ["--base-url", emu.base_url, "--config", str(config)]
        if command == "batch":
            assert CliRunner().invoke(main, ["index", *common]).exit_code == 0
        args = [THREADS["search"]] if command == "export" else []
        dump = tmp_path / "responses"
        result = CliRunner().invoke(
            main,
            [command, *args, "--write-responses", str(dump), "-q", *common],
            catch_exceptions=False,
        )
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in (dump / "exchanges").iterdir())
    assert names[0] == "0001.json" and len(names) >= 2
    blob = "\n".join(p.read_text("utf-8") for p in (dump / "exchanges").iterdir())
    for secret in (SECRET_TOKEN, SECRET_EMAIL, SECRET_RWT, "alice@example.com", "emulator-ttl"):
        assert secret not in blob, secret
    assert '"/rest/thread/' + THREADS["search"] in blob.replace('"path": ', "")
    # The archive itself is the ordinary one: the recording changes nothing in it.
    turn = next((tmp_path / "a").glob("*/search/*How-do-tides-work*/turns/turn_0001.md"))
    assert "tides" in turn.read_text("utf-8").lower()
