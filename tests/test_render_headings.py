"""Headings a reader can follow (issue 15 §6): answers sit below the page's own outline,
no empty headings, bold titles that cannot break, task lists GitHub shows."""

from __future__ import annotations

from markdown_it.token import Token

from pplx_export.models import Conversation, WfPayload
from pplx_export.parse.views import item_view
from pplx_export.render.context import Ctx
from pplx_export.render.labels import EN
from pplx_export.render.text import bold, demote
from pplx_export.render.tree import render_item
from pplx_export.render.workflow import render_wf_block
from tests.reading_support import all_pages, tokens
from tests.render_samples import text_item

TURN_SECTIONS = (
    "Query",
    "Work process",
    "Step log",
    "Sub-agent work",
    "Answer",
    "Images and videos",
    "Related",
    "Citations of this turn",
)


def test_demote_moves_the_outline_below_top() -> None:
    md = "# A\n\ntext # not a heading\n\n### C\n\n```\n# code\n```\n\n##### E"
    assert (
        demote(md, 3) == "### A\n\ntext # not a heading\n\n##### C\n\n```\n# code\n```\n\n###### E"
    )
    assert demote("#### deep", 3) == "#### deep"  # already below: unchanged
    assert demote("no headings", 3) == "no headings"


def test_bold_survives_markup_in_the_title() -> None:
    for title in ("ends in a backslash \\", "a *star", "code `x", "[link](x)"):
        toks = [t for t in tokens(bold(title))[1].children or [] if t.content or t.markup]
        assert [t.type for t in toks] == ["strong_open", "text", "strong_close"], title
        text = "".join(t.content for t in toks if t.type == "text")
        assert text == title


def _headings(text: str) -> list[tuple[int, str, int]]:
    """(level, text, index of the heading_open token) of every heading."""
    toks = tokens(text)
    return [
        (int(t.tag[1]), toks[i + 1].content, i)
        for i, t in enumerate(toks)
        if t.type == "heading_open"
    ]


def _next_block(toks: list[Token], i: int) -> Token | None:
    return toks[i + 3] if i + 3 < len(toks) else None


def test_answer_headings_sit_below_the_turn_outline() -> None:
    checked = 0
    for name, rel, text in all_pages():
        heads = _headings(text)
        assert all(h.strip() for _, h, _ in heads), (name, rel)  # no empty heading
        if rel.startswith("turns/"):
            assert [lvl for lvl, _, _ in heads].count(1) == 1, (name, rel)
            for lvl, head, _ in heads:
                if lvl == 2:
                    assert head.startswith(TURN_SECTIONS), (name, rel, head)
            checked += 1
        elif rel == "conversation.md":
            for lvl, head, _ in heads[1:]:
                assert lvl >= 2, (name, rel, head)
                if lvl == 2:
                    # A turn heading is a link to its turn file.
                    assert head.startswith(("[Turn ", "Background tasks")), (name, rel, head)
                if lvl == 3:
                    assert head in ("Query", "Answer"), (name, rel, head)
    assert checked > 20


def test_no_step_heading_stands_alone() -> None:
    for name, rel, text in all_pages():
        toks = tokens(text)
        for lvl, head, i in _headings(text):
            # A step with a title or a tool says something; one with neither must have a body.
            if lvl == 3 and head.startswith("Step ") and "·" not in head and "`" not in head:
                nxt = _next_block(toks, i)
                assert nxt is not None, (name, rel, head)
                assert not (nxt.type == "heading_open" and int(nxt.tag[1]) <= 3), (name, rel, head)


def test_task_lists_use_boxes_github_shows() -> None:
    seen_progress = False
    for _name, _rel, text in all_pages():
        assert "- [/]" not in text
        seen_progress = seen_progress or "- [ ] *(in progress)*" in text
    assert seen_progress


def test_quoted_thoughts_and_texts_keep_their_headings_below_the_steps() -> None:
    # A thought that quotes a whole draft answer (`## Section` lines) stays inside the step.
    c = Ctx(labels=EN, conv=Conversation(web_uuid="w"))
    thought = render_item(c, item_view(text_item("## Draft\n\nbody", variant="thought")))
    assert thought == "> #### Draft\n>\n> body"
    plain = render_item(c, item_view(text_item("# Title\n\n## Sub")))
    assert plain == "#### Title\n\n##### Sub"


def test_the_work_process_heading_names_a_status_only_where_no_tag_does() -> None:
    c = Ctx(labels=EN, conv=Conversation(web_uuid="w"))

    def heading(status: str) -> str:
        return render_wf_block(c, WfPayload(raw={}, status=status, n_listed=2)).split("\n")[0]

    # The count is of the steps shown (none here): a completed run with nothing to show has
    # no section at all; an interrupted one says so.
    assert heading("WORKFLOW_COMPLETED") == ""
    assert heading("WORKFLOW_CANCELED") == "## Work process (steps: 0 · ⛔ Canceled)"
    # A status the tool does not know is shown as the API wrote it.
    assert heading("WORKFLOW_PAUSED") == "## Work process (steps: 0 · WORKFLOW_PAUSED)"
