"""docs/cli.md is the generated `--help` of every command: it must not drift from the code."""

from __future__ import annotations

from tools.gen_cli_docs import DOC, render


def test_cli_reference_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), "run: python tools/gen_cli_docs.py"
