"""Scenario details of the fixture threads: what lands where, field by field."""

from __future__ import annotations

from pplx_export.parse.workflow import iter_payloads, iter_steps
from tests.parse_support import fixture


def test_search_answer_keeps_code_fence_and_latex_verbatim() -> None:
    conv = fixture("How-do-Rust-lifetimes-work").parse()
    first = conv.turns[0]
    assert "```rust\nfn longest<'a>" in first.answer
    assert "\\[ t_r \\subseteq t_v \\]" in first.answer and "\\( t_v \\)" in first.answer
    assert first.display_answer == first.answer
    assert [s.step_type for s in first.steps] == [
        "INITIAL_QUERY",
        "SEARCH_WEB",
        "SEARCH_RESULTS",
        "FINAL",
    ]
    # entry.sources (dict items only) then FINAL web_results, deduped by URL per turn.
    assert [c.url for c in first.citations] == [
        "https://doc.rust-lang.org/book/ch10-03-lifetime-syntax.html",
        "https://doc.rust-lang.org/nomicon/lifetimes.html",
    ]
    # Thread level: first occurrence per URL over turns, then sorted by name.
    assert [c.name for c in conv.citations] == sorted(c.name for c in conv.citations)
    assert len(conv.citations) == 3
    assert conv.turns[1].metadata.query_source == "followup"
    assert conv.space is not None and conv.space.slug == "programming-languages-k3m9"
    assert conv.url == f"https://www.perplexity.ai/search/{conv.web_uuid}"
    assert conv.turns[0].wf_block is None and conv.assets == []


def test_deep_research_steps_report_and_versions() -> None:
    conv = fixture("Heat-pump-efficiency").parse()
    turn = conv.turns[0]
    types = [s.step_type for s in turn.steps]
    for kind in ("SEARCH_WEB", "SEARCH_RESULTS", "CODE", "CREATE_CHART", "RESEARCH_ANSWER"):
        assert kind in types
    info = turn.metadata.report_info
    assert info is not None and info.file_name == "heat_pump_cold_climate_report.md"
    assert conv.report is not None and conv.report.info == info
    # Candidates: same filename, newest created_at first.
    assert [a.version for a in conv.report.candidates] == ["v2", "v1"]
    reports = [a for a in conv.assets if a.asset_type == "RESEARCH_REPORT"]
    assert [(a.version, a.n_versions, a.dest_name) for a in reports] == [
        ("v1", 2, "heat_pump_cold_climate_report_v1.md"),
        ("v2", 2, "heat_pump_cold_climate_report_v2.md"),
    ]
    inline = [a for a in conv.assets if a.extracted_inline]
    assert len(inline) == 1 and inline[0].inline_kind == "code"
    assert inline[0].inline_content.startswith("import matplotlib")
    assert inline[0].dest_name == "cop_chart.py.code.md" and inline[0].version == "inline"
    assert turn.wf_block is None  # deep-research renders plain steps only


def test_study_steps() -> None:
    conv = fixture("Teach-me-Bayes").parse()
    types = {s.step_type for s in conv.turns[0].steps}
    assert {"LOAD_SKILL", "LOAD_SKILL_RESPONSE", "ATTACHMENT", "URL_NAVIGATE"} <= types
    assert "GENERATE_IMAGE_RESULTS" in types
    assert conv.mode == "study" and conv.sub_agents == {}


def test_council_sub_agents_and_rounds() -> None:
    conv = fixture("Which-database-should").parse()
    assert list(conv.sub_agents) == ["gpt55_thinking", "claude48opus", "gemini31pro_high"]
    gpt = conv.sub_agents["gpt55_thinking"]
    assert gpt.is_council and gpt.headline == "GPT-5.5 Thinking"
    assert gpt.answer.startswith("Use **SQLite**")
    rounds = [s.content["queries"] for s in gpt.steps]
    assert rounds == [
        ["sqlite for small shop inventory", "embedded database reliability"],
        ["inventory software backup"],
    ]
    assert all(s.step_type == "COUNCIL_ROUND" for s in gpt.steps)
    assert [c["url"] for c in gpt.steps[0].content["sources"]] == [c.url for c in gpt.sources[:2]]
    # A QUERIES item overwritten before any SOURCES leaves no round of its own.
    gemini = conv.sub_agents["gemini31pro_high"]
    assert [s.content["queries"] for s in gemini.steps] == [["bookshop inventory spreadsheet"]]
    # Sources without a preceding QUERIES still make a round (empty queries).
    claude = conv.sub_agents["claude48opus"]
    assert [s.content["queries"] for s in claude.steps] == [
        ["postgres vs sqlite small business"],
        [],
    ]
    turn = conv.turns[0]
    assert [s.sub_id for s in turn.sub_agents] == list(conv.sub_agents)
    assert "pplx://action/model_info?id=gpt55_thinking" in turn.answer
    assert turn.metadata.wf_status == "WORKFLOW_COMPLETED"


def test_computer_covers_every_item_type_and_nested_workflows() -> None:
    conv = fixture("Audit-the-nginx-config").parse()
    first = conv.turns[0]
    assert first.wf_block is not None
    kinds = {
        item.get("type") for step in iter_steps(first.wf_block) for item in step.get("items", [])
    }
    assert kinds == {
        "WORKFLOW_ITEM_TEXT",
        "WORKFLOW_ITEM_QUERIES",
        "WORKFLOW_ITEM_SOURCES",
        "WORKFLOW_ITEM_TODO_LIST",
        "WORKFLOW_ITEM_USER_QUESTIONS",
        "WORKFLOW_ITEM_USER_RESPONSE",
        "WORKFLOW_ITEM_TABLE",
        "WORKFLOW_ITEM_CONTENT",
        "WORKFLOW_ITEM_WORKFLOW",
    }
    headlines = [wp["headline"] for wp in iter_payloads(first.wf_block)]
    assert headlines == ["Deep TLS inspection", "Probe TLS versions", "Check certificate expiry"]
    assert first.sub_agents == [] and conv.sub_agents == {}  # nested, not anchors
    mono = [
        item["payload"]["text_payload"]["text"]
        for step in iter_steps(first.wf_block)
        for item in step["items"]
        if item["payload"].get("text_payload", {}).get("is_mono")
    ]
    assert any("```\nthis line sits after a literal fence\n```" in text for text in mono)
    # Plain SOURCES item of an ASI_TOOL_OUTPUT step is citation channel 3.
    assert len(first.citations) == 3
    assert [s.step_type for s in first.steps].count("ASI_TOOL_OUTPUT") == 2
    assert first.steps[1].timestamp  # content.timestamp surfaces on the Step
    assert conv.drift.counts == {"step_type:READ": 1}
    assert conv.url.startswith("https://www.perplexity.ai/computer/tasks/")
    assert [t.metadata.wf_status for t in conv.turns] == ["WORKFLOW_COMPLETED"] * 3


def test_computer_assets_versions_inline_diff_and_handles() -> None:
    conv = fixture("Audit-the-nginx-config").parse()
    by_type = {(a.asset_type, a.version): a for a in conv.assets}
    assert by_type[("CODE_FILE", "v1")].dest_name == "reload_v1.sh"
    assert by_type[("CODE_FILE", "v2")].n_versions == 2
    assert by_type[("XLSX_FILE", "v1")].dest_name == "findings.xlsx"
    diff = by_type[("ASSET_DIFF", "inline")]
    assert diff.dest_name == "Harden_TLS_settings.diff.md" and diff.inline_kind == "diff"
    assert diff.inline_content.splitlines() == [
        "--- a/nginx.conf",
        "+++ b/nginx.conf",
        " server {",
        "-    ssl_protocols TLSv1 TLSv1.1 TLSv1.2;",
        "+    ssl_protocols TLSv1.2 TLSv1.3;",
        "+    server_tokens off;",
        " }",
    ]
    handle = by_type[("DOC_FILE", "v1")]
    assert handle.no_download_channel and handle.file_handle == "file:repo/audit/AUDIT_NOTES.md"
    assert handle.url == "" and handle.uuid.startswith("toolu_")


def test_subagent_waterfall_anchored_stub_and_appendix() -> None:
    thread = fixture("Compare-three-commuter")
    conv = thread.parse()
    launcher, stub2, stub3, follow = conv.turns
    a, b = launcher.sub_agents
    assert a.headline == "Research the Riverline C3"
    assert a.prompt == "Research the Riverline C3: range, weight, price."
    assert a.status == "WORKFLOW_COMPLETED" and a.answer.startswith("The **Riverline C3**")
    assert len(a.sources) == 2 and a.thread_uuid
    assert [s.step_type for s in a.steps][:2] == ["INITIAL_QUERY", "ASI_TOOL_INPUT"]
    # The anchor copy says COMPLETED; the background root block says CANCELED and wins.
    assert b.status == "WORKFLOW_CANCELED" and b.answer == ""
    assert launcher.display_answer == "Both sub-agents are running; I will report back."
    # Stub window: C is 3 s before stub 2; D (naive updated_datetime) is 2 s from stub 3.
    assert (stub2.is_stub, stub3.is_stub, follow.is_stub) == (True, True, False)
    assert [wp["headline"] for wp in stub2.stub_wfs] == ["Write the buying guide summary"]
    assert [wp["headline"] for wp in stub3.stub_wfs] == ["Summarise battery care"]
    assert stub2.answer == stub2.display_answer == ""  # never backfilled
    # Appendix: background order; G has no parseable time at all.
    assert [i.wp["headline"] for i in conv.appendix] == [
        "Price history lookup",
        "Check local dealer stock",
    ]
    assert conv.appendix[0].bg_uuid == thread.blocks["background_entries"][4]["uuid"]  # type: ignore[index]
    assert conv.appendix[0].updated.startswith("2031-06-10T07:20:00")


def test_limit_interrupted_thread() -> None:
    conv = fixture("Draft-chapter-two").parse()
    turn = conv.turns[0]
    assert turn.metadata.locked_reason == "spending_limit_exceeded"
    assert turn.metadata.wf_status == "WORKFLOW_AWAITING_NEXT_STEPS"
    (sub,) = turn.sub_agents
    assert (sub.status, sub.locked_reason) == (
        "WORKFLOW_AWAITING_NEXT_STEPS",
        "spending_limit_exceeded",
    )
    assert conv.appendix[0].locked_reason == "spending_limit_exceeded"
    assert conv.interruptions[0].headline == turn.query[:80] != turn.query
    assert conv.metadata["thread_status"] == "blocked"
    assert any("limit_interrupted" in w for w in conv.warnings)


def test_canceled_thread() -> None:
    conv = fixture("Rename-every-photo").parse()
    turn = conv.turns[0]
    assert turn.answer == "Answer skipped."  # short FINAL answers are valid
    assert turn.wf_block is not None and turn.wf_block["steps"] == []
    assert conv.interruptions[0].status == "WORKFLOW_CANCELED"


def test_answer_only_in_workflow_and_wait_for_subagents() -> None:
    conv = fixture("Summarise-the-meeting-notes").parse()
    first, second = conv.turns
    assert first.answer == ""
    assert first.display_answer.startswith("The notes cover three decisions")
    assert second.answer == "" and second.display_answer.startswith("Action items:")


def test_answer_variant_hit_and_near_miss() -> None:
    conv = fixture("Best-way-to-store-fresh-basil").parse()
    (record,) = conv.answer_variants
    assert record["entry_uuid"] == conv.turns[0].uuid
    assert record["selection_status"] == "SELECTED"
    assert record["experiment_override"] == {"override-default-model-class": "qwen3_instruct"}
    assert record["created_at"] == "2031-06-25T12:00:03Z"
    assert record["entry_updated"].startswith("2031-06-25T12:00:40")
    assert list(record)[:4] == ["entry_uuid", "sibling_uuid", "selection_status", "experiment_role"]
