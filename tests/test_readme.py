"""The README's commands work as written: the demo line runs, the test line is what CI runs."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from pplx_export.cli.export import main

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
CI_RUN = REPO / ".ci" / "run"
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def fenced_lines() -> list[str]:
    """Every line inside the README's fenced code blocks, stripped, prompts removed."""
    lines: list[str] = []
    for block in FENCE.findall(README.read_text(encoding="utf-8")):
        for line in block.splitlines():
            text = line.strip()
            lines.append(text[2:] if text.startswith("$ ") else text)
    return lines


def commands(line: str) -> list[str]:
    """The commands of a shell line joined with `&&` / `;`."""
    return [part.strip() for part in re.split(r"&&|;", line) if part.strip()]


def readme_command(prefix: str) -> str | None:
    for line in fenced_lines():
        for command in commands(line):
            if command.startswith(prefix):
                return command
    return None


def test_the_readme_demo_command_runs(tmp_path: Path) -> None:
    command = readme_command("pplx-export demo")
    if command is None:
        pytest.skip("README.md has no `pplx-export demo` line yet")
    argv = shlex.split(command)[1:]
    assert readme_command("pip install -e .") is not None, "the README should show the install"
    result = CliRunner().invoke(main, argv, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "demo archive:" in result.stdout
    target = Path(argv[1]) if len(argv) > 1 and not argv[1].startswith("-") else None
    root = target or Path("pplx-demo-archive")  # relative to the test's CWD (tmp_path)
    assert sorted(p.name for p in (root / "Alice Example").iterdir()) == [
        "computer",
        "council",
        "deep-research",
        "search",
        "study",
    ]


def test_the_readme_test_command_is_what_ci_runs() -> None:
    readme = readme_command("python -m pytest")
    if readme is None:
        pytest.skip("README.md has no `python -m pytest` line yet")
    ci_lines = [line.strip() for line in CI_RUN.read_text(encoding="utf-8").splitlines()]
    ci = [line for line in ci_lines if line.startswith("python -m pytest")]
    assert ci == [readme], f"README runs {readme!r}, .ci/run runs {ci!r}"
    # The install step the README pairs with it installs the same extras as CI.
    for line in fenced_lines():
        if readme in commands(line):
            for command in commands(line):
                extras = re.findall(r"pip install .*?(-e\s+\S+)", command)
                for spec in extras:
                    assert any(
                        "pip install" in ci_line and spec in ci_line for ci_line in ci_lines
                    ), f"CI does not install {spec}"


CONSTRAINTS = REPO / "constraints.txt"


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep and version, f"constraints.txt: {line!r} is not pinned with =="
            pins[_canonical(name)] = version
    return pins


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_the_test_environment_is_the_locked_one() -> None:
    """README and CI install through constraints.txt, and it pins every dependency the test
    extras bring in (a new release of one cannot change what CI runs)."""
    from importlib.metadata import requires

    install = "-c constraints.txt -e '.[test]'"
    assert any(install in command for line in fenced_lines() for command in commands(line))
    ci = CI_RUN.read_text(encoding="utf-8")
    assert f"pip install -q {install}" in ci
    assert "pip install -q -c constraints.txt --upgrade pip" in ci
    pins = _pins()
    wanted = set()
    for spec in requires("pplx-export") or []:
        name = _canonical(re.split(r"[\s<>=!~;\[(]", spec, maxsplit=1)[0])
        marker = spec.partition(";")[2]
        if not marker or 'extra == "test"' in marker:
            wanted.add(name)
    assert wanted and wanted <= set(pins), f"not pinned: {sorted(wanted - set(pins))}"
    assert "pip" in pins


def test_the_unattended_block_uses_real_options() -> None:
    """Issue 32: "Use it" shows the unattended set-up in one short block, and every option
    in it is one its command takes."""
    text = README.read_text(encoding="utf-8")
    use_it = text[text.index("## Use it") : text.index("## The archive")]
    block = next(b for b in FENCE.findall(use_it) if "schedule --install --healthcheck" in b)
    lines = [line for line in block.splitlines() if line.strip()]
    assert len(lines) <= 6
    for line in lines:
        for command in commands(line.split("  #")[0]):
            words = shlex.split(command)
            assert words[0] == "pplx-export", command
            sub = main.commands[words[1]]
            known = {opt for param in sub.params for opt in param.opts}
            assert {w for w in words[2:] if w.startswith("--")} <= known, command
