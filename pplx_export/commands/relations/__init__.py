"""Relations: the links between threads (follow-ups, shared sources, spaces) and their pages."""
