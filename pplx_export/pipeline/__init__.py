"""The pipeline every command shares: raw API responses to a Conversation to files, and the
after-write step (render fingerprint, search rows, relation facts), plus what several
command families compute from the archive (assets, relations, space catalog, auto-commit)."""
