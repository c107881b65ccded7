"""`pplx-ask`: ask (a new thread or a follow-up turn), watch it live, archive it on completion.

Order of a run (product.md §4, protocol §2.12):

1. Check the input with no request at all: empty prompt, mode, model counts, thread ref.
2. Sign in; for `--follow-up` fetch the thread (its newest `backend_uuid` and its
   `read_write_token` come from there, never from disk: stored raw files hold the token
   redacted); for `--space` look the space up.
3. Send the ask once (never retried: a retry would start a second thread) and watch the
   stream (commands/ask/stream.py) with the live view (commands/ask/view.py).
4. On COMPLETED: move into the BOT space (new threads not created in a space), mark read
   (`--mark-read`), archive through the export pipeline (`Exporter`), retrying the brief 404
   of a just-created thread. Move and mark-read are best-effort (`step_errors`); a failed
   archive fails the run. Any other final status: nothing is moved or archived, exit 1.
   A stream that broke, went silent past `--timeout` or ended with the turn still running is
   settled by polling the thread once its UUID is known (bounded by `--poll-for`, paced 2, 3,
   5, 8, then every 10 s, capped by [network] backoff_cap; the live view says so): completed
   there means the steps above run anyway; FAILED there archives nothing.
   `-c/--continue` reads the last thread asked from this archive (the state store's `last_ask`, per
   account), written as soon as a stream names its thread.

No analytics or telemetry request is ever sent.

Long because it is one run, in the order above: the checks, the plan, the send, the settling
by polling and the steps after completion share the request and result state; the stream
watcher and the live view are already apart (commands/ask/stream.py, commands/ask/view.py).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pplx_export.commands.ask.catalog import Catalog, read_cache, staleness_warning, summarize
from pplx_export.commands.ask.stream import ThreadFeed, WatchResult, watch
from pplx_export.commands.ask.view import AskView, duration, make_view
from pplx_export.commands.export.plan import parse_thread_ref
from pplx_export.commands.export.thread import Exporter
from pplx_export.context import RunOptions
from pplx_export.errors import (
    ApiError,
    ArchiveError,
    ConfigError,
    DiskFull,
    EntryDeleted,
    EntryExpired,
    Interrupted,
    NotFound,
    PermissionDenied,
    PplxError,
    RateLimited,
    SchemaError,
    ServerError,
    TransportError,
    UsageError,
)
from pplx_export.site import constants as C
from pplx_export.site.api import PerplexityAPI
from pplx_export.site.ask import (
    AskState,
    FollowUp,
    build_ask_body,
    context_uuid_of,
    follow_up_from,
    thread_mode,
    thread_url,
    turn_answer,
    turn_status,
)
from pplx_export.site.pacing import Clock
from pplx_export.site.session import open_session, runtime_for
from pplx_export.store.batch_state import BatchState
from pplx_export.store.docs import load_bytes, save_bytes
from pplx_export.store.lock import archive_lock
from pplx_export.util.lenient import as_dict, as_list, as_str

log = logging.getLogger("pplx_export.ask")

JSON = dict[str, Any]

COMPLETED = "COMPLETED"
# A just-created thread may answer 404 for a moment (protocol §2.12): fetch again after
# 2, 4, 8, 16 s (capped by [network] backoff_cap), then give up.
NOT_FOUND_DELAYS = (2.0, 4.0, 8.0, 16.0)
# A thread whose stream was lost is polled after 2, 3, 5, 8 s, then every 10 s.
POLL_FIRST_DELAYS = (2.0, 3.0, 5.0, 8.0)
POLL_EVERY_S = 10.0
HEARTBEAT_S = 1.0


@dataclass(frozen=True)
class AskRequest:
    prompt: str
    mode: str | None = None  # None: search, or the followed thread's mode
    models: tuple[str, ...] = ()
    space: str = ""  # slug of the space to create the thread in
    follow_up: str = ""  # URL or UUID of the thread to continue
    export: bool = True
    mark_read: bool = False
    timeout: float = C.ASK_TIMEOUT  # longest silence accepted from the stream
    poll_for: float = C.ASK_POLL_FOR  # how long a thread whose stream was lost is polled


@dataclass
class AskResult:
    """What the run did; `to_json()` is the `--json` document. `error` (not in the JSON) is
    what the command raises after printing, when the run did not succeed."""

    mode: str
    thread_uuid: str = ""
    thread_url: str = ""
    context_uuid: str = ""
    status: str = ""
    moved_to_space: str | None = None
    marked_read: bool = False
    archived_to: str | None = None
    step_errors: list[dict[str, str]] = field(default_factory=list)
    answer: str = ""
    follow_up: bool = False
    error: PplxError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> JSON:
        return {
            "thread_uuid": self.thread_uuid or None,
            "thread_url": self.thread_url or None,
            "context_uuid": self.context_uuid or None,
            "status": self.status or None,
            "mode": self.mode,
            "follow_up": self.follow_up,
            "moved_to_space": self.moved_to_space,
            "marked_read": self.marked_read,
            "archived_to": self.archived_to,
            "step_errors": self.step_errors,
            "answer": self.answer,
        }

    def step_failed(self, step: str, exc: BaseException | str, *, quiet: bool = False) -> None:
        reason = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
        self.step_errors.append({"step": step, "error": reason})
        if not quiet:
            log.warning("%s failed: %s", step, reason)


# -- step 1: input, before any request ---------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """The checked request: mode and models resolved, the followed thread's UUID parsed."""

    prompt: str
    mode: str | None
    model: str | None  # search: the one model id (None: the default)
    compare: tuple[str, ...]  # council: 2-3 model ids
    follow_up_uuid: str


def read_prompt(prompt: str, stdin_text: Callable[[], str]) -> str:
    """PROMPT `-` reads standard input (`cat question.md | pplx-ask ask -`)."""
    return stdin_text() if prompt == "-" else prompt


EDITOR_TEMPLATE = (
    "\n# Write your question above. Lines starting with '#' are ignored;\n"
    "# an empty question asks nothing.\n"
)


def prompt_from_editor(text: str | None) -> str:
    """What the editor left, without its '#' comment lines (as `git commit` does)."""
    lines = (text or "").splitlines()
    return "\n".join(line for line in lines if not line.startswith("#")).strip()


# -- the last thread this archive asked (`-c/--continue`) ---------------------------------------

# A state store document (`index/last_ask.json` before).
LAST_ASK_KEY = "last_ask"


def remember_thread(out: Path, account: str, uuid: str, when: datetime | None = None) -> None:
    """Note `uuid` as the last thread asked from this archive by `account` (best-effort)."""
    try:
        doc = as_dict(json.loads(load_bytes(out, LAST_ASK_KEY) or b"{}"))
    except (OSError, ValueError):
        doc = {}
    stamp = (when or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    doc[account] = {"thread_uuid": uuid, "asked_at": stamp}
    try:
        save_bytes(out, LAST_ASK_KEY, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    except OSError as exc:
        log.warning("could not note the thread for --continue (%s)", exc)


def last_thread(out: Path, account: str) -> str:
    """The UUID of the last thread this archive asked for `account`; UsageError when none."""
    try:
        doc = as_dict(json.loads(load_bytes(out, LAST_ASK_KEY) or b"{}"))
    except (OSError, ValueError):
        doc = {}
    uuid = as_str(as_dict(doc.get(account)).get("thread_uuid"))
    if not uuid:
        raise UsageError(
            f"-c/--continue: no thread was asked from the archive {out} yet "
            "(ask one first, or name it with --follow-up)"
        )
    return uuid


# -- model ids against the catalog ---------------------------------------------------------------


def known_model_ids(catalog: Catalog) -> set[str]:
    return set(catalog.labels) | set(catalog.council) | set(catalog.defaults.values())


def check_model_ids(ids: Sequence[str], catalog: Catalog) -> None:
    """UsageError (exit 2) naming the valid ids when one of `ids` is not in the catalog."""
    known = known_model_ids(catalog)
    unknown = [m for m in ids if m not in known]
    if unknown and catalog.labels:
        raise UsageError(
            f"unknown model id{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
            f"(valid: {', '.join(sorted(known))}; `pplx-ask models` lists them)"
        )


def _validate_models(opts: RunOptions, api: PerplexityAPI, ids: Sequence[str]) -> None:
    """`--models` against the cached catalog, else the live one; unchecked (with a warning)
    when neither can be read."""
    if not ids:
        return
    try:
        catalog = read_cache(opts.config.path)
    except ConfigError as exc:
        log.warning("%s", exc)
        catalog = None
    if catalog is None:
        try:
            catalog = summarize(api.models_config(), "live")
        except (ApiError, SchemaError) as exc:
            log.warning("the model catalog could not be read (%s); --models unchecked", exc)
            return
    check_model_ids(ids, catalog)


def configured_models(config_doc: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
    """`[models]` of the config (written by `pplx-ask models --refresh` / `init`): per-mode
    defaults and the council pool; empty when the section is missing or odd."""
    table = as_dict(config_doc.get("models"))
    defaults = {k: as_str(v) for k, v in as_dict(table.get("defaults")).items() if as_str(v)}
    council = [as_str(m) for m in as_list(table.get("council")) if as_str(m)]
    return defaults, council


def check_models(
    mode: str, models: Sequence[str], config_doc: Mapping[str, Any]
) -> tuple[str | None, tuple[str, ...]]:
    """(search model, council models) for `mode`; a count the mode cannot take is a
    UsageError (exit 2), raised before any request."""
    defaults, pool = configured_models(config_doc)
    ids = [m for m in models if m]
    if mode == "council":
        chosen = ids or pool[: C.COUNCIL_MODELS_MAX] or list(C.COUNCIL_DEFAULT_MODELS)
        if not C.COUNCIL_MODELS_MIN <= len(chosen) <= C.COUNCIL_MODELS_MAX:
            raise UsageError(
                f"council takes {C.COUNCIL_MODELS_MIN} or {C.COUNCIL_MODELS_MAX} model ids "
                f"(--models a,b[,c]), got {len(chosen)}"
            )
        return None, tuple(chosen)
    if mode == "search":
        if len(ids) > 1:
            raise UsageError(f"search takes one model id (--models ID), got {len(ids)}")
        return (ids[0] if ids else defaults.get("search") or None), ()
    if ids:
        raise UsageError(f"{mode} has no model choice; drop --models")
    return None, ()


def plan_ask(request: AskRequest, config_doc: Mapping[str, Any]) -> Plan:
    prompt = request.prompt.strip()
    if not prompt:
        raise UsageError("the prompt is empty (PROMPT, or - to read it from stdin)")
    if request.mode is not None and request.mode not in C.ASK_MODES:
        raise UsageError(f"unknown mode {request.mode!r} (known: {', '.join(C.ASK_MODES)})")
    follow_uuid = parse_thread_ref(request.follow_up)[0] if request.follow_up else ""
    model: str | None = None
    compare: tuple[str, ...] = ()
    mode = request.mode or (None if follow_uuid else "search")
    if mode is not None:
        model, compare = check_models(mode, request.models, config_doc)
    return Plan(prompt, mode, model, compare, follow_uuid)


# -- step 2: what the request needs from the server ---------------------------------------------


def _followed_thread(api: PerplexityAPI, uuid: str) -> JSON:
    """The thread a follow-up continues, fetched; a clear error when it cannot be."""
    what = f"cannot continue thread {uuid}"
    try:
        return api.thread(uuid)
    except PermissionDenied as exc:
        raise PermissionDenied(
            f"{what}: this account may not read it ({exc.code or exc.reason})",
            status=exc.status,
            code=exc.code,
        ) from None
    except EntryDeleted:
        raise EntryDeleted(f"{what}: it was deleted on Perplexity") from None
    except EntryExpired:
        raise EntryExpired(f"{what}: Perplexity purged it (expired)") from None
    except NotFound:
        raise NotFound(f"{what}: no such thread on this account") from None


def _space_uuid(api: PerplexityAPI, slug: str, what: str) -> str:
    """The UUID of the space `slug`; UsageError (exit 2) when this account has no such space."""
    try:
        space = api.get_collection(slug)
    except (NotFound, PermissionDenied) as exc:
        raise UsageError(f"{what} {slug!r}: no such space on this account ({exc.reason})") from None
    uuid = as_str(space.get("uuid"))
    if not uuid:
        raise UsageError(f"{what} {slug!r}: the space has no uuid in its answer")
    return uuid


# -- step 4: after completion -------------------------------------------------------------------


T = TypeVar("T")


def retry_not_found(
    call: Callable[[], T], uuid: str, sleep: Callable[[float], None], cap: float
) -> T:
    """`call()`, again after growing pauses while it raises NotFound: a just-created thread
    may answer 404 for a moment (protocol §2.12). The last NotFound propagates."""
    for delay in (*NOT_FOUND_DELAYS, None):
        try:
            return call()
        except NotFound:
            if delay is None:
                raise
            log.info("thread %s is not fetchable yet (404); trying again", uuid)
            sleep(min(delay, cap))
    raise AssertionError("unreachable")  # pragma: no cover


def archive_thread(
    opts: RunOptions, api: PerplexityAPI, uuid: str, sleep: Callable[[float], None]
) -> Path:
    """Export the thread through the normal pipeline (lock, state, Exporter)."""
    with archive_lock(opts.out, opts.held_locks):
        exporter = Exporter.for_run(opts, api, BatchState.load(opts.out))
        cap = opts.config.network.backoff_cap
        directory = retry_not_found(lambda: exporter.export(uuid), uuid, sleep, cap)
        return directory


def _archived_answer(directory: Path, backend_uuid: str) -> str:
    """The turn's answer as archived (raw_entries.json): the settled text, not the stream's."""
    try:
        plain = json.loads((directory / "raw_entries.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return turn_answer(as_dict(plain), backend_uuid)


def _bot_space(opts: RunOptions, api: PerplexityAPI) -> tuple[str, str]:
    """(uuid, name) of the configured BOT space, ("", "") when none is configured."""
    cfg = opts.config
    if cfg.bot_space_uuid:
        return cfg.bot_space_uuid, cfg.bot_space_slug or cfg.bot_space_uuid
    if cfg.bot_space_slug:
        return _space_uuid(api, cfg.bot_space_slug, "[bot_space] slug"), cfg.bot_space_slug
    return "", ""


def _after_completion(
    opts: RunOptions,
    api: PerplexityAPI,
    request: AskRequest,
    result: AskResult,
    backend_uuid: str,
    sleep: Callable[[float], None],
) -> None:
    cfg = opts.config
    move = (
        not result.follow_up
        and not request.space
        and bool(cfg.bot_space_uuid or cfg.bot_space_slug)
    )
    if not result.context_uuid:
        # Moves and read receipts go by context UUID; without one, say so rather than guess.
        for step, wanted in (("move", move), ("mark_read", request.mark_read)):
            if wanted:
                result.step_failed(step, "the stream gave no context_uuid")
    elif move:
        try:
            space_uuid, name = _bot_space(opts, api)
            if space_uuid:
                api.move_to_space(result.context_uuid, space_uuid)
                result.moved_to_space = name
                log.info("moved into the space %s", name)
        except (ApiError, SchemaError, UsageError) as exc:
            result.step_failed("move", exc)
    if request.mark_read and result.context_uuid:
        try:
            api.mark_viewed([result.context_uuid])
            result.marked_read = True
        except (ApiError, SchemaError) as exc:
            result.step_failed("mark_read", exc)
    if not request.export:
        return
    try:
        directory = archive_thread(opts, api, result.thread_uuid, sleep)
    except (ApiError, SchemaError, ArchiveError, OSError) as exc:
        shown: BaseException = DiskFull.of(exc) or exc
        result.step_failed("archive", shown)
        result.error = PplxError(
            f"the thread completed but could not be archived ({shown}); "
            f"retry with: pplx-export export {result.thread_url}"
        )
        return
    result.archived_to = str(directory)
    result.answer = _archived_answer(directory, backend_uuid) or result.answer
    log.info("archived to %s", directory)


# -- the run ------------------------------------------------------------------------------------


RUNNING = ("", "PENDING", "IN_PROGRESS", "RUNNING", "QUEUED")


@dataclass(frozen=True)
class Polling:
    """How a thread whose stream was lost is polled: every `every` seconds (the first polls
    sooner, all capped by [network] backoff_cap), for at most `limit` seconds in all."""

    limit: float = C.ASK_POLL_FOR
    every: float = POLL_EVERY_S

    @property
    def polls(self) -> int:
        return 1 + int(self.limit // self.every) if self.limit > 0 else 1

    def delay(self, attempt: int, cap: float) -> float:
        return min(
            POLL_FIRST_DELAYS[attempt] if attempt < len(POLL_FIRST_DELAYS) else self.every, cap
        )


def _poll_until_settled(
    api: PerplexityAPI,
    watched: WatchResult,
    result: AskResult,
    view: AskView,
    clock: Clock,
    polling: Polling,
    cap: float,
) -> bool:
    """The stream broke, went quiet past --timeout, or ended while the turn was still
    running: poll the thread (bounded, paced, the view says so) until the turn is settled.
    True when it completed (the post-completion steps then run as usual)."""
    state = watched.state
    reason = watched.stream_error or f"the stream ended with the turn still {state.status}"
    if not state.backend_uuid:
        if isinstance(watched.error, ApiError) and not state.events:
            # The ask itself was refused (401, 429, 5xx, ...): that error, with its exit code.
            # It is not retried: a retry could start a second thread.
            result.error = watched.error
        else:
            result.error = PplxError(f"{reason}, before the thread was created; nothing to archive")
        return False
    later = f"archive it when it finishes with: pplx-export export {result.thread_url}"
    started = clock.monotonic()
    status = ""
    plain: JSON = {}
    for attempt in range(polling.polls):
        if attempt:
            seen = status or "not found yet"
            note = f"stream lost · polling the thread ({seen}, #{attempt + 1})"
            view.polling(state, watched.elapsed + clock.monotonic() - started, note)
            clock.sleep(polling.delay(attempt - 1, cap))
        else:
            view.polling(state, watched.elapsed, f"{reason}; polling the thread")
        try:
            plain = api.thread(result.thread_uuid)
        except NotFound:
            status = ""  # a just-created thread may 404 for a moment
            continue
        except (ApiError, SchemaError) as exc:
            if isinstance(exc, (RateLimited, ServerError, TransportError)):
                continue  # the client retried already; the next poll may get through
            result.error = PplxError(
                f"{reason}, and the thread could not be fetched ({exc}): {result.thread_url}; "
                + later
            )
            return False
        status = turn_status(plain, state.backend_uuid)
        if status not in RUNNING:
            break
        if clock.monotonic() - started >= polling.limit:
            break
    result.status = status or "UNKNOWN"
    if status != COMPLETED:
        if status in RUNNING:
            waited = duration(clock.monotonic() - started)
            result.error = PplxError(
                f"{reason}; the thread is still {result.status} on Perplexity after "
                f"{waited} of polling: {result.thread_url}; {later}"
            )
        else:
            result.error = PplxError(
                f"{reason}; the thread ended with status {status} on Perplexity; "
                f"nothing was moved or archived: {result.thread_url}"
            )
        return False
    result.step_failed("stream", reason, quiet=True)  # said by the view
    result.answer = turn_answer(plain, state.backend_uuid) or state.answer
    state.status, state.answer = COMPLETED, result.answer
    view.update(state, watched.elapsed + clock.monotonic() - started)
    result.context_uuid = result.context_uuid or context_uuid_of(plain)
    return True


def run_ask(
    opts: RunOptions,
    request: AskRequest,
    *,
    api: PerplexityAPI | None = None,
    view: AskView | None = None,
    heartbeat: float = HEARTBEAT_S,
    on_thread: Callable[[str], None] | None = None,
) -> AskResult:
    """Ask, watch, and on completion move / mark read / archive; see the module doc.
    `on_thread(uuid)` is told the thread's UUID as soon as the stream is over."""
    plan = plan_ask(request, opts.config.doc)
    stale = staleness_warning(opts.config, datetime.now(UTC))
    if stale:
        log.warning("%s", stale)
    own = api is None
    api = api or open_session(opts)
    clock = runtime_for(opts).clock
    try:
        return _run(opts, request, plan, api, view, heartbeat, clock, on_thread)
    finally:
        if own:
            api.close()


def _run(
    opts: RunOptions,
    request: AskRequest,
    plan: Plan,
    api: PerplexityAPI,
    view: AskView | None,
    heartbeat: float,
    clock: Clock,
    on_thread: Callable[[str], None] | None,
) -> AskResult:
    sleep = clock.sleep
    mode, model, compare = plan.mode, plan.model, plan.compare
    follow: FollowUp | None = None
    context_uuid = ""
    if plan.follow_up_uuid:
        followed = _followed_thread(api, plan.follow_up_uuid)
        follow = follow_up_from(followed)
        if follow is None:
            raise SchemaError("the thread has no turn to follow up", thread=plan.follow_up_uuid)
        context_uuid = context_uuid_of(followed)
        if mode is None:
            found = thread_mode(followed)
            mode = found if found in C.ASK_MODES else "search"
            model, compare = check_models(mode, request.models, opts.config.doc)
    assert mode is not None
    _validate_models(opts, api, request.models)
    space_uuid = _space_uuid(api, request.space, "--space") if request.space else ""
    body = build_ask_body(
        plan.prompt,
        mode=mode,
        model=model,
        compare_models=compare,
        follow_up=follow,
        target_collection_uuid=space_uuid,
    )
    result = AskResult(mode=mode, follow_up=follow is not None)
    result.thread_uuid = plan.follow_up_uuid
    if result.thread_uuid:
        result.thread_url = thread_url(opts.base_url, result.thread_uuid)
    view = view or make_view(opts.base_url, mode, quiet=opts.quiet)
    # A follow-up's events name the new turn (backend_uuid), not always the thread.
    state = AskState(thread_uuid=plan.follow_up_uuid)
    cap = opts.config.network.backoff_cap
    try:
        with view:
            # The read timeout is a backstop: the watcher ends a silence at `timeout` itself.
            feed = ThreadFeed(api.ask(body, timeout=request.timeout + 5))
            watched = watch(
                feed, view, clock, state=state, heartbeat=heartbeat, timeout=request.timeout
            )
            result.thread_uuid = result.thread_uuid or state.thread_uuid
            if result.thread_uuid:
                result.thread_url = thread_url(opts.base_url, result.thread_uuid)
            result.context_uuid = state.context_uuid or context_uuid
            result.status = state.status
            result.answer = state.answer
            if result.thread_uuid and on_thread is not None:
                on_thread(result.thread_uuid)
            lost = bool(watched.stream_error) or state.status in RUNNING
            if lost:
                polling = Polling(limit=request.poll_for)
                if not _poll_until_settled(api, watched, result, view, clock, polling, cap):
                    return result
    except KeyboardInterrupt:
        uuid = result.thread_uuid or state.thread_uuid
        raise Interrupted(_interrupted_message(opts.base_url, uuid)) from None
    if lost:
        log.info("the thread completed on Perplexity")
    if not lost and state.status != COMPLETED:
        detail = ": ".join(p for p in (state.error_code, state.message) if p)
        result.error = PplxError(
            f"the thread ended with status {state.status or 'unknown'}"
            + (f" ({detail})" if detail else "")
            + f"; nothing was moved or archived: {result.thread_url}"
        )
        return result
    _after_completion(opts, api, request, result, state.backend_uuid, sleep)
    return result


def _interrupted_message(base_url: str, uuid: str) -> str:
    if not uuid:
        return "stopped watching before the thread was created"
    url = thread_url(base_url, uuid)
    return (
        f"stopped watching; the thread goes on at {url}; "
        f"archive it when it finishes with: pplx-export export {url}"
    )
