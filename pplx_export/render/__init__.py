"""Models -> Markdown/JSON text. Pure: no I/O, no clock; same input, same bytes.

Public API: `render_thread`, `render_report`, `RENDERER_VERSION`, the flavours (`GITHUB`,
`OBSIDIAN`, `FLAVORS`).
"""

from __future__ import annotations

from pplx_export.models import Conversation
from pplx_export.render.context import Ctx
from pplx_export.render.conversation import render_conversation
from pplx_export.render.labels import labels_for
from pplx_export.render.latex import norm
from pplx_export.render.page import front_matter, nav_line, turn_file
from pplx_export.render.sources import sources_json, sources_md
from pplx_export.render.text import (
    FLAVORS,
    GITHUB,
    OBSIDIAN,
    finish,
    join_blocks,
    model_links,
    one_line,
)
from pplx_export.render.turn import render_turn
from pplx_export.renderer_version import RENDERER_VERSION

__all__ = [
    "FLAVORS",
    "GITHUB",
    "OBSIDIAN",
    "RENDERER_VERSION",
    "render_report",
    "render_thread",
]


def render_thread(conv: Conversation, lang: str = "en", flavor: str = GITHUB) -> dict[str, str]:
    """Relative path -> file text for conversation.md, turns/turn_NNNN.md, sources.*.
    `flavor`: GITHUB (HTML folds, Markdown links) or OBSIDIAN (callouts, wikilinks)."""
    ctx = Ctx(labels=labels_for(lang), conv=conv, flavor=flavor)
    files = {"conversation.md": render_conversation(ctx)}
    for turn in conv.turns:
        files[turn_file(turn.index)] = render_turn(ctx, turn)
    files["sources.md"] = sources_md(ctx)
    files["sources.json"] = sources_json(conv.citations)
    return files


def render_report(conv: Conversation, body: str, lang: str = "en", flavor: str = GITHUB) -> str:
    """report.md: title, artifact file name, then the report Markdown."""
    labels = labels_for(lang)
    info = conv.report.info if conv.report is not None else None
    title = one_line(info.title) if info is not None and info.title.strip() else labels.report_title
    ctx = Ctx(labels=labels, conv=conv, flavor=flavor)
    head = join_blocks([front_matter(conv, title), f"# {title}", nav_line(ctx, "report.md")])
    head += "\n\n"
    if info is not None and info.file_name:
        head += f"> {labels.artifact_file}: {info.file_name}\n\n"
    return finish(head + model_links(norm(body.strip("\n"))))
