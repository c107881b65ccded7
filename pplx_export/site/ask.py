"""The SSE ask request: body envelopes and a stream summary (protocol.md §2.12).

`build_ask_body` is pure (UUIDs come from an injectable factory); `AskState` folds the event
stream into what a caller needs (thread UUID, entry UUID, status, the answer and the sources
count so far, assembled from diff blocks or chunk deltas by site/stream.py). The archive
does not keep the stream's content: after completion the thread is re-fetched.
`follow_up_from` and `turn_status` read a fetched thread (a follow-up's token comes from
there, never from disk, where raw files hold it redacted).
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pplx_export.errors import UsageError
from pplx_export.parse.answer_forms import extract_answer
from pplx_export.parse.mode_tables import SEARCH_MODE_MAP
from pplx_export.parse.steps import decode_steps
from pplx_export.site import constants as C
from pplx_export.site.client import ApiClient
from pplx_export.site.sse import read_until_final
from pplx_export.site.stream import StreamAssembler
from pplx_export.util.lenient import as_dict, as_list, as_str, decode_json, dicts
from pplx_export.util.threadref import slug_uuid

JSON = dict[str, Any]


@dataclass(frozen=True)
class FollowUp:
    """Continue an existing thread: its newest `backend_uuid` and its `read_write_token`."""

    last_backend_uuid: str
    read_write_token: str

    def __repr__(self) -> str:  # the token is a write credential
        return f"FollowUp(last_backend_uuid={self.last_backend_uuid!r})"


def model_preference(mode: str, model: str | None = None) -> str:
    if mode == "search" and model:
        return model
    try:
        return C.ASK_MODEL_PREFERENCE[mode]
    except KeyError:
        known = ", ".join(C.ASK_MODEL_PREFERENCE)
        raise UsageError(f"cannot ask in mode {mode!r} (known: {known})") from None


def build_ask_body(
    query: str,
    *,
    mode: str = "search",
    model: str | None = None,
    compare_models: Sequence[str] = (),
    follow_up: FollowUp | None = None,
    target_collection_uuid: str = "",
    language: str = "en-US",
    timezone: str = "UTC",
    new_uuid: Callable[[], str] = lambda: str(uuidlib.uuid4()),
) -> JSON:
    """The `{"params": ..., "query_str": ...}` envelope for a new thread or a follow-up."""
    params: JSON = {
        "attachments": [],
        "language": language,
        "timezone": timezone,
        "search_focus": "internet",
        "sources": ["web"],
        "frontend_uuid": new_uuid(),
        "mode": "copilot",  # always; the mode lives in model_preference
        "model_preference": model_preference(mode, model),
        "is_related_query": False,
        "is_sponsored": False,
        "prompt_source": "user",
        "query_source": "followup" if follow_up else "home",
        "is_incognito": False,
        "time_from_first_type": 0.0,
        "local_search_enabled": False,
        "use_schematized_api": True,
        "send_back_text_in_streaming_api": False,
        "supported_block_use_cases": list(C.ASK_BLOCK_USE_CASES),
        "client_coordinates": None,
        "mentions": [],
        "skip_search_enabled": True,
        "is_nav_suggestions_disabled": False,
        "source": "default",
        "always_search_override": False,
        "override_no_search": False,
        "should_ask_for_mcp_tool_confirmation": True,
        "supports_tool_approval_modal": True,
        "force_enable_browser_agent": False,
        "supported_features": ["browser_agent_permission_banner_v1.1"],
        "version": C.API_VERSION,
    }
    if follow_up:
        params["last_backend_uuid"] = follow_up.last_backend_uuid
        params["read_write_token"] = follow_up.read_write_token
        params["followup_source"] = "link"
    else:
        params["frontend_context_uuid"] = new_uuid()
    if mode == "council":
        models = list(compare_models)
        if not C.COUNCIL_MODELS_MIN <= len(models) <= C.COUNCIL_MODELS_MAX:
            raise UsageError(
                f"council takes {C.COUNCIL_MODELS_MIN}-{C.COUNCIL_MODELS_MAX} models, "
                f"got {len(models)}"
            )
        params["compare_model_preferences"] = models[: C.COUNCIL_MODELS_MAX]
    if target_collection_uuid:
        params["target_collection_uuid"] = target_collection_uuid
        params["target_thread_access_level"] = 1
    return {"params": params, "query_str": query}


@dataclass
class AskState:
    """What the stream has told us so far. `completed` is the success test.

    `backend_uuid` is the turn's id; `thread_uuid` the thread's (`thread_url_slug` when the
    event has it: a follow-up's backend_uuid is a new turn id, not the thread's).
    """

    backend_uuid: str = ""
    thread_uuid: str = ""
    entry_uuid: str = ""
    context_uuid: str = ""
    frontend_context_uuid: str = ""
    status: str = ""
    text: Any = None  # the raw `text` field (grows; progress only)
    answer: str = ""  # the answer so far, as a browser would show it
    sources: int = 0  # web results so far
    error_code: str = ""
    message: str = ""
    final: bool = False
    events: int = 0
    assembler: StreamAssembler = field(default_factory=StreamAssembler, repr=False)

    def update(self, event: JSON) -> None:
        self.events += 1
        for attr, key in (
            ("backend_uuid", "backend_uuid"),
            ("entry_uuid", "uuid"),
            ("context_uuid", "context_uuid"),
            ("frontend_context_uuid", "frontend_context_uuid"),
            ("status", "status"),
            ("error_code", "error_code"),
            ("message", "message"),
        ):
            value = event.get(key)
            if isinstance(value, str) and value:
                setattr(self, attr, value)
        slug = as_str(event.get("thread_url_slug"))
        if slug:
            # A follow-up of a thread made before 2026 carries its title slug (§9.4).
            self.thread_uuid = slug_uuid(slug) or slug
        elif not self.thread_uuid and self.backend_uuid:
            self.thread_uuid = self.backend_uuid  # a new thread's first turn id is the thread's
        if "text" in event:
            self.text = event["text"]
        self.assembler.feed(event)
        # Blocks (diffs, deltas, FULL) first; a `text` answer for streams that carry one.
        answer = self.assembler.answer() or answer_so_far(event)
        self.sources = max(self.sources, self.assembler.sources())
        if self.assembler.full:
            self.sources = self.assembler.sources() or self.sources
        if answer:
            self.answer = answer
        if event.get("final_sse_message"):
            self.final = True

    @property
    def completed(self) -> bool:
        """The stream ended with a final event and the last status seen is COMPLETED."""
        return self.final and self.status == "COMPLETED"


def ask_events(client: ApiClient, body: JSON, *, timeout: float = C.ASK_TIMEOUT) -> Iterator[JSON]:
    """Send the ask request and yield its events up to (and including) the final one."""
    with client.stream("POST", C.ASK_PATH, body=body, timeout=timeout) as chunks:
        yield from read_until_final(chunks)


def answer_so_far(event: JSON) -> str:
    """The answer text an event carries, "" when it carries none.

    Schematized events hold it in an `ask_text*` markdown block (`answer`, else the joined
    `chunks`); otherwise `text` is either the answer itself or, as in a thread fetch, the
    JSON step list whose FINAL step holds it.
    """
    for block in dicts(event.get("blocks")):
        if not as_str(block.get("intended_usage")).startswith("ask_text"):
            continue
        markdown = as_dict(block.get("markdown_block"))
        answer = as_str(markdown.get("answer")) or "".join(
            as_str(c) for c in as_list(markdown.get("chunks"))
        )
        if answer:
            return answer
    text = event.get("text")
    if not isinstance(text, str) or not text.strip():
        return ""
    if text.lstrip().startswith("[") and isinstance(decode_json(text), list):
        return extract_answer(event, decode_steps(text))
    return text


def thread_url(base_url: str, thread_uuid: str) -> str:
    """The thread's web address (`https://www.perplexity.ai/search/<uuid>`)."""
    return f"{base_url.rstrip('/')}/search/{thread_uuid}"


def follow_up_from(plain: JSON) -> FollowUp | None:
    """The continuation of a fetched thread: its newest turn's `backend_uuid` and the thread's
    `read_write_token` (the newest one an entry carries). None when no turn has an id."""
    entries = dicts(plain.get("entries"))
    backend = next(
        (as_str(e.get("backend_uuid")) for e in reversed(entries) if e.get("backend_uuid")), ""
    )
    if not backend:
        return None
    token = next(
        (as_str(e.get("read_write_token")) for e in reversed(entries) if e.get("read_write_token")),
        "",
    )
    return FollowUp(last_backend_uuid=backend, read_write_token=token)


def thread_mode(plain: JSON) -> str:
    """The CLI mode of a fetched thread's newest turn (its `search_mode`), "" if unknown."""
    for entry in reversed(dicts(plain.get("entries"))):
        mode = SEARCH_MODE_MAP.get(as_str(entry.get("search_mode")).upper(), "")
        if mode:
            return mode
    return ""


def context_uuid_of(plain: JSON) -> str:
    """The thread's `context_uuid` (the same on every entry), "" if none carries it."""
    return next(
        (
            as_str(e.get("context_uuid"))
            for e in dicts(plain.get("entries"))
            if e.get("context_uuid")
        ),
        "",
    )


def turn_status(plain: JSON, backend_uuid: str) -> str:
    """The stored status of the turn `backend_uuid` (upper-cased), "" when it is not there."""
    for entry in dicts(plain.get("entries")):
        if as_str(entry.get("backend_uuid")) == backend_uuid:
            return as_str(entry.get("status")).upper()
    return ""


def turn_answer(plain: JSON, backend_uuid: str) -> str:
    """The answer of the turn `backend_uuid` in a fetched (or archived) plain thread."""
    for entry in dicts(plain.get("entries")):
        if as_str(entry.get("backend_uuid")) == backend_uuid:
            return extract_answer(entry, decode_steps(entry.get("text")))
    return ""
