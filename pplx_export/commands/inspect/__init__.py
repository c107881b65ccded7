"""Inspect: status, verify, search and the redacted capture for bug reports."""
