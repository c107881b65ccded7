"""The README's emulator session is what the commands print today (issue 16, point 12).

The console block under "A real session, against the emulator" is replayed: the emulator
starts, `cat config.toml` writes the config shown, `export`/`cp` set up the rest, and each
`pplx-export` line runs through click's runner in a scratch directory that stands for
`~/pplx`. Its output (stdout and stderr, in order) must equal the lines the README shows,
up to timings and the cookie cache's hashed name. `PPLX_SHOW_SESSION=1` prints the
replayed transcript to paste in.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pplx_export.cli.ask import main as ask_main
from pplx_export.cli.export import main
from pplx_export.emulator import run_emulator

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
HEADING = "### A real session, against the emulator"
HOME_DIR = "~/pplx"
STAND_INS = (
    (re.compile(r"\b\d+\.\d+/s\b"), "N/s"),
    (re.compile(r"\b\d+\.\ds\b"), "Ns"),
    # the cookie cache is named for a hash of the archive's absolute path
    (re.compile(r"cookies-[0-9a-f]{16}\.json"), "cookies-HASH.json"),
    # when a thread was found deleted: the time of the replay
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\b"), "TIME"),
)


def session_block() -> list[str]:
    text = README.read_text(encoding="utf-8")
    after = text[text.index(HEADING) :]
    block = after[after.index("```console\n") + len("```console\n") :]
    return block[: block.index("```")].splitlines()


def steps(lines: list[str]) -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    for line in lines:
        if line.startswith("$ "):
            out.append((line[2:], []))
        else:
            out[-1][1].append(line)
    return out


# A progress line on the way (not the last, 100% one) appears only when a run is slow
# enough to report before it ends: on a loaded machine, not in the README.
PROGRESS_ON_THE_WAY = re.compile(r"^INFO \S+: \d+/\d+ \((?!100%)\d+%\)")


def normal(lines: list[str]) -> list[str]:
    result = []
    for line in lines:
        if PROGRESS_ON_THE_WAY.match(line):
            continue
        for pattern, stand_in in STAND_INS:
            line = pattern.sub(stand_in, line)
        result.append(line.rstrip())
    return result


def test_the_readme_session_is_what_the_commands_print(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "pplx"
    work.mkdir()
    monkeypatch.chdir(work)
    env: dict[str, str | None] = {"PPLX_EXPORT_CONFIG": None, "COLUMNS": "80"}
    shown: list[str] = []
    with run_emulator() as emu:
        for command, expected in steps(session_block()):
            shown.append(f"$ {command}")
            argv = shlex.split(command)
            if argv[:3] == ["python", "-m", "pplx_export.emulator"]:
                port = argv[argv.index("--port") + 1]
                readme_url = f"http://127.0.0.1:{port}"
                assert expected == [readme_url]
                shown += expected
            elif argv[:2] == ["cat", "config.toml"]:
                (work / "config.toml").write_text("\n".join(expected) + "\n", encoding="utf-8")
                shown += expected
            elif argv[0] == "export":
                name, _, value = argv[1].partition("=")
                assert value == readme_url
                env[name] = emu.base_url
            elif argv[0] == "cp":
                shutil.copy(REPO / argv[1], work / argv[2])
            else:
                assert argv[0] in ("pplx-export", "pplx-ask"), command
                group = main if argv[0] == "pplx-export" else ask_main
                result = CliRunner().invoke(group, argv[1:], env=env, terminal_width=80)
                got = (
                    result.output.replace(str(work), HOME_DIR)
                    .replace(str(Path.home()), "~")
                    .replace(emu.base_url, readme_url)
                    .splitlines()
                )
                shown += got
                if os.environ.get("PPLX_SHOW_SESSION"):
                    continue
                assert normal(got) == normal(expected), f"$ {command}\n{result.output}"
    if os.environ.get("PPLX_SHOW_SESSION"):
        print("\n".join(shown))


def test_skipped_tests_say_why_in_the_output() -> None:
    """A fresh clone skips the tests that need the shared corpus; `-rs` prints each reason."""
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "-rs" in config["tool"]["pytest"]["ini_options"]["addopts"].split()


def test_gitignore_covers_what_the_session_creates() -> None:
    ignored = (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
    for name in ("/archive/", "/config.toml", "/cookies.json", "pplx-demo-archive/"):
        assert name in ignored
