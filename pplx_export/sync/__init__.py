"""Orchestration: index, plan, batch, re-render, verify, status, and the other commands' work."""
