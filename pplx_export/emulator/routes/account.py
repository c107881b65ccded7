"""Session probe, model catalog, credit usage, read receipts (protocol §1.3, §2.5, §2.9, §2.10)."""

from __future__ import annotations

import hashlib

from pplx_export.emulator.accounts import user_id
from pplx_export.emulator.http import JSON, Request, Response, error, json_response
from pplx_export.util.lenient import as_list, as_str


def session(req: Request) -> Response:
    email, name = req.identity
    username = email.split("@", 1)[0]
    if email == req.app.config.email:
        username = req.app.config.username
    return json_response(
        200,
        {
            "user": {
                "name": name,
                "email": email,
                "image": None,
                "id": user_id(email),
                "username": username,
            },
            "expires": "2099-01-01T00:00:00.000Z",
        },
    )


# The catalog's models: (id, label, mode, provider).
_MODELS = (
    ("pplx_pro", "Best", "search", "perplexity"),
    ("experimental", "Sonar 2", "search", "perplexity"),
    ("pplx_alpha", "Deep Research", "research", "perplexity"),
    ("pplx_agentic_research", "Model Council", "agentic_research", "perplexity"),
    ("pplx_study", "Study", "study", "perplexity"),
    ("pplx_asi", "Computer", "asi", "perplexity"),
    ("gpt56_sol_thinking", "GPT-5.6 Thinking", "search", "openai"),
    ("claude50opusthinking", "Claude Opus 5.0 Thinking", "search", "anthropic"),
    ("gemini31pro_high", "Gemini 3.1 Pro", "search", "google"),
)
MODELS_CONFIG: JSON = {
    "models": {
        model: {"label": label, "mode": mode, "provider": provider}
        for model, label, mode, provider in _MODELS
    },
    "default_models": {
        "search": "pplx_pro",
        "research": "pplx_alpha",
        "agentic_research": "pplx_agentic_research",
        "study": "pplx_study",
        "asi": "pplx_asi",
    },
    "agentic_research_compare_models": [
        "gpt56_sol_thinking",
        "claude50opusthinking",
        "gemini31pro_high",
    ],
    "search_config": [],
    "computer_config": [],
}


def models_config(req: Request) -> Response:
    return json_response(200, MODELS_CONFIG)


def thread_usage(req: Request) -> Response:
    context_uuid = req.arg("thread_id")
    if not context_uuid or not req.app.library.by_context(context_uuid):
        return error(403, "thread_usage_forbidden", "Thread does not belong to the current user")
    cents = int(hashlib.sha256(context_uuid.encode()).hexdigest()[:6], 16) % 50000 / 100
    return json_response(
        200,
        {"usage_cents": cents, "meter_usage": [{"meter_type": "token_usage", "cost_cents": cents}]},
    )


def mark_viewed(req: Request) -> Response:
    ids = [as_str(v) for v in as_list(req.json().get("context_uuids"))]
    if not ids:
        return error(400, "INVALID_REQUEST", "no context_uuids")
    req.app.mark_viewed(ids)
    return json_response(200, {"status": "success"})
