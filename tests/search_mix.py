"""The query mix the search-plan tests compare: (query, search() keyword arguments), with
the filters, operators and scopes that change a query plan."""

from __future__ import annotations

from typing import Any

from pplx_export.search.query import Filters, Hit

MIX: list[tuple[str, dict[str, Any]]] = [
    ("the", {}),
    ("the NOT basil", {}),
    ("heat pump", {}),
    ("heat NOT pump", {}),
    ("heat NOT basil", {}),
    ("reference OR basil", {}),
    ("ref*", {}),
    ('"heat pump"', {}),
    ("NEAR(rust lifetime, 5)", {}),
    ("(the NOT basil) OR heat", {}),
    ("the", {"filters": Filters(mode="computer")}),
    ("the OR input", {"filters": Filters(mode="council")}),
    ("the", {"scope": "sources"}),
    ("com", {"scope": "sources"}),
    ("input", {"scope": "work"}),
    ("the NOT three", {"scope": "answer"}),
    ("the", {"filters": Filters(since="2031-06-01")}),
    ("the", {"filters": Filters(until="2031-05-10", mode="search")}),
    ("the", {"filters": Filters(space="home-lab-p2x7")}),
    ("the", {"filters": Filters(accounts=("tomas",))}),
    ("e-bike", {}),
    ("量子", {}),
    ("nothing-matches-this", {}),
]


def key(text: str, kwargs: dict[str, Any]) -> str:
    return f"{text} {sorted((k, repr(v)) for k, v in kwargs.items())}"


def rows(hits: list[Hit]) -> list[list[Any]]:
    """What a user sees of each hit, in order."""
    return [
        [h.uuid, h.field, h.turn, h.path, h.snippet, h.matches, round(h.score, 6)] for h in hits
    ]
