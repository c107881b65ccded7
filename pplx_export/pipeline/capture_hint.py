"""The lines a drift report ends with: which thread to capture, and how (issue 36).

`sync`, `export`, `batch`, `re-render` and `verify` count threads whose content the parser
did not read (losses, protocol §9.1) or whose payloads hold shapes it does not know (schema
drift); each names the first such thread and the `capture` command that makes a bundle of
it for a bug report.
"""

from __future__ import annotations

import textwrap

from pplx_export.util.threadref import SITE


def thread_url(uuid: str, url: str = "") -> str:
    """The thread's URL as `capture` takes it: the one on record, else `/search/<uuid>`."""
    return url or f"{SITE}/search/{uuid}"


def capture_command(uuid: str, url: str = "") -> str:
    return f"pplx-export capture {thread_url(uuid, url)}"


def hint_lines(what: str, uuid: str, url: str = "", width: int = 80) -> list[str]:
    """`what` (e.g. "threads: 2 with unknown shapes") and the first thread, wrapped to
    `width`; then the `capture` command on a line of its own (a URL is never wrapped)."""
    lines = textwrap.wrap(f"{what}; first: {uuid}", width, subsequent_indent="  ")
    return [
        *lines,
        "  this makes a bundle of it for a bug report:",
        f"  {capture_command(uuid, url)}",
    ]


def drift_json(lossy: int, unknown: int, uuid: str, url: str = "") -> dict[str, object]:
    return {
        "threads_with_losses": lossy,
        "threads_with_unknown_shapes": unknown,
        "first": {"uuid": uuid, "url": thread_url(uuid, url)},
        "capture": capture_command(uuid, url),
    }
