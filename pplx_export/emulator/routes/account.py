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


MODELS_CONFIG: JSON = {
    "models": {
        "pplx_pro": {"label": "Best", "mode": "search", "provider": "perplexity"},
        "experimental": {"label": "Sonar 2", "mode": "search", "provider": "perplexity"},
        "pplx_alpha": {"label": "Deep Research", "mode": "research", "provider": "perplexity"},
        "pplx_agentic_research": {
            "label": "Model Council",
            "mode": "agentic_research",
            "provider": "perplexity",
        },
        "pplx_study": {"label": "Study", "mode": "study", "provider": "perplexity"},
        "pplx_asi": {"label": "Computer", "mode": "asi", "provider": "perplexity"},
        "gpt56_sol_thinking": {"label": "GPT-5.6 Thinking", "mode": "search", "provider": "openai"},
        "claude50opusthinking": {
            "label": "Claude Opus 5.0 Thinking",
            "mode": "search",
            "provider": "anthropic",
        },
        "gemini31pro_high": {"label": "Gemini 3.1 Pro", "mode": "search", "provider": "google"},
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
