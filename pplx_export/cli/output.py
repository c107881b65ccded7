"""What commands print: machine output on stdout, human summaries on stderr."""

from __future__ import annotations

import sys
from typing import Any, Protocol

from pplx_export.errors import ThreadsFailed


def emit_json(doc: Any) -> None:
    """Machine output: one JSON document on stdout."""
    import json

    sys.stdout.write(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
    sys.stdout.flush()


def report_run(
    line: str,
    failures: list[tuple[str, str]],
    *,
    quiet: bool,
    doc: Any = None,
    failed_message: str = "",
) -> None:
    """A run's report: `doc` as JSON on stdout when given, else the summary line and one line
    per (where, reason) failure on stderr; then exit 4 (ThreadsFailed) if `failed_message`."""
    if doc is not None:
        emit_json(doc)
    elif not quiet:
        sys.stderr.write(line + "\n")
        for where, reason in failures:
            sys.stderr.write(f"  failed: {where}: {reason}\n")
    if failed_message:
        raise ThreadsFailed(failed_message)


def print_lines(lines: list[str]) -> None:
    sys.stdout.write("".join(line + "\n" for line in lines))


class Report(Protocol):
    """What a command shows: its lines, or its JSON."""

    def lines(self) -> list[str]: ...

    def to_json(self) -> Any: ...


def show_report(report: Report, *, as_json: bool) -> None:
    """`report` as one JSON document on stdout, or its lines."""
    if as_json:
        emit_json(report.to_json())
    else:
        print_lines(report.lines())


class RunResult(Protocol):
    """What a long command returns: a summary line, its JSON, and what failed."""

    failures: list[tuple[str, str]]

    @property
    def failed(self) -> int: ...

    def line(self) -> str: ...

    def to_json(self) -> Any: ...


def report_result(
    result: RunResult,
    *,
    quiet: bool,
    as_json: bool,
    failed_what: str,
    failures: list[tuple[str, str]] | None = None,
) -> None:
    """`report_run` for a RunResult: exit 4 with "<n> <failed_what>" when anything failed.
    `failures`: the (where, reason) lines to show, when not `result.failures` as they are."""
    report_run(
        result.line(),
        result.failures if failures is None else failures,
        quiet=quiet,
        doc=result.to_json() if as_json else None,
        failed_message=f"{result.failed} {failed_what}" if result.failed else "",
    )
