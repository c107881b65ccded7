"""Network layer: HTTP client (pacing, retries, error mapping), cookies, SSE reader."""
