"""Models -> Markdown/JSON text. Pure: no I/O, no clock; same input, same bytes.

Public API: `render_thread`, `render_report`, `RENDERER_VERSION`, the flavours (`GITHUB`,
`OBSIDIAN`, `FLAVORS`).
"""

from __future__ import annotations

from collections.abc import Sequence

from pplx_export.models import Conversation, LocalFile
from pplx_export.render.context import Ctx
from pplx_export.render.conversation import appendix, render_conversation
from pplx_export.render.files import Files
from pplx_export.render.labels import labels_for
from pplx_export.render.latex import norm
from pplx_export.render.page import (
    SOURCE_COUNT,
    drop_sources_link,
    front_matter,
    nav_line,
    turn_file,
)
from pplx_export.render.sources import (
    appendix_sources,
    count_sources,
    sources_json,
    sources_md,
    turn_sources,
)
from pplx_export.render.text import (
    FLAVORS,
    GITHUB,
    OBSIDIAN,
    finish,
    join_blocks,
    model_links,
    one_line,
)
from pplx_export.render.turn import HAND_ARCHIVED, render_turn
from pplx_export.renderer_version import RENDERER_VERSION

__all__ = [
    "FLAVORS",
    "GITHUB",
    "OBSIDIAN",
    "RENDERER_VERSION",
    "render_report",
    "render_thread",
]


def render_thread(
    conv: Conversation,
    lang: str = "en",
    flavor: str = GITHUB,
    local: Sequence[LocalFile] = (),
    space_page: str = "",
    variant_saved: bool = False,
) -> dict[str, str]:
    """Relative path -> file text for conversation.md, turns/turn_NNNN.md, sources.*.
    `flavor`: GITHUB (HTML folds, Markdown links) or OBSIDIAN (callouts, wikilinks).
    `local` is the thread's files as the archive holds them (sync builds it from the
    manifest and the disk): each is linked where it was produced. `space_page` is the
    thread's page under `spaces/` (relative to the archive root), linked from every page.
    `variant_saved`: the thread directory holds a hand-archived rewritten_answer_variant.md,
    which the rewrite note links."""
    ctx = Ctx(
        labels=labels_for(lang),
        conv=conv,
        flavor=flavor,
        files=Files(local),
        space_page=space_page,
    )
    ctx.memo[HAND_ARCHIVED] = variant_saved
    turns = {}
    for turn in conv.turns:
        here = turn_file(turn.index)
        turns[here] = render_turn(ctx.with_page(here), turn)
    # sources.md lists, and the header counts, every web page the turn files show; a
    # thread that shows none has no Sources link (nav_line reads the count).
    found = turn_sources(ctx, turns)
    # ... and the pages of the background runs no turn claims (conversation.md shows them).
    unattributed = appendix_sources(ctx, appendix(ctx), found)
    ctx.memo[SOURCE_COUNT] = count_sources(found, unattributed)
    if not found and not unattributed:
        turns = {here: drop_sources_link(ctx, here, text) for here, text in turns.items()}
    files = {"conversation.md": render_conversation(ctx), **turns}
    files["sources.md"] = sources_md(ctx.with_page("sources.md"), found, unattributed)
    files["sources.json"] = sources_json(conv.citations)
    return files


def render_report(conv: Conversation, body: str, lang: str = "en", flavor: str = GITHUB) -> str:
    """report.md: title, artifact file name, then the report Markdown."""
    labels = labels_for(lang)
    info = conv.report.info if conv.report is not None else None
    title = one_line(info.title) if info is not None and info.title.strip() else labels.report_title
    ctx = Ctx(labels=labels, conv=conv, flavor=flavor, page="report.md")
    head = join_blocks([front_matter(conv, title), f"# {title}", nav_line(ctx, "report.md")])
    head += "\n\n"
    if info is not None and info.file_name:
        head += f"> {labels.artifact_file}: {info.file_name}\n\n"
    return finish(head + model_links(norm(without_title(body, title).strip("\n"))))


def without_title(body: str, title: str) -> str:
    """The report body without its own first heading when that is the page's title (the
    page's `# title` says it already)."""
    text = body.lstrip("\n")
    first, _, rest = text.partition("\n")
    if first.startswith("#") and one_line(first.lstrip("#")) == one_line(title):
        return rest
    return body
