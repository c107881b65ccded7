"""Nothing lost silently (protocol.md §9.1): after parsing, what the raw entry holds is
compared with what its turn got.

The check does not reuse the parser's knowledge of where answers live: it walks the raw
entry (and its schematized twin), JSON strings decoded, for anything that looks like an
answer (a non-empty string under a key naming an answer or Markdown, joined `chunks`, a
`text` that is not JSON) or like sources (dicts with an http(s) `url` in a list under a
key naming results or sources). A turn that shows no answer while the raw entry holds one
has lost it to a shape this version does not read; the same for sources. Only turns that
came out empty are walked, so a re-render pays nothing for the others.
"""

from __future__ import annotations

from typing import Any

from pplx_export.models import Loss, Turn
from pplx_export.parse.answer_forms import looks_like_json
from pplx_export.util.lenient import as_str, decode_json

# The prefix of the parser's note for a loss: the export and re-render say these out loud
# (a warning line each), unlike the routine notes.
LOSS_NOTE = "content not read:"
_DEPTH = 24  # deep enough for text -> object -> blocks -> block -> list -> item
# Keys whose text is never the turn's answer although their names say "answer".
_NOT_ANSWERS = frozenset({"answer_modes", "structured_answer_block_usages", "variant"})
_SOURCE_LISTS = ("web_results", "sources", "rows", "results", "citations", "references")
# Where a non-search turn keeps answers of its own kind (sub-agents, council members): a
# computer or council turn's answer comes from its workflow, which the parser reads whole.
_WORKFLOW_KEYS = frozenset({"workflow_block", "background_entries"})


def _is_answer_key(key: str) -> bool:
    lowered = key.lower()
    return lowered not in _NOT_ANSWERS and (
        "answer" in lowered or "markdown" in lowered or lowered in {"chunks", "response"}
    )


def _walk(
    value: Any, path: str, depth: int, answers: list[tuple[str, str]], sources: dict[str, int]
) -> None:
    if depth > _DEPTH:
        return
    if isinstance(value, str):
        stripped = value.lstrip()
        if stripped[:1] in ("{", "["):
            decoded = decode_json(value)
            if isinstance(decoded, dict | list):
                _walk(decoded, path, depth + 1, answers, sources)
        return
    if isinstance(value, list):
        for item in value:
            _walk(item, path, depth + 1, answers, sources)
        return
    if not isinstance(value, dict):
        return
    for key, item in value.items():
        if not isinstance(key, str) or key in _WORKFLOW_KEYS:
            continue
        where = f"{path}.{key}" if path else key
        if _is_answer_key(key):
            if isinstance(item, str) and item.strip() and item.lstrip()[:1] not in ("{", "["):
                answers.append((where, item))
            elif key == "chunks" and isinstance(item, list):
                joined = "".join(c for c in item if isinstance(c, str))
                if joined.strip():
                    answers.append((where, joined))
        if key.lower().endswith(_SOURCE_LISTS) and isinstance(item, list):
            n = sum(1 for s in item if _is_source(s))
            if n:
                sources[where] = max(sources.get(where, 0), n)
        _walk(item, where, depth + 1, answers, sources)


def _is_source(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    if isinstance(value.get("web_result"), dict):  # sources_answer_mode rows
        value = value["web_result"]
    url = as_str(value.get("url") or value.get("link"))
    return url.startswith(("http://", "https://"))


def _raw_text_answer(entry: dict[str, Any]) -> tuple[str, str] | None:
    """A `text` that is not JSON is the answer itself (§9.1 form 4)."""
    text = entry.get("text")
    if not isinstance(text, str) or not text.strip() or looks_like_json(text):
        return None
    decoded = decode_json(text)
    return ("text", text) if decoded is None or isinstance(decoded, str) else None


def find_losses(
    turn: Turn, entry: dict[str, Any], twin: dict[str, Any] | None, *, check_sources: bool
) -> list[Loss]:
    """What `entry` (+ `twin`) holds that `turn` did not get. `check_sources`: false where
    a turn's sources come from its workflow (computer, council), which this walk skips."""
    has_answer = bool(turn.display_answer.strip() or turn.answer.strip())
    has_sources = bool(turn.citations) or any(c.url for c in turn.answer_sources)
    if has_answer and (has_sources or not check_sources):
        return []
    answers: list[tuple[str, str]] = []
    sources: dict[str, int] = {}
    for label, raw in (("", entry), ("schematized", twin)):
        if isinstance(raw, dict):
            _walk(raw, label, 0, answers, sources)
    plain_text = _raw_text_answer(entry)
    if plain_text is not None:
        answers.append(plain_text)
    out: list[Loss] = []
    if not has_answer and answers:
        where, text = max(answers, key=lambda a: len(a[1].strip()))
        out.append(Loss("answer", where, len(text.strip())))
    if check_sources and not has_sources and sources:
        where, n = max(sources.items(), key=lambda kv: kv[1])
        out.append(Loss("sources", where, n))
    return out


def loss_line(loss: Loss) -> str:
    """One line for a log or a report: what was found where, and its size."""
    unit = " characters" if loss.kind == "answer" else ""
    return (
        f"the raw entry holds {loss.kind} ({loss.size:,}{unit} in `{loss.where}`) "
        "that this version does not read"
    )
