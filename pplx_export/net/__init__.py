"""Network layer: HTTP client (pacing, retries, error mapping), cookies, SSE reader."""

# Here, not in net/client.py: the run context (context.py) needs it, and importing the client
# imports httpx, which an offline command (re-render, status) never uses.
DEFAULT_BASE_URL = "https://www.perplexity.ai"
