"""Perplexity's web site as the client sees it: the HTTP client (pacing, retries, error
mapping), cookies, the SSE reader and the typed API calls."""
