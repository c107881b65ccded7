"""Helpers every layer may use: lenient access to raw JSON, JSON text, atomic writes, UTC times.

Nothing here imports anything else of the package, so any module can depend on it.
"""
