"""RENDERER_VERSION alone: `re-render --changed-only` compares it for every thread before it
knows whether anything needs rendering, and importing the renderer just to read it would
cost a no-op run more than the run itself.
"""

# Bump whenever rendered bytes change for the same input: the re-render fingerprint uses it.
RENDERER_VERSION = "9"  # 9: fewer repeated facts; a plain council model's [n] linked
