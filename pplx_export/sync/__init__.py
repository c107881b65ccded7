"""Orchestration: index, plan, batch, re-render, verify and the other long runs."""
