"""Orchestration: index, plan, batch, re-render, status, and the other long runs."""
