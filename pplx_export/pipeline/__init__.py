"""The pipeline every command shares: raw API responses to a Conversation to files, the
after-write step (render fingerprint, search rows, relation facts) and the one loader of an
archived thread."""
