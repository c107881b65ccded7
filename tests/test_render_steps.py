"""Plain steps (§3.5): every type renders its content; unknown types stay visible."""

from __future__ import annotations

import json

import pytest

from pplx_export.models import Citation, Conversation, Step
from pplx_export.parse.views import step_view
from pplx_export.render import steps as rs
from pplx_export.render.context import Ctx
from pplx_export.render.labels import EN, ZH
from tests.render_samples import text_item


def ctx(lang: str = "en") -> Ctx:
    return Ctx(labels=EN if lang == "en" else ZH, conv=Conversation(web_uuid="w"))


# The steps as the renderer gets them: with the parser's view of their content.
def render_step(c: Ctx, step: Step) -> str:
    return rs.render_step(c, step_view(step))


def render_steps(c: Ctx, steps: list[Step]) -> str:
    return rs.render_steps(c, [step_view(s) for s in steps])


def novel_steps(c: Ctx, steps: list[Step], shown: str) -> list[Step]:
    return rs.novel_steps(c, [step_view(s) for s in steps], shown)


def r(step_type: str, content: dict[str, object] | None = None, **kw: object) -> str:
    return render_step(ctx(), Step(step_type, content or {}, **kw))  # type: ignore[arg-type]


def test_silent_steps() -> None:
    assert r("INITIAL_QUERY", {"query": "q"}) == ""
    assert r("FINAL", {"answer": json.dumps({"answer": "a"})}) == ""


def test_terminate_is_silent_unless_it_carries_more() -> None:
    # The pro search's end marker (§9.7) carries its goal only: nothing to show. Were it
    # to carry more, the reader sees it, as for any step the renderer does not know.
    assert r("TERMINATE", {"goal_id": "1"}) == ""
    assert r("TERMINATE", {}) == ""
    out = r("TERMINATE", {"goal_id": "1", "reason": "budget spent"})
    assert "*(unrendered type)*" in out and "budget spent" in out


def test_tool_steps_render_items_with_time() -> None:
    out = r(
        "ASI_TOOL_OUTPUT",
        {"workflow_items": [text_item("tool said hi")], "timestamp": "2035-12-26T00:00:04.1Z"},
    )
    assert out == "**Tool output** (2035-12-26 00:00:04)\n\ntool said hi"
    assert r("ASI_TOOL_INPUT", {"workflow_items": []}) == ""


def test_thought_search_and_results() -> None:
    assert r("THOUGHT", {"thought": "hmm\nyes"}) == "**Thinking**\n\n> hmm\n> yes"
    assert r("THOUGHT", {"text": "alt"}).endswith("> alt")
    assert r("THOUGHT", {}) == ""
    assert r("SEARCH_WEB", {"queries": [{"query": "q1"}, "q2", {"query": ""}]}) == (
        "**Web search**\n\n- q1\n- q2"
    )
    out = r("SEARCH_RESULTS", {"web_results": [{"name": "N", "url": "https://e.org"}, "junk"]})
    assert "<summary>Search results (1)</summary>" in out
    assert "- [N](https://e.org)" in out


def test_pages_skills_report_chart() -> None:
    assert "- [https://e.org/p](https://e.org/p)" in r(
        "GET_URL_CONTENT", {"pages": [{"url": "https://e.org/p"}]}
    )
    assert r("GET_URL_CONTENT", {"pages": [{}]}) == ""
    assert r("LOAD_SKILL", {"skill_names": ["pdf", "xlsx"]}) == "**LOAD_SKILL**: pdf, xlsx"
    assert r("LOAD_SKILL_RESPONSE", {}) == "**LOAD_SKILL_RESPONSE**: "
    out = r("RESEARCH_ANSWER", {"title": "T", "file_name": "r.md", "url": "https://e.org/r"})
    assert out.startswith("**Research report**: T — `r.md` · [https://e.org/r]")
    assert r("CREATE_CHART", {"caption": "Sales"}) == "**Create chart**: Sales"
    assert r("CREATE_CHART", {}) == "**Create chart**"


def test_code_step_fences_each_part() -> None:
    out = r(
        "CODE",
        {"script": "print('```')", "language": "python", "stdout": "ok\n", "error": "Boom"},
    )
    assert "**Code** (python)\n\n````python\nprint('```')\n````" in out
    assert "**Output**\n\n```\nok\n```" in out
    assert "**Error output**\n\n```\nBoom\n```" in out
    assert r("CODE", {}) == ""


def test_attachments_navigation_images() -> None:
    out = r(
        "ATTACHMENT", {"attachments": [{"name": "a.pdf", "url": "https://e.org/a"}, {"name": "b"}]}
    )
    assert out == "**Attachments**\n\n- [a.pdf](https://e.org/a)\n- b"
    assert r("ATTACHMENT", {"attachments": []}) == ""
    assert "https://e.org/n" in r("URL_NAVIGATE", {"urls": ["https://e.org/n"]})
    out = r(
        "GENERATE_IMAGE_RESULTS",
        {"image_results": [{"url": "https://e.org/i.png", "image_width": 4, "image_height": 3}]},
    )
    assert out.endswith("(4×3)")


def test_council_round_and_council_research() -> None:
    out = r("COUNCIL_ROUND", {"queries": ["qa"], "sources": [Citation("S", "https://e.org/s")]})
    assert out == "- `qa`\n  1. [S](https://e.org/s)"
    raw = {
        "step_type": "COUNCIL_RESEARCH",
        "research_query": "compare",
        "model_states": {
            "m1": {
                "status": "completed",
                "steps": [{"step_type": "SEARCH_WEB", "content": {"queries": [{"query": "mq"}]}}],
                "answer_chunks": ["model ", "answer"],
            }
        },
    }
    out = render_step(ctx(), Step("COUNCIL_RESEARCH", {}, raw=raw))
    assert "**Council research**: compare" in out
    assert "<summary>Model: m1 (completed)</summary>" in out
    assert "- mq" in out and "model answer" in out


@pytest.mark.parametrize("kind", ["DOCX", "MCP_TOOL_CALL", "READ"])
def test_unknown_types_render_a_placeholder(kind: str) -> None:
    assert r(kind) == f"**{kind}** *(unrendered type)*"
    assert render_step(ctx("zh"), Step(kind, {})) == f"**{kind}** *(未渲染类型)*"


def test_render_steps_separates_blocks_and_drops_empty() -> None:
    steps = [Step("FINAL"), Step("THOUGHT", {"thought": "a"}), Step("CREATE_CHART")]
    assert render_steps(ctx(), steps) == "**Thinking**\n\n> a\n\n**Create chart**"


def test_novel_steps_keeps_only_unshown_content() -> None:
    shown = "**Step 1**\n\nalready here, and the [Doc](https://e.org/doc) link"
    tool = Step(
        "ASI_TOOL_INPUT",
        {"workflow_items": [text_item("Already  here!"), text_item("brand new")]},
    )
    thought = Step("THOUGHT", {"thought": "already here"})  # labels do not count as content
    search = Step("SEARCH_WEB", {"queries": ["already here", "fresh query"]})
    results = Step(
        "SEARCH_RESULTS",
        {
            "web_results": [
                {"name": "Doc", "url": "https://e.org/doc"},
                {"name": "New", "url": "https://e.org/new"},
            ]
        },
    )
    out = novel_steps(ctx(), [tool, thought, search, results], shown)
    assert [s.step_type for s in out] == ["ASI_TOOL_INPUT", "SEARCH_WEB", "SEARCH_RESULTS"]
    assert [i.text.text for i in out[0].body.items] == ["brand new"]
    assert out[1].body.queries == ["fresh query"]
    assert [link.name for link in out[2].body.links] == ["New"]


def test_novel_steps_short_text_must_appear_verbatim() -> None:
    # "ok" is inside "broken" once squashed, but it is not on the page as such.
    out = novel_steps(
        ctx(), [Step("ASI_TOOL_OUTPUT", {"workflow_items": [text_item("ok")]})], "broken"
    )
    assert len(out) == 1
    assert (
        novel_steps(
            ctx(), [Step("ASI_TOOL_OUTPUT", {"workflow_items": [text_item("ok")]})], "x ok y"
        )
        == []
    )


def test_a_plain_council_models_markers_link_its_own_numbered_sources() -> None:
    def results(*urls: str) -> dict[str, object]:
        rows = [{"name": f"S {u}", "url": f"https://e.org/{u}"} for u in urls]
        return {"step_type": "SEARCH_RESULTS", "content": {"web_results": rows}}

    state = {
        "status": "completed",
        "steps": [results("a", "b"), results("c")],
        "answer_chunks": ["C says so.[3] A too.[1][9]"],
    }
    raw = {"step_type": "COUNCIL_RESEARCH", "model_states": {"m1": state}}
    out = render_step(ctx(), Step("COUNCIL_RESEARCH", {}, raw=raw))
    # The model's sources are numbered on across its rounds, as it counts them in its [n].
    assert "1. [S a](https://e.org/a)\n2. [S b](https://e.org/b)" in out
    assert "3. [S c](https://e.org/c)" in out
    assert "C says so.[\\[3\\]](https://e.org/c) A too.[\\[1\\]](https://e.org/a)[9]" in out
