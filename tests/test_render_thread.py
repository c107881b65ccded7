"""render_thread / render_report on hand-built conversations: files, sections, tags."""

from __future__ import annotations

import json

import pytest

from pplx_export.render import RENDERER_VERSION, render_report, render_thread
from pplx_export.render.labels import EN, ZH
from tests.render_samples import (
    SAMPLES,
    computer_conversation,
    council_conversation,
    report_conversation,
    search_conversation,
)


@pytest.mark.parametrize("name", sorted(SAMPLES))
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_files_and_determinism(name: str, lang: str) -> None:
    files = render_thread(SAMPLES[name](), lang)
    again = render_thread(SAMPLES[name](), lang)
    assert files == again
    conv = SAMPLES[name]()
    expected = {"conversation.md", "sources.md", "sources.json"}
    expected |= {f"turns/turn_{t.index:04d}.md" for t in conv.turns}
    assert set(files) == expected
    for text in files.values():
        assert text.endswith("\n") and not text.endswith("\n\n")
    assert RENDERER_VERSION


def after_front_matter(text: str) -> str:
    return text[text.index("\n---\n") + 6 :]


def test_search_thread() -> None:
    files = render_thread(search_conversation())
    conv_md = files["conversation.md"]
    # No empty `url: ""`: a key without a value is left out.
    assert conv_md.startswith('---\ntitle: "Otters"\nuuid: "w-search"\n')
    # One header line: date, mode, author and counts once, then the links.
    assert after_front_matter(conv_md).startswith(
        "# Otters\n\n> 2035-12-26 · search · Author: ada · Turns: 1 · Sources: 1"
        " · [Archive index](../../../index.md) · [Turn 1 →](turns/turn_0001.md)"
        " · [Sources](sources.md)\n\n## "
    )
    assert (
        "## [Turn 1 — 2035-12-26 00:00 UTC](turns/turn_0001.md)\n\n### Query\n\n"
        "why do otters hold hands" in conv_md
    )
    assert "### Answer\n\nOtters hold hands $while sleeping$." in conv_md
    turn = files["turns/turn_0001.md"]
    assert turn.index("## Query") < turn.index("## Work process") < turn.index("## Answer")
    assert (
        "## Citations of this turn\n\n- \\[1\\] [Otter facts](https://example.org/otters)\n" in turn
    )
    doc = json.loads(files["sources.json"])
    assert doc == {
        "count": 1,
        "sources": [
            {
                "name": "Otter facts",
                "url": "https://example.org/otters",
                "snippet": "s",
                "timestamp": "",
            }
        ],
    }
    assert files["sources.json"].startswith('{\n "count": 1,')
    assert after_front_matter(files["sources.md"]) == (
        "# Sources\n\n> 2035-12-26 · search · [Archive index](../../../index.md)"
        " · [Conversation](conversation.md)"
        " · [Turn 1 →](turns/turn_0001.md)\n\n## [Turn 1](turns/turn_0001.md)\n\n"
        "### Answer (1)\n\n- \\[1\\] [Otter facts](https://example.org/otters)\n"
    )


def test_empty_query_and_answer_placeholders() -> None:
    # conversation.md gives a notification turn its note alone; its turn file keeps the
    # placeholders (the full record of the turn).
    files = render_thread(computer_conversation(), "zh")
    assert (
        "## [轮次 2 — 2035-12-26 00:01 UTC](turns/turn_0002.md)\n\n"
        "> 本轮报告的子代理工作见[本轮文件](turns/turn_0002.md)。\n\n## "
        in files["conversation.md"]
    )
    assert "（空）" in files["turns/turn_0002.md"] and "（无）" in files["turns/turn_0002.md"]
    en = render_thread(computer_conversation())
    assert "(empty)" in en["turns/turn_0002.md"] and "(none)" in en["turns/turn_0002.md"]


def test_computer_turn_work_process() -> None:
    turn = render_thread(computer_conversation())["turns/turn_0001.md"]
    assert f"## Work process (steps: 5 · {EN.tag_limit})" in turn  # the steps shown
    assert "### Step 1 · Thinking\n\n> Let me plan." in turn
    assert "### Step 2 · Run script (`bash`) — 2035-12-26 00:00:12 → 2035-12-26 00:00:13" in turn
    assert "````bash\necho ```\n````" in turn
    assert "`````\nout ```` here\n`````" in turn
    # mapped sub-agent: heading tag from the sub-agent's own status, prompt, steps, citations
    assert f"### Step 3 · 🤖 Sub-agent: Collect tide tables · {EN.tag_limit}" in turn
    assert "**Prompt (task instruction):**\n\n> Find the tide tables." in turn
    assert "> sub-agent thinking" in turn
    assert "anchor copy only text" in turn
    assert "**Conclusion:**\n\nTides found." in turn
    assert "- [Tide office](https://example.org/tides)" in turn
    # unmapped anchor falls back to its payload
    assert f"### Step 4 · 🤖 Sub-agent: Unmapped helper · {EN.tag_canceled}" in turn
    assert "z did something" in turn
    assert turn.count("> Do Z.") == 1
    assert "| Brest | 7.1<br>1.2 |" in turn
    # the answer item equal to the turn answer is shown once, in the Answer section
    assert turn.count("Final tide answer.") == 1
    assert "## Background tasks" not in turn


def test_stub_turn_section() -> None:
    turn = render_thread(computer_conversation())["turns/turn_0002.md"]
    assert "## Sub-agent work (1)" in turn
    assert "<summary>🤖 Sub-agent: Late helper (steps: 2 · has conclusion)</summary>" in turn
    assert "- b query" in turn and "B concluded." in turn
    assert turn.index("## Sub-agent work") < turn.index("## Answer")
    zh = render_thread(computer_conversation(), "zh")["turns/turn_0002.md"]
    assert "## 子代理工作（1 个）" in zh
    assert "<summary>🤖 子代理：Late helper（2 步骤 · 有结论）</summary>" in zh


def test_background_appendix_only_in_conversation_md() -> None:
    files = render_thread(computer_conversation())
    conv_md = files["conversation.md"]
    assert "## Background tasks (not attributed to a turn)" in conv_md
    # One status line: the run's status and time with one end value (its last update,
    # as it never completed); the interruption tag is the fold's summary's.
    assert (
        "> Status: `WORKFLOW_CANCELED` · Time: 2035-12-25 23:40:00 → · last update: 2035-12-25"
        " 23:50:00"
    ) in conv_md
    assert conv_md.count("Status:") == 1 and conv_md.count(EN.tag_canceled) == 1
    assert (
        f"🤖 Background task: Orphan run (steps: 1 · no conclusion · {EN.tag_canceled})" in conv_md
    )
    assert "orphan text" in conv_md
    assert all("Orphan run" not in t for p, t in files.items() if p.startswith("turns/"))
    zh = render_thread(computer_conversation(), "zh")["conversation.md"]
    assert "\n## 后台任务（未归入轮次）\n" in zh
    assert ZH.tag_canceled in zh


def test_council_blocks() -> None:
    turn = render_thread(council_conversation())["turns/turn_0001.md"]
    assert "### Step 1 · 🏛️ Model council: Compare\n\n**Side by side:**" in turn
    assert "**Models:**" not in turn  # each fold gives its model's id, once
    assert turn.count("Model: `alpha`") == 1 and turn.count("Model: `beta`") == 1
    stat = "rounds: 1 · queries: 2 · sources: 1 · answer: 70 chars"
    assert f"<summary>alpha view ({stat})</summary>" in turn
    # both query groups survive (the parser's rounds keep only the last one)
    assert "- `alpha q1`" in turn and "- `alpha q2`" in turn
    assert "1. [alpha src](https://example.org/alpha)" in turn
    assert "Alpha says **Beta** agrees." in turn
    assert "pplx://" not in turn


def test_report() -> None:
    conv = report_conversation()
    out = render_report(conv, "Body \\(x\\)\n\n\n")
    nav = (
        "> 2035-12-26 · search · [Archive index](../../../index.md)"
        " · [Conversation](conversation.md) · [Turn 1 →](turns/turn_0001.md)"
    )
    assert after_front_matter(out) == (
        f"# Otter report\n\n{nav} · [Sources](sources.md)\n\n"
        "> Artifact file: otters.md\n\nBody $x$\n"
    )
    zh = render_report(search_conversation(), "B", "zh")
    assert after_front_matter(zh).startswith("# 研究报告\n\n> 2035-12-26 · search · [存档索引]")
    assert zh.endswith("\n\nB\n")


def test_report_does_not_repeat_its_title() -> None:
    conv = report_conversation()
    out = after_front_matter(render_report(conv, "# Otter report\n\nBody.\n"))
    assert out.count("Otter report") == 1 and out.endswith("Body.\n")
    # A body whose first heading is another title keeps it.
    other = after_front_matter(render_report(conv, "# Findings\n\nBody.\n"))
    assert "# Findings" in other
