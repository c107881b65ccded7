"""The assembly path shared by online export and offline re-render (product.md §2.1).

`raw dicts (+ index row hints) -> Conversation -> rendered files -> write_thread`. The
parser and renderer are reached through an `Engine` so re-render can run in worker
processes and tests can substitute fakes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pplx_export.archive.paths import thread_dir
from pplx_export.renderer_version import RENDERER_VERSION

# The hand-saved original of a rewritten answer (render.turn.VARIANT_FILE; the renderer is
# imported on first use only).
VARIANT_FILE = "rewritten_answer_variant.md"

if TYPE_CHECKING:
    from pplx_export.archive.writer import FastPath, WriteResult
    from pplx_export.models import Conversation, LocalFile

# The writer and the data model are imported where a thread is rendered, not here: a no-op
# `re-render --changed-only` needs `default_engine` (its version and flavour) and nothing else.
ParseFn = Callable[..., "Conversation"]
# render(conv, lang, local files[, variant_saved=True]) -> {relpath: text}
RenderFn = Callable[..., dict[str, str]]
ReportFn = Callable[["Conversation", str, str], str]


@dataclass(frozen=True)
class Engine:
    parse: ParseFn  # parse_thread(plain, blocks, index_row, *, web_uuid, url, export_via, ...)
    render: RenderFn  # render_thread(conv, lang, local files) -> {relpath: text}, in `flavor`
    render_report: ReportFn  # render_report(conv, body, lang) -> report.md text, in `flavor`
    version: str  # RENDERER_VERSION: part of the --changed-only fingerprint
    # The render flavour the two render functions write ("github" or "obsidian"): part of
    # the --changed-only fingerprint too, so switching it rewrites every thread.
    flavor: str = "github"


def _parse(*args: Any, **kwargs: Any) -> Conversation:
    parse_mod: Any = importlib.import_module("pplx_export.parse")
    result: Conversation = parse_mod.parse_thread(*args, **kwargs)
    return result


def _render(
    conv: Conversation,
    lang: str,
    local: Sequence[LocalFile] = (),
    flavor: str = "github",
    variant_saved: bool = False,
) -> dict[str, str]:
    render_mod: Any = importlib.import_module("pplx_export.render")
    result: dict[str, str] = render_mod.render_thread(
        conv, lang, flavor, local, space_page=space_page_of(conv), variant_saved=variant_saved
    )
    return result


def space_page_of(conv: Conversation) -> str:
    """The thread's page under spaces/ as `spaces` names it (relative to the archive root;
    "" for a thread in no space). Two spaces whose names clash get suffixed pages there,
    which this cannot know; every other thread links the page `spaces` writes."""
    if conv.space is None or not (conv.space.slug or conv.space.title or conv.space.uuid):
        return ""
    from pplx_export.pipeline.space_catalog import page_file, space_ref

    ref = space_ref(conv.space.to_json())
    return f"spaces/{page_file(ref, set())}" if ref is not None else ""


def _render_report(conv: Conversation, body: str, lang: str, flavor: str = "github") -> str:
    render_mod: Any = importlib.import_module("pplx_export.render")
    result: str = render_mod.render_report(conv, body, lang, flavor)
    return result


def default_engine(flavor: str = "github") -> Engine:
    """The real parser and renderer, imported on first use: a `--changed-only` run that
    renders nothing needs only the version, and the renderer takes longer to import than
    such a run takes. `flavor`: the Markdown flavour it writes (config.FLAVORS)."""
    return Engine(
        parse=_parse,
        render=partial(_render, flavor=flavor),
        render_report=partial(_render_report, flavor=flavor),
        version=RENDERER_VERSION,
        flavor=flavor,
    )


def preload_engine() -> None:
    """Import the real parser and renderer now (what `default_engine` defers): a parallel
    re-render does it once in the parent before forking, or once per spawned worker."""
    importlib.import_module("pplx_export.parse")
    importlib.import_module("pplx_export.render")


def render_files(
    engine: Engine,
    conv: Conversation,
    lang: str,
    report_body: str | None,
    directory: Path | None = None,
) -> dict[str, str]:
    """Every derived file of a thread; report.md only when a report body is known.

    `directory` is where the thread is (or is about to be) written: its files (manifest,
    downloads under `assets/files/`) are what the pages link. The render itself never
    reads the disk; it is given the list."""
    from pplx_export.archive.assets import local_files

    local = local_files(conv.assets, directory) if directory is not None else []
    # A hand-saved original of a rewritten answer (§5.8) is linked from the rewrite note.
    saved = (
        directory is not None
        and bool(conv.answer_variants)
        and (directory / VARIANT_FILE).is_file()
    )
    if saved:
        files = dict(engine.render(conv, lang, local, variant_saved=True))
    else:
        files = dict(engine.render(conv, lang, local))
    if report_body is not None and conv.report is not None:
        files["report.md"] = engine.render_report(conv, report_body, lang)
    return files


def export_conversation(
    root: Path,
    conv: Conversation,
    *,
    account_folder: str,
    lang: str = "en",
    report_body: str | None = None,
    dest: Path | None = None,
    engine: Engine | None = None,
) -> WriteResult:
    """Online export's last step: render and write a freshly fetched thread.

    `conv.assets[].downloaded_to` must already name the downloaded files (use
    `archive.writer.prepare_thread_dir` to learn the directory before downloading).
    """
    from pplx_export.archive.writer import write_thread

    engine = engine or default_engine()
    # Without `dest`, the directory write_thread will settle on (older directories of the
    # thread are merged into it there); the online pipeline passes it, downloads done.
    where = dest or thread_dir(
        root, account_folder, conv.mode, conv.last_updated, conv.title, conv.web_uuid
    )
    rendered = render_files(engine, conv, lang, report_body, where)
    result = write_thread(
        root,
        conv,
        rendered,
        account_folder=account_folder,
        source="online",
        report_body=report_body,
        dest=dest,
    )
    log_variant_hits(root, result, source="online")
    return result


def rewrite_conversation(
    root: Path,
    rel: str,
    conv: Conversation,
    engine: Engine,
    lang: str,
    *,
    redact: bool,
    dry_run: bool,
    fast: FastPath | None = None,
) -> WriteResult:
    """Offline: render archived thread `rel` again and write it back into its own directory
    (re-render; verify's dry run). No variant log: re-render keeps its own."""
    from pplx_export.archive.report_body import load_report_body
    from pplx_export.archive.writer import NO_FAST_PATH, write_thread

    directory = root / rel
    account_folder, _mode_folder, _name = rel.split("/", 2)
    rendered = render_files(engine, conv, lang, load_report_body(directory, conv), directory)
    return write_thread(
        root,
        conv,
        rendered,
        account_folder=account_folder,
        source="offline",
        dest=directory,
        redact=redact,
        log_variants=False,
        dry_run=dry_run,
        fast=fast or NO_FAST_PATH,
    )


def log_variant_hits(root: Path, result: WriteResult, *, source: str) -> None:
    """Append the answer variants a write found to the store's log (the writer warned)."""
    if result.variant_hits:
        from pplx_export.store.variants import append_variant_log

        append_variant_log(root, result.variant_hits, source=source)
