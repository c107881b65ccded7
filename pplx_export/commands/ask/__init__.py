"""pplx-ask: start a thread or a follow-up, show it live, archive it when it finishes."""
