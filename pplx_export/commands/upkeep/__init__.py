"""Upkeep: accounts, deleted threads, credit usage, asset backfill, search mode, auto-commit
and notifications."""
