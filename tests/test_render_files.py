"""Generated files are visible (issue 15 §4), and the rest of §6 and §9: code is fenced, steps
are named, council rounds labelled, every label from the catalog."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from pplx_export.archive.assets import MANIFEST, local_files
from pplx_export.models import (
    EXPIRED,
    NO_CHANNEL,
    NOT_DOWNLOADED,
    Asset,
    Conversation,
    LocalFile,
    ReportInfo,
    Step,
    Turn,
)
from pplx_export.parse.assets import collect_assets
from pplx_export.parse.views import attach_views, item_view, step_view
from pplx_export.render import OBSIDIAN, render_thread
from pplx_export.render.context import Ctx
from pplx_export.render.files import human_size, inline_file_text
from pplx_export.render.items import render_todo
from pplx_export.render.labels import EN, ZH, labels_for
from pplx_export.render.steps import render_step
from tests.reading_support import tokens
from tests.render_samples import (
    T0,
    council_conversation,
    item,
    payload_item,
    report_conversation,
    text_item,
    wf_step,
)

PNG = LocalFile("u-png", "Build times", "v1", 1, "CHART", "assets/files/Build_times.png", 73)
DOCX = LocalFile("u-doc", "plan.docx", "v2", 2, "DOCX_FILE", "assets/files/plan_v2.docx", 12800)
GONE = LocalFile("u-pdf", "table.pdf", "v1", 1, "PDF_FILE", missing=EXPIRED)
HANDLE = LocalFile("toolu_h", "notes.md", "v1", 1, "DOC_FILE", missing=NO_CHANNEL)
LATER = LocalFile("u-late", "deck.pptx", "v1", 1, "SLIDES", missing=NOT_DOWNLOADED)


def share_step(*uuids: str, variant: str = "") -> dict[str, Any]:
    extra = {"variant": variant} if variant else {}
    sources = item("WORKFLOW_ITEM_SOURCES", "sources_payload", {"asset_uuids": list(uuids)})
    return wf_step("", [{**sources, **extra}], tool_name="share_file")


def computer(steps: list[dict[str, Any]], answer: str = "Done.", uuid: str = "e1") -> Conversation:
    turn = Turn(
        index=1,
        uuid=uuid,
        query="make files",
        created_us=T0,
        answer=answer,
        display_answer=answer,
        wf_block={"status": "WORKFLOW_COMPLETED", "steps": steps},
    )
    return attach_views(Conversation(web_uuid="w", title="Files", mode="computer", turns=[turn]))


def files_of(*files: LocalFile, entry: str = "e1") -> list[LocalFile]:
    return [dataclasses.replace(f, entry_uuid=entry) for f in files]


# ------------------------------------------------------------------------- asset linking


def test_a_share_file_step_links_what_it_shared_with_version_and_size() -> None:
    conv = computer([share_step("u-png", "u-doc")])
    turn = render_thread(conv, "en", local=files_of(PNG, DOCX))["turns/turn_0001.md"]
    assert "### Step 1 · Shared files (`share_file`)" in turn  # not an empty heading
    assert "- [Build times](../assets/files/Build_times.png) · v1 · 73 B" in turn
    assert "  ![Build times](../assets/files/Build_times.png)" in turn  # images embedded
    assert "- [plan.docx](../assets/files/plan_v2.docx) · v2 · 12.5 KB" in turn
    # Linked at the step, so the turn's Files section does not repeat them.
    assert "## Files" not in turn
    toks = tokens(turn)
    images = [c for t in toks for c in t.children or [] if c.type == "image"]
    assert [i.attrs["src"] for i in images] == ["../assets/files/Build_times.png"]


def test_files_not_shared_by_a_step_are_listed_under_the_turn_with_why_they_are_missing() -> None:
    conv = computer([wf_step("Work", [text_item("working")])])
    local = files_of(PNG, GONE, HANDLE, LATER)
    turn = render_thread(conv, "en", local=local)["turns/turn_0001.md"]
    section = turn.split("## Files\n\n")[1]
    assert section.splitlines()[0] == "- [Build times](../assets/files/Build_times.png) · v1 · 73 B"
    assert f"- table.pdf · v1 · {EN.file_expired}" in section
    assert f"- notes.md · v1 · {EN.file_no_channel}" in section
    assert f"- deck.pptx · v1 · {EN.file_not_downloaded}" in section
    assert "expired" in EN.file_expired and "no download channel" in EN.file_no_channel
    # The Files section comes after the answer.
    assert turn.index("## Answer") < turn.index("## Files")


def test_conversation_lists_every_file_with_the_turn_that_made_it() -> None:
    conv = computer([share_step("u-png")])
    local = [*files_of(PNG), LocalFile("u-x", "orphan.csv", path="assets/files/orphan.csv", size=5)]
    md = render_thread(conv, "en", local=local)["conversation.md"]
    files = md.split("## Files\n\n")[1]
    assert (
        "- [Build times](assets/files/Build_times.png) · v1 · 73 B · [Turn 1](turns/turn_0001.md)"
        in files
    )
    assert "- [orphan.csv](assets/files/orphan.csv) · v1 · 5 B" in files  # no turn known


def test_a_shared_uuid_the_thread_does_not_list_is_still_named() -> None:
    turn = render_thread(computer([share_step("u-unknown")]))["turns/turn_0001.md"]
    assert f"- `u-unknown` · {EN.file_unlisted}" in turn


def test_files_attached_to_the_answer_are_shown_under_the_answer_not_as_a_bare_step() -> None:
    conv = computer(
        [
            share_step("u-png"),
            wf_step("", [text_item("Done.", variant="answer"), *share_step("u-png")["items"]]),
        ]
    )
    conv.turns[0].workflow.steps[1].items[1].text.variant = "answer"  # type: ignore[union-attr]
    turn = render_thread(conv, "en", local=files_of(PNG))["turns/turn_0001.md"]
    assert "### Step 2" not in turn
    assert turn.count("../assets/files/Build_times.png)") == 2  # the link and the embed, once


def test_without_files_nothing_changes() -> None:
    conv = computer([wf_step("Work", [text_item("working")])])
    files = render_thread(conv)
    assert "## Files" not in files["conversation.md"] + files["turns/turn_0001.md"]


def test_the_research_step_links_the_archived_report_not_the_signed_url() -> None:
    url = "https://files.example.com/r.md?sig=1"
    step = step_view(Step("RESEARCH_ANSWER", {"title": "Heat", "file_name": "r.md", "url": url}))
    conv = report_conversation()
    ctx = Ctx(EN, conv, page="turns/turn_0001.md")
    assert conv.report is not None
    assert render_step(ctx, step) == (
        "**Research report**: Heat — `r.md` · [Research report](../report.md)"
    )
    conv.report = None
    assert url in render_step(ctx, step)


def test_zh_file_reasons() -> None:
    conv = computer([wf_step("Work", [text_item("working")])])
    turn = render_thread(conv, "zh", local=files_of(GONE, HANDLE))["turns/turn_0001.md"]
    assert "## 文件" in turn
    assert "- table.pdf · v1 · 未下载：已过期（平台不再提供）" in turn
    assert "- notes.md · v1 · 未下载：无下载通道（云端工作区文件）" in turn


@pytest.mark.parametrize(
    ("n", "text"), [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KB"), (5 * 2**20, "5.0 MB")]
)
def test_human_size(n: int, text: str) -> None:
    assert human_size(n) == text


# ------------------------------------------------------------- the archive's file list


def test_local_files_reads_the_manifest_and_the_disk(tmp_path: Path) -> None:
    files = tmp_path / "assets" / "files"
    files.mkdir(parents=True)
    (files / "chart.png").write_bytes(b"\x89PNG" + b"0" * 96)
    (tmp_path / MANIFEST).write_text(
        json.dumps(
            {
                "count": 1,
                "files": [
                    {
                        "filename": "gone.pdf",
                        "n_versions": 1,
                        "versions": [
                            {
                                "uuid": "u-gone",
                                "version": "v1",
                                "asset_type": "PDF_FILE",
                                "downloaded_to": "",
                                "asset_expired": True,
                            }
                        ],
                    }
                ],
            }
        )
    )
    assets = [
        Asset(
            "u-chart",
            "CHART",
            "chart",
            url="https://x/c.png?Signature=s",
            downloaded_to="/old/place/chart.png",
            entry_uuid="e1",
        ),
        Asset("u-gone", "PDF_FILE", "gone.pdf", url="https://x/g.pdf", entry_uuid="e1"),
        Asset("u-new", "SLIDES", "deck.pptx", url="https://x/d.pptx"),
        Asset("toolu_h", "DOC_FILE", "notes.md", no_download_channel=True, file_handle="file:x"),
        Asset(
            "u-code",
            "CODE_ASSET",
            "run.sh",
            version="inline",
            dest_name="run.sh.code.md",
            extracted_inline=True,
            inline_kind="code",
            inline_content="#!/bin/sh\necho hi\n",
            entry_uuid="e1",
        ),
    ]
    by_name = {f.filename: f for f in local_files(assets, tmp_path)}
    assert by_name["chart"].path == "assets/files/chart.png" and by_name["chart"].size == 100
    assert by_name["chart"].entry_uuid == "e1"
    assert by_name["chart"].url == "https://x/c.png"  # a media item showing it embeds it
    assert by_name["gone.pdf"].missing == EXPIRED and not by_name["gone.pdf"].path
    assert by_name["deck.pptx"].missing == NOT_DOWNLOADED
    assert by_name["notes.md"].missing == NO_CHANNEL
    code = by_name["run.sh"]
    assert code.path == "assets/files/run.sh.code.md" and code.version == "inline"
    assert code.size == len("```bash\n#!/bin/sh\necho hi\n```\n")
    # Render never reads the disk: the list is all it gets.
    assert local_files([], tmp_path / "elsewhere") == []


def test_assets_know_the_entry_that_listed_them() -> None:
    entries = [
        {
            "uuid": "e1",
            "blocks": [
                {
                    "unified_assets_block": {
                        "assets": [
                            {
                                "uuid": "a1",
                                "asset_type": "CHART",
                                "chart": {"url": "https://x/a.png", "name": "A"},
                            }
                        ]
                    }
                }
            ],
        },
        {
            "uuid": "e2",
            "blocks": [
                {
                    "plan_block": {
                        "steps": [
                            {
                                "assets": [
                                    {
                                        "uuid": "a2",
                                        "asset_type": "CODE_ASSET",
                                        "download_info": [
                                            {"filename": "b.py", "text_content": "print(1)"}
                                        ],
                                    }
                                ]
                            }
                        ]
                    }
                }
            ],
        },
    ]
    assert {a.uuid: a.entry_uuid for a in collect_assets(entries)} == {"a1": "e1", "a2": "e2"}


@pytest.mark.parametrize(
    ("kind", "name", "lang"),
    [
        ("code", "bench.sh", "bash"),
        ("code", "plot.py", "python"),
        ("code", "q.sql", "sql"),
        ("code", "noext", ""),
        ("diff", "fix", "diff"),
    ],
)
def test_inline_files_fence_their_code(kind: str, name: str, lang: str) -> None:
    text = inline_file_text(kind, name, "x = 1\n# not a heading\n```inner```\n")
    assert text.startswith(f"````{lang}\nx = 1\n# not a heading\n")
    assert text.endswith("\n````\n")
    heads = [t for t in tokens(text) if t.type == "heading_open"]
    assert not heads


# ------------------------------------------------------------------ §6: code, steps, rounds


def _one_item_turn(step: dict[str, Any], lang: str = "en") -> str:
    return render_thread(computer([step]), lang)["turns/turn_0001.md"]


def test_a_tool_input_is_fenced_even_when_not_marked_monospace() -> None:
    script = "#!/bin/sh\n# build all\nmake all"
    turn = _one_item_turn(wf_step("Run", [text_item(script, header="Input")], tool_name="bash"))
    assert f"<summary>Input</summary>\n\n```bash\n{script}\n```" in turn
    # A script is code in any step, and its comments never become headings.
    turn = _one_item_turn(wf_step("Run", [text_item(script)]))
    assert f"```text\n{script}\n```" in turn
    assert "# build all" not in [t.content for t in tokens(turn) if t.type == "inline"]


def test_a_code_step_fences_its_command_but_not_its_own_words() -> None:
    turn = _one_item_turn(
        wf_step(
            "Check",
            [text_item("Running command:"), text_item("ls -la", is_mono=True)],
            tool_name="bash",
        )
    )
    assert "\n\nRunning command:\n\n```bash\nls -la\n```" in turn


def test_a_step_without_a_title_is_named_by_what_it_holds() -> None:
    turn = _one_item_turn(wf_step("", [text_item("Pondering.", variant="thought")]))
    assert "### Step 1 · Thinking" in turn
    questions = item("WORKFLOW_ITEM_USER_QUESTIONS", "user_questions_payload", {"title": "Pick"})
    assert "### Step 1 · Asked the user" in _one_item_turn(wf_step("", [questions]))
    assert "### 步骤 1 · 思考" in _one_item_turn(
        wf_step("", [text_item("Pondering.", variant="thought")]), "zh"
    )
    for text in _one_item_turn(wf_step("", [text_item("x", variant="thought")])).splitlines():
        assert not re.fullmatch(r"#+ \S+ \d+", text)


def test_council_rounds_are_labelled() -> None:
    turn = render_thread(council_conversation())["turns/turn_0001.md"]
    assert "**Round 1 · Search**" in turn
    zh = render_thread(council_conversation(), "zh")["turns/turn_0001.md"]
    assert "**第 1 轮 · Search**" in zh


def test_plain_council_rounds_are_labelled() -> None:
    state = {
        "answer_chunks": ["It is ", "so."],
        "steps": [
            {"step_type": "COUNCIL_ROUND", "content": {"queries": ["q1"]}},
            {"step_type": "COUNCIL_ROUND", "content": {"queries": ["q2"]}},
        ],
    }
    step = step_view(
        Step("COUNCIL_RESEARCH", {"research_query": "why", "model_states": {"m1": state}})
    )
    md = render_step(Ctx(EN, Conversation(web_uuid="w")), step)
    assert "**Round 1**\n\n- `q1`" in md and "**Round 2**\n\n- `q2`" in md
    zh = render_step(Ctx(ZH, Conversation(web_uuid="w")), step)
    assert "**第 1 轮**" in zh and "**答案：**" in zh and "模型：m1" in zh


def test_in_progress_todos_render_as_an_open_box_that_says_so() -> None:
    todo = item_view(
        item(
            "WORKFLOW_ITEM_TODO_LIST",
            "todo_list_payload",
            {"items": [{"status": "IN_PROGRESS", "description": "Benchmark"}]},
        )
    )
    for lb in (EN, ZH):
        md = render_todo(Ctx(lb, Conversation(web_uuid="w")), todo)
        assert f"- [ ] *{lb.in_progress}* Benchmark" in md
        assert "[/]" not in md
        # GitHub and CommonMark read it as a list item with an unchecked box.
        inline = [t.content for t in tokens(md) if t.type == "inline"]
        assert f"[ ] *{lb.in_progress}* Benchmark" in inline


# ------------------------------------------------------------------------- §9: zh labels


def test_zh_catalog_uses_full_width_punctuation_and_translates_headings() -> None:
    def ascii_marks(lb: object) -> list[str]:
        found = []
        for name in ZH.__dataclass_fields__:
            value = getattr(lb, name)
            # Code spans aside (a command line), no ASCII parenthesis or colon.
            if isinstance(value, str) and re.search(r"[():]", re.sub(r"`[^`]*`", "", value)):
                found.append(name)
        return found

    assert ascii_marks(ZH) == []
    assert {"empty", "none", "in_progress", "colon", "lparen"} <= set(ascii_marks(EN))
    assert (ZH.turn, ZH.query, ZH.answer) == ("轮次", "提问", "回答")
    assert (ZH.model_answer, ZH.cited, ZH.subagent_conclusion) == ("答案", "引文", "子代理结论")
    assert labels_for("zh").output == "输出"


def test_zh_pages_carry_no_english_label() -> None:
    steps = [
        wf_step(
            "Run",
            [text_item("ls", is_mono=True), text_item("a\nb", is_mono=True, header="Output")],
            tool_name="bash",
        ),
        wf_step("", [text_item("Pondering.", variant="thought")]),
    ]
    turn = render_thread(computer(steps), "zh")["turns/turn_0001.md"]
    assert "<summary>输出</summary>" in turn and "<summary>Output</summary>" not in turn
    assert "# 轮次 1" in turn and "## 提问" in turn and "## 回答" in turn
    assert "步骤 1 · Run（`bash`）" in turn
    conv = render_thread(computer(steps), "zh")["conversation.md"]
    assert "> 2035-12-26 · computer · 轮次：1 · 来源：0 · [存档索引](../../../index.md)" in conv
    council = render_thread(council_conversation(), "zh")["turns/turn_0001.md"]
    assert "**答案：**" in council and "**Answer：**" not in council
    assert "模型：`alpha`" in council


def test_report_info_is_kept(tmp_path: Path) -> None:
    # A report conversation without local files renders as before (nothing to link).
    files = render_thread(report_conversation())
    assert "## Files" not in files["conversation.md"]
    assert isinstance(report_conversation().report.info, ReportInfo)  # type: ignore[union-attr]


def test_obsidian_links_and_embeds_files_as_wikilinks() -> None:
    conv = computer([share_step("u-png")])
    turn = render_thread(conv, "en", OBSIDIAN, local=files_of(PNG))["turns/turn_0001.md"]
    assert "- [[../assets/files/Build_times.png|Build times]] · v1 · 73 B" in turn
    assert "  ![[../assets/files/Build_times.png]]" in turn


# ------------------------------------------- diffs told apart (issue 34 point 6)


def _diff(uuid: str, title: str, *paths: str) -> dict[str, Any]:
    files = [
        {
            "filename": path.rsplit("/", 1)[-1],
            "display_path": path,
            "lines": [{"kind": "ADD", "text": f"edit {uuid}"}],
        }
        for path in paths
    ]
    return {
        "uuid": uuid,
        "asset_type": "ASSET_DIFF",
        "asset_diff": {"title": title, "files": files},
    }


def _edit_step(uuid: str) -> dict[str, Any]:
    sources = item("WORKFLOW_ITEM_SOURCES", "sources_payload", {"asset_uuids": [uuid]})
    return wf_step("Edit the draft", [sources], tool_name="edit")


# Three edits of one file and one of two others, all under the task's one step title.
DIFFS = [
    _diff("d-1", "Draft section", "out/sec.md"),
    _diff("d-2", "Draft section", "out/sec.md"),
    _diff("d-3", "Draft section", "src/a.py", "src/b.py"),
    _diff("d-4", "Draft section", "out/sec.md"),
]


def _diff_thread(tmp_path: Path, nested: bool) -> tuple[Conversation, list[LocalFile]]:
    """A computer turn whose edit steps made the DIFFS, top-level or in a nested run, and
    the thread's files as sync builds them (parse, then the manifest on disk)."""
    entries = [{"uuid": "e1", "blocks": [{"unified_assets_block": {"assets": DIFFS}}]}]
    local = local_files(collect_assets(entries), tmp_path)
    steps = [_edit_step(d["uuid"]) for d in DIFFS]
    if nested:
        run = {"id": "run-1", "headline": "Write the draft", "steps": steps}
        steps = [wf_step("Delegate", [payload_item(run)], tool_name="run_subagent")]
    return computer(steps), local


def test_diffs_are_named_by_the_files_they_change() -> None:
    (asset,) = [
        a
        for a in collect_assets(
            [{"uuid": "e", "blocks": [{"unified_assets_block": {"assets": [DIFFS[2]]}}]}]
        )
    ]
    assert asset.changes == ("a.py", "b.py")
    assert asset.filename == "Draft section"  # the manifest and the file name as before


@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("flavor", ["github", OBSIDIAN])
def test_each_diff_is_labelled_by_its_files_and_linked_from_its_edit_step(
    tmp_path: Path, nested: bool, lang: str, flavor: str
) -> None:
    conv, local = _diff_thread(tmp_path, nested)
    lb = labels_for(lang)
    pages = render_thread(conv, lang, flavor, local=local)
    turn, whole = pages["turns/turn_0001.md"], pages["conversation.md"]
    by_uuid = {f.uuid: f for f in local}
    numbers = {"d-1": 1, "d-2": 2, "d-4": 3}
    for uuid, f in by_uuid.items():
        target = "../" + f.path
        shown = f"[[{target}|" if flavor == OBSIDIAN else f"]({target})"
        # The edit step that made it links it (the turn's Files section does not repeat it).
        assert turn.count(shown) == 1, (uuid, turn)
        if uuid in numbers:
            label = lb.file_diff_n.format(n=numbers[uuid], total=3)
            linked = f"[[{target}|sec.md]]" if flavor == OBSIDIAN else f"[sec.md]({target})"
            assert f"{linked} · {label}" in turn
    assert "a.py, b.py" in turn and f" · {lb.file_diff} · " in turn
    assert f"## {lb.files}" not in turn
    # conversation.md lists every file once, and no two entries read alike (counted repeats):
    # the label is the entry without its size.
    section = whole.split(f"## {lb.files}\n\n")[1]
    entries = [line for line in section.splitlines() if line.startswith("- ")]
    assert len(entries) == len(DIFFS)
    labels = [line.rsplit(" · ", 2)[0] for line in entries]
    assert len(set(labels)) == len(labels), labels


def test_counted_repeats_in_the_files_list_read_by_commonmark(tmp_path: Path) -> None:
    """As a reader's tool sees the list: the link texts plus the first fact tell every file
    apart, even when the platform gave every diff one title."""
    conv, local = _diff_thread(tmp_path, nested=True)
    whole = render_thread(conv, "en", local=local)["conversation.md"]
    toks = tokens(whole.split("## Files\n\n")[1])
    items = [t.content for t in toks if t.type == "inline"]
    assert len(items) == len(DIFFS)
    seen = [re.sub(r" · \d+ B.*", "", text) for text in items]
    assert len(set(seen)) == len(seen), seen
    assert sum("Draft section" in text for text in items) == len(DIFFS)  # the title is kept
