"""`pplx-export capture`: a bundle a user can attach to a bug report (issue 36).

Two passes, so the bundle is whole and safe:

1. **Online**: sign in and fetch what an export would (the thread pages, plain and
   schematized, asset data, downloads, the report body), or one library page (`--listing`)
   or a space's metadata and first page (`--space`), with the run's `Recorder` on
   (`NetRuntime.recorder`, hooked into `ApiClient`): every request and response, redacted as
   it is recorded (`site/record.py`). The export goes into a temporary archive, thrown away.
2. **Offline**: the same export again, its requests answered from the redacted recording
   (`util.bundle.Replay` behind an `httpx.MockTransport`). Its Markdown goes into the bundle,
   with a parse summary per thread (turns, answer forms, losses, drift kinds): what the
   bundle shows is exactly what an export from the bundle gives, which is what the emulator
   serves back with `--replay`.

Last, the whole bundle is scanned for every secret the run held (cookie values, write
tokens, URL signatures); one found anywhere and nothing is written.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import logging
import platform
import shutil
import tempfile
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from pplx_export.archive.raw import RAW_BLOCKS, RAW_ENTRIES
from pplx_export.archive.thread_json import THREAD_JSON
from pplx_export.commands.export.plan import parse_thread_ref
from pplx_export.commands.export.thread import Exporter
from pplx_export.config import Account
from pplx_export.context import RunOptions
from pplx_export.errors import ApiError, PplxError, SchemaError, UsageError
from pplx_export.pipeline.assemble import default_engine
from pplx_export.pipeline.capture_hint import thread_url
from pplx_export.site.api import PerplexityAPI
from pplx_export.site.client import ApiClient, ClientSettings
from pplx_export.site.library import ListingRun
from pplx_export.site.pacing import NetRuntime
from pplx_export.site.record import Recorder
from pplx_export.site.session import open_session, runtime_for
from pplx_export.store.batch_state import BatchState
from pplx_export.util import bundle
from pplx_export.util.atomic import atomic_write_bytes

log = logging.getLogger(__name__)

REPLAY_BASE = "https://www.perplexity.ai"
# The derived files a bundle shows (the raw files are the exchanges themselves).
SHOWN_SUFFIXES = (".md", ".json")
NOT_SHOWN = frozenset({RAW_ENTRIES, RAW_BLOCKS, THREAD_JSON})


class CaptureLeak(PplxError):
    """The final scan found a secret in the bundle: nothing was written."""


@dataclass
class ThreadSummary:
    uuid: str
    url: str
    turns: int = 0
    answer_forms: dict[str, int] = field(default_factory=dict)
    losses: list[dict[str, Any]] = field(default_factory=list)
    drift: dict[str, int] = field(default_factory=dict)
    error: str = ""
    rel: str = ""  # where its Markdown sits under markdown/

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"uuid": self.uuid, "url": self.url}
        if self.error:
            doc["error"] = self.error
            return doc
        doc.update(
            turns=self.turns,
            answer_forms=self.answer_forms,
            losses=self.losses,
            drift=self.drift,
            markdown=f"{bundle.MARKDOWN_DIR}/{self.rel}" if self.rel else "",
        )
        return doc


@dataclass
class CaptureResult:
    bundle: Path
    exchanges: int
    threads: list[ThreadSummary]
    what: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "bundle": str(self.bundle),
            "exchanges": self.exchanges,
            "captured": self.what,
            "threads": [t.to_json() for t in self.threads],
        }

    def lines(self) -> list[str]:
        out = [f"capture: {self.exchanges} requests recorded in {self.bundle}"]
        for t in self.threads:
            if t.error:
                out.append(f"  {t.uuid}: {t.error}")
                continue
            forms = ", ".join(f"{k} {v}" for k, v in sorted(t.answer_forms.items())) or "none"
            out.append(f"  {t.uuid}: {t.turns} turn(s); answer forms: {forms}")
            if t.losses or t.drift:
                out.append(f"    {len(t.losses)} loss(es), {len(t.drift)} drift kind(s)")
        out.append("redacted: no cookies, tokens, e-mails, ids, names or URL signatures")
        return out


def default_bundle_path(now: datetime) -> Path:
    return Path(f"pplx-capture-{now.strftime('%Y%m%d-%H%M%S')}.zip")


def run_capture(
    opts: RunOptions,
    refs: list[str],
    *,
    listing: bool = False,
    space: str | None = None,
    output: Path | None = None,
    keep_content: bool = False,
    transport: httpx.BaseTransport | None = None,
) -> CaptureResult:
    """Record, redact, render and write one bundle; see the module doc."""
    targets: dict[str, str] = {}
    for uuid, url in map(parse_thread_ref, refs):
        targets.setdefault(uuid, url)
    if not targets and not listing and space is None:
        raise UsageError("nothing to capture: give a thread (URL or UUID), --listing or --space")
    now = datetime.now(UTC)
    output = output or default_bundle_path(now)
    if output.exists() and not (output.is_dir() and not any(output.iterdir())):
        raise UsageError(f"{output} exists; give another path (a new .zip or folder)")
    runtime = runtime_for(opts)
    recorder = Recorder(keep_content=keep_content)
    runtime.recorder = recorder
    what: list[str] = []
    errors: dict[str, str] = {}
    with (
        _quiet("pplx_export.search", logging.WARNING),
        tempfile.TemporaryDirectory(prefix="pplx-capture-") as tmp,
    ):
        try:
            with open_session(opts, transport=transport) as api:
                if listing:
                    what.append("listing")
                    _first_page(api, opts)
                if space is not None:
                    what.append(f"space {space}")
                    _space(api, space)
                exporter = _exporter(api, Path(tmp) / "online", opts.account)
                for uuid, url in targets.items():
                    what.append(thread_url(uuid, url))
                    errors[uuid] = _export(exporter, uuid, url)
        finally:
            runtime.recorder = None
        exchanges = recorder.exchanges
        # The URLs as the bundle shows them: a title slug's words are content too.
        shown = {uuid: recorder.redactor.text(url) for uuid, url in targets.items()}
        what = [w if " " in w else recorder.redactor.text(w) for w in what]
        with _quiet("pplx_export", logging.ERROR):  # the online pass said it all already
            summaries = _replayed(exchanges, shown, errors, Path(tmp) / "replayed", opts)
        files = _bundle_files(exchanges, summaries, what, keep_content, Path(tmp) / "replayed")
    leaks = sorted({leak for data in files.values() for leak in recorder.leaks(_text(data))})
    if leaks:
        raise CaptureLeak(
            f"the bundle would hold {', '.join(leaks)}; nothing written (please report this)"
        )
    _write(output, files)
    return CaptureResult(output, len(exchanges), summaries, what)


@contextlib.contextmanager
def _quiet(name: str, level: int) -> Iterator[None]:
    """`name`'s logger at `level` or above meanwhile (the throwaway archives' search index
    and the replayed pass are nobody's concern)."""
    logger = logging.getLogger(name)
    previous = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(previous)


def _first_page(api: PerplexityAPI, opts: RunOptions) -> None:
    from pplx_export.commands.export.batch import listing_order_for

    # One row is enough: the page it came in is recorded whole, and no second is asked.
    list(itertools.islice(api.iter_library(ListingRun(order=listing_order_for(opts))), 1))


def _space(api: PerplexityAPI, slug: str) -> None:
    # A space that fails is recorded as it failed: the answer is what a report needs.
    try:
        api.get_collection(slug)
        list(itertools.islice(api.iter_collection_threads(slug), 1))
    except ApiError as exc:
        log.warning("space %s: %s", slug, exc)


def _exporter(api: PerplexityAPI, root: Path, account: Account) -> Exporter:
    root.mkdir(parents=True, exist_ok=True)
    return Exporter(
        api=api,
        root=root,
        account=account,
        lang="en",
        state=BatchState.load(root),
        engine=default_engine(),
    )


def _export(exporter: Exporter, uuid: str, url: str) -> str:
    """Export one thread into the throwaway archive; "" or why it failed (the failing
    response is recorded: that is often what a report needs)."""
    try:
        exporter.export(uuid, None, url)
    except (ApiError, SchemaError) as exc:
        log.warning("thread %s: %s", uuid, exc)
        return f"{type(exc).__name__}: {exc}"
    return ""


def _replayed(
    exchanges: list[dict[str, Any]],
    targets: dict[str, str],
    errors: dict[str, str],
    root: Path,
    opts: RunOptions,
) -> list[ThreadSummary]:
    """Export the threads again from the redacted recording; summarise each parse."""
    replay = bundle.Replay(exchanges)

    def answer(request: httpx.Request) -> httpx.Response:
        found = replay.find(
            request.method, request.url.path, request.url.query.decode("ascii"), request.content
        )
        if found is None:
            return httpx.Response(404, json={"error_code": "NOT_IN_CAPTURE"})
        if "error" in found:
            raise httpx.ConnectError(str(found["error"]), request=request)
        headers = {k: v for k, v in (found.get("headers") or {}).items() if k != "server"}
        return httpx.Response(
            int(found.get("status") or 200), headers=headers, content=bundle.body_bytes(found)
        )

    settings = ClientSettings(base_url=REPLAY_BASE, max_attempts=1, backoff_cap=0)
    runtime = NetRuntime(min_interval=0)
    client = ApiClient(settings, runtime, transport=httpx.MockTransport(answer))
    summaries: list[ThreadSummary] = []
    with PerplexityAPI(client) as api:
        exporter = _exporter(api, root, opts.account)
        for uuid, url in targets.items():
            summary = ThreadSummary(uuid, thread_url(uuid, url), error=errors.get(uuid, ""))
            summaries.append(summary)
            if summary.error:
                continue
            try:
                directory = exporter.export(uuid, None, url)
            except (ApiError, SchemaError) as exc:
                summary.error = f"the redacted recording does not export: {exc}"
                continue
            summary.rel = directory.relative_to(root).as_posix()
            _summarise(summary, root)
    return summaries


def _summarise(summary: ThreadSummary, root: Path) -> None:
    """The parse summary of the thread just exported to `root/summary.rel`, read back from
    its files the way every offline reader reads them."""
    from pplx_export.archive.loader import load_thread

    _, conv = load_thread(root, summary.rel, default_engine().parse)
    summary.turns = len(conv.turns)
    summary.answer_forms = dict(Counter(t.answer_form or "none" for t in conv.turns))
    summary.losses = [{"turn": n, **loss.to_json()} for n, loss in conv.losses]
    summary.drift = dict(sorted(conv.drift.counts.items()))


def _bundle_files(
    exchanges: list[dict[str, Any]],
    summaries: list[ThreadSummary],
    what: list[str],
    keep_content: bool,
    root: Path,
) -> dict[str, bytes]:
    from pplx_export import __version__

    files: dict[str, bytes] = {}
    manifest = {
        "format": bundle.FORMAT,
        "tool": "pplx-export",
        "version": __version__,
        "python": platform.python_version(),
        "captured": what,
        "keep_content": keep_content,
        "redacted": "cookies and authorization never recorded; read_write_token, e-mails, "
        "user ids, account and member names, URL signatures replaced by placeholders"
        + ("" if keep_content else "; text kept in length and shape only"),
        "exchanges": len(exchanges),
        "threads": [s.to_json() for s in summaries],
    }
    files[bundle.CAPTURE_JSON] = bundle.dumps(manifest).encode("utf-8")
    for ex in exchanges:
        files[bundle.exchange_name(int(ex["n"]))] = bundle.dumps(ex).encode("utf-8")
    for s in summaries:
        if not s.rel:
            continue
        for path in bundle.iter_files(root / s.rel):
            rel = path.relative_to(root / s.rel).as_posix()
            if path.name in NOT_SHOWN or not path.name.endswith(SHOWN_SUFFIXES):
                continue
            files[f"{bundle.MARKDOWN_DIR}/{s.rel}/{rel}"] = path.read_bytes()
    return files


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _write(output: Path, files: dict[str, bytes]) -> None:
    if output.suffix.lower() == ".zip":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, data in files.items():
                info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, data)
        output.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(output, buf.getvalue())
        return
    tmp = output.with_name(output.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    for name, data in files.items():
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    if output.exists():
        output.rmdir()  # empty (checked before any request)
    tmp.rename(output)
