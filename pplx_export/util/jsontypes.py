"""`JSON`, the type of a decoded JSON object, in a module of its own.

Here rather than in models.py (which re-exports it): the modules of a no-op
`re-render --changed-only` (render state, the command, its outcome) name it, and importing
the data model's fifty dataclasses for one alias would cost that run more than its work.
"""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]
