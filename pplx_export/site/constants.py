"""Endpoint constants of Perplexity's private web API (protocol.md §1, §2, Appendix B)."""

from __future__ import annotations

API_VERSION = "2.18"  # pinned: bump together with the parser/renderer
STD_QUERY: tuple[tuple[str, str], ...] = (("version", API_VERSION), ("source", "default"))

# -- paths ------------------------------------------------------------------------------------
SESSION_PATH = "/api/auth/session"
GRAPHQL_PATH = "/rest/perplexity_ask/graphql"  # no query string (as the web app sends it)
LIST_ASK_THREADS_PATH = "/rest/thread/list_ask_threads"
THREAD_PATH = "/rest/thread/{uuid}"
MARK_VIEWED_PATH = "/rest/thread/mark_viewed"
GET_COLLECTION_PATH = "/rest/collections/get_collection"
LIST_COLLECTION_THREADS_PATH = "/rest/collections/list_collection_threads"
LIST_USER_COLLECTIONS_PATH = "/rest/collections/list_user_collections"
CREATE_COLLECTION_PATH = "/rest/collections/create_collection"
BATCH_MOVE_THREADS_PATH = "/rest/collections/batch_move_threads"
UPSERT_THREAD_COLLECTION_PATH = "/rest/collections/upsert_thread_collection"
ASSET_DATA_PATH = "/rest/assets/{uuid}/data"
MODELS_CONFIG_PATH = "/rest/models/config/v2"
THREAD_USAGE_PATH = "/rest/billing/credits/thread-usage"
ASK_PATH = "/rest/sse/perplexity_ask"

# -- GraphQL persisted queries (APQ) ----------------------------------------------------------
GQL_FIRST_PAGE_OP = "LibraryThreadsRelayQuery"
GQL_FIRST_PAGE_HASH = "a5229c390a6a00f81764187a21885cff655670029355c663fe393cc6e98f9ebe"
GQL_NEXT_PAGE_OP = "LibraryRecentThreadsPaginationQuery"
GQL_NEXT_PAGE_HASH = "4f6dfcb8e9d3c065aca20ca1e82ca7fe464aaffc1faefade295bb7e333199629"
GQL_BASE_VARIABLES: dict[str, object] = {
    "includeSearchPreview": False,
    "searchTerm": None,
    "sortOrder": "NEWEST",
    "statuses": None,
    "threadTypes": None,
    "sources": None,
    "includeTemporary": None,
}

# The web UI's list_collection_threads flags (§9.5), sent explicitly: the server's defaults
# are unknown and may leave out other members' threads.
COLLECTION_THREAD_FLAGS: tuple[tuple[str, str], ...] = (
    ("limit", "20"),
    ("filter_by_user", "false"),
    ("filter_by_shared_threads", "false"),
    ("include_user_and_shared_threads", "true"),
    ("include_assets", "true"),
    ("include_articles", "true"),
)

# -- page sizes and limits --------------------------------------------------------------------
LIBRARY_PAGE_SIZE = 25  # GraphQL `count`; no page cap (loop guard)
REST_LIBRARY_PAGE_SIZE = 20  # REST `limit`, as the web UI sends it (protocol.md §9.3)
USER_COLLECTIONS_PAGE_SIZE = 30  # list_user_collections `limit` (§9.5)
COLLECTION_PAGE_SIZE = 20  # server-side; offset paging
# Thread pages are followed to the end of the cursor chain. This cap only stops a server that
# never ends its pagination with fresh cursors (a repeated cursor is caught at once); a thread
# that reaches it fails loudly rather than being archived short.
THREAD_PAGE_SAFETY_CAP = 10_000
SCHEMATIZED_LIMIT = 100

# -- timeouts (seconds) -----------------------------------------------------------------------
SESSION_TIMEOUT = 20.0
META_TIMEOUT = 30.0
ASK_TIMEOUT = 600.0
# How long `pplx-ask` polls a thread whose stream broke, stalled or ended unfinished.
ASK_POLL_FOR = 1800.0

# -- pacing: multiples of [network] min_interval (3 s by default) ------------------------------
BLOCKS_PACE_SCALE = 4.0 / 3.0  # 4 s before the schematized fetch

# The ask call's superset, in order (protocol §2.12).
ASK_BLOCK_USE_CASES: tuple[str, ...] = (
    "answer_modes",
    "media_items",
    "knowledge_cards",
    "inline_entity_cards",
    "place_widgets",
    "finance_widgets",
    "sports_widgets",
    "news_widgets",
    "shopping_widgets",
    "jobs_widgets",
    "search_result_widgets",
    "inline_images",
    "inline_assets",
    "placeholder_cards",
    "diff_blocks",
    "inline_knowledge_cards",
    "entity_group_v2",
    "refinement_filters",
    "canvas_mode",
    "maps_preview",
    "answer_tabs",
    "price_comparison_widgets",
    "preserve_latex",
    "generic_onboarding_widgets",
    "in_context_suggestions",
    "pending_followups",
    "inline_claims",
    "unified_assets",
    "workflow_steps",
    "workflow_widgets",
    "navigation_results",
    "background_agents",
)

# The schematized thread call's use cases as the earlier tool sent them (protocol §2.4).
EARLIER_SCHEMATIZED_BLOCK_USE_CASES: tuple[str, ...] = (
    "workflow_steps",
    "unified_assets",
    "asset_diff_assets",
    "write_delta",
    "bash_delta",
    "run_subagent_delta",
    "background_agents",
    "markdown",
)

# Repeated `supported_block_use_cases` of the schematized thread call: the ask call's list,
# then the earlier tool's use cases it lacks, each once, in that order (37). The browser
# sends 28-29 here, and the earlier 8 may hide blocks from deep
# research and study threads (§9.7): a use case we do not list is a block we never see.
SCHEMATIZED_BLOCK_USE_CASES: tuple[str, ...] = tuple(
    dict.fromkeys(ASK_BLOCK_USE_CASES + EARLIER_SCHEMATIZED_BLOCK_USE_CASES)
)

# model_preference per CLI mode for the ask call; council also sends 2-3 compare models.
ASK_MODEL_PREFERENCE = {
    "search": "pplx_pro",
    "deep-research": "pplx_alpha",
    "council": "pplx_agentic_research",
    "study": "pplx_study",
}
COUNCIL_MODELS_MIN = 2
COUNCIL_MODELS_MAX = 3
# Pinned council pool (protocol §2.9) for when the config's [models] names none; it drifts.
COUNCIL_DEFAULT_MODELS: tuple[str, ...] = (
    "gpt56_sol_thinking",
    "claude50opusthinking",
    "gemini31pro_high",
)
ASK_MODES: tuple[str, ...] = tuple(ASK_MODEL_PREFERENCE)
