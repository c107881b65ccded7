"""Threads as the live site serves them (protocol.md §9): every answer form with its sources,
real turn times and order, the §9.7 blocks, and a loud loss for a shape nobody knows."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pplx_export.archive.thread_json import build_thread_json
from pplx_export.models import Conversation
from pplx_export.parse import needs_blocks, parse_thread
from pplx_export.render import render_thread
from pplx_export.site.thread import merge_pages
from pplx_export.util.timefmt import us_to_iso
from tests import live_shapes as L

LINK_DEF = re.compile(r"^\[\\\[(\d+)\\\]\]: (\S+)$", re.MULTILINE)


def parse(plain: dict[str, Any], blocks: dict[str, Any] | None = None) -> Conversation:
    return parse_thread(plain, blocks, None, web_uuid=L.THREAD)


def link_defs(md: str) -> dict[int, str]:
    return {int(n): url for n, url in LINK_DEF.findall(md)}


@pytest.mark.parametrize(
    ("name", "form", "answers", "sources"),
    [
        ("object-text", "object", ["citric acid", "White vinegar"], [2, 1]),
        ("blocks-only", "blocks", ["retrogradation", "the fridge speeds staling"], [2, 1]),
        ("markdown-text", "text", ["three-line poem"], [0]),
        ("pro-search", "steps", ["in reverse"], [3]),
    ],
)
def test_every_answer_form_renders_its_answer_and_sources(
    name: str, form: str, answers: list[str], sources: list[int]
) -> None:
    plain, blocks = L.threads()[name]
    conv = parse(plain, blocks)
    assert [t.answer_form for t in conv.turns] == [form] * len(answers)
    assert [len(t.citations) for t in conv.turns] == sources
    assert all(t.losses == [] for t in conv.turns) and conv.warnings == []
    files = render_thread(conv)
    for turn, needle in zip(conv.turns, answers, strict=True):
        page = files[f"turns/turn_{turn.index:04d}.md"]
        assert needle in page and "(none)" not in page
        # Every [n] of the answer resolves to the source the form numbers n.
        markers = {int(n) for n in re.findall(r"\[\\\[(\d+)\\\]\]", page.split("## Citations")[0])}
        defs = link_defs(page)
        assert markers <= set(defs)
        for n in markers:
            assert defs[n] == turn.answer_sources[n - 1].url
    listed = json.loads(files["sources.json"])["sources"]
    assert len(listed) == len({c.url for t in conv.turns for c in t.citations})
    for citation in conv.citations:
        assert citation.url in files["sources.md"]


def test_the_answer_only_in_chunks_is_joined() -> None:
    plain, blocks = L.blocks_only()
    conv = parse(plain, blocks)
    assert conv.turns[1].answer == "No: the fridge speeds staling up [1]."


def test_blocks_only_entries_ask_for_the_schematized_response() -> None:
    plain, _ = L.blocks_only()
    row = {"displayModel": "pplx_pro"}
    assert needs_blocks(plain, row)
    assert not needs_blocks(L.pro_search(), row)  # it has its text and display_model


@pytest.mark.parametrize(
    ("name", "created"),
    [
        ("object-text", ["2024-03-14T09:12:44Z", "2024-03-14T09:15:02Z"]),  # updated_datetime
        ("blocks-only", ["2025-06-02T08:00:00Z", "2025-06-02T08:03:00Z"]),  # entry_created_…
    ],
)
def test_turn_times_come_from_the_fields_entries_carry(name: str, created: list[str]) -> None:
    plain, blocks = L.threads()[name]
    conv = parse(plain, blocks)
    assert [us_to_iso(t.created_us) for t in conv.turns] == created
    files = render_thread(conv)
    assert f'created: "{created[0]}"' in files["conversation.md"]
    assert f"# Turn 1 — {created[0][:10]} {created[0][11:16]} UTC" in files["turns/turn_0001.md"]


def test_created_us_wins_over_the_iso_fields() -> None:
    plain = L.object_text()
    plain["entries"][0]["created_us"] = 1_700_000_000_000_000
    assert parse(plain).turns[0].created_us == 1_700_000_000_000_000


def _long_thread() -> dict[str, Any]:
    plain = L.object_text()
    first = plain["entries"][0]
    plain["entries"] = []
    for n in range(7):
        entry = copy.deepcopy(first)
        entry["uuid"] = f"e0000009-0000-4000-8000-00000000000{n}"
        entry["query_str"] = f"question {n}"
        entry["updated_datetime"] = f"2024-03-14T09:1{n}:00.000000"
        plain["entries"].append(entry)
    return plain


def test_pages_newest_window_first_come_out_in_conversation_order_each_once() -> None:
    plain = _long_thread()
    pages = L.newest_window_first(plain, 3)
    assert [e["query_str"] for e in pages[0]["entries"]] == [
        "question 4",
        "question 5",
        "question 6",
    ]
    # A server that repeats an entry on the next page: kept once.
    pages[1]["entries"].append(copy.deepcopy(pages[0]["entries"][0]))
    conv = parse(merge_pages(pages))
    assert [t.query for t in conv.turns] == [f"question {n}" for n in range(7)]
    assert [t.index for t in conv.turns] == list(range(1, 8))


def test_pro_search_blocks_show_once_with_related_media_and_source_rows() -> None:
    conv = parse(L.pro_search())
    (turn,) = conv.turns
    page = render_thread(conv)["turns/turn_0001.md"]
    # The plan: the `plan` field and the two blocks list the same goal; shown once.
    assert "Plan (1)" in page and page.count("Explain the defrost cycle") == 1
    # The steps come from `text`; the `pro_search_steps` copy adds nothing.
    assert [s.step_type for s in turn.steps] == ["INITIAL_QUERY", "SEARCH_WEB", "FINAL"]
    assert "heat pump defrost cycle" not in page
    assert (
        "## Related\n\n- How long does a defrost cycle last?\n- Do heat pumps work at -20 °C?"
        in page
    )
    assert (
        "- [Frosted outdoor unit](https://images.example.org/frost.jpg) (image)"
        " — [example.org](https://example.org/defrost)"
    ) in page
    assert "- [Defrost cycle explained](https://video.example.com/defrost) (video)" in page
    # The `sources_answer_mode` row is a source of the turn.
    assert "https://example.net/reversing-valve" in [c.url for c in turn.citations]
    assert dict(conv.drift.counts) == {}


def test_steps_of_a_blocks_only_pro_search_come_from_its_block() -> None:
    plain = L.pro_search()
    del plain["entries"][0]["text"]
    conv = parse(plain)
    (turn,) = conv.turns
    assert turn.answer_form == "blocks"
    assert [s.step_type for s in turn.steps] == [
        "INITIAL_QUERY",
        "SEARCH_WEB",
        "SEARCH_RESULTS",
        "TERMINATE",
    ]
    page = render_thread(conv)["turns/turn_0001.md"]
    assert "heat pump defrost cycle" in page and "in reverse" in page
    assert dict(conv.drift.counts) == {}


def test_unknown_block_usages_and_step_content_keys_are_drift() -> None:
    plain = L.pro_search()
    blocks = plain["entries"][0]["blocks"]
    blocks.append({"intended_usage": "shopping_mode", "shopping_block": {"items": []}})
    blocks[1]["plan_block"]["steps"].append(
        {"uuid": "p5", "step_type": "SEARCH_WEB", "search_web_v2_content": {"queries": []}}
    )
    drift = dict(parse(plain).drift.counts)
    assert drift == {"block_usage:shopping_mode": 1, "step_content:search_web_v2_content": 1}


def test_an_answer_in_a_shape_nobody_knows_is_a_loss_not_none() -> None:
    conv = parse(L.unknown_shape())
    (turn,) = conv.turns
    assert [(loss.kind, loss.where) for loss in turn.losses] == [
        ("answer", "text.response.answer_markdown"),
        ("sources", "text.response.cited_pages.web_results"),
    ]
    assert len(conv.warnings) == 2 and all("turn 1" in w for w in conv.warnings)
    page = render_thread(conv)["turns/turn_0001.md"]
    assert "(none)" not in page
    assert "⚠ Answer not read" in page and "`text.response.answer_markdown`" in page
    assert "⚠ Sources not read" in page
    conversation = render_thread(conv, "zh")["conversation.md"]
    assert "回答未能读取" in conversation
    doc = build_thread_json(conv, None, exported_at=None)
    assert doc["losses"] == 2
    assert doc["loss_details"][0] == {
        "turn": 1,
        "kind": "answer",
        "where": "text.response.answer_markdown",
        "size": 55,
    }


@pytest.mark.parametrize("name", ["object-text", "blocks-only", "markdown-text", "pro-search"])
def test_each_known_form_moved_out_of_reach_is_a_loss(name: str) -> None:
    """The same entries with the answer renamed to a key no form reads: each turn reports
    its loss (the check does not share the parser's knowledge of the forms)."""
    plain, blocks = L.threads()[name]
    text = json.dumps([plain, blocks])
    text = text.replace('"answer"', '"answer_v9"').replace('"ask_text', '"ask_reply')
    text = text.replace('\\"answer\\"', '\\"answer_v9\\"')
    text = text.replace('"text": "A haiku', '"body_markdown": "A haiku')
    plain, blocks = json.loads(text)
    conv = parse(plain, blocks)
    for turn in conv.turns:
        assert turn.answer == "" and [loss.kind for loss in turn.losses][:1] == ["answer"], turn


def test_a_known_answer_with_no_sources_is_not_a_loss() -> None:
    conv = parse(L.plain_markdown_text())
    assert conv.turns[0].losses == []


def test_a_thread_with_a_title_slug_is_linked_by_it() -> None:
    plain = L.object_text()
    for entry in plain["entries"]:
        entry["thread_url_slug"] = "descaling-a-kettle-Xs6pxUAfRwqwP8Wg0SsM6Q"  # = L.THREAD
    conv = parse_thread(plain, None, None)
    assert conv.web_uuid == L.THREAD
    assert conv.url == "https://www.perplexity.ai/search/descaling-a-kettle-Xs6pxUAfRwqwP8Wg0SsM6Q"
    assert parse(L.object_text()).url == f"https://www.perplexity.ai/search/{L.THREAD}"


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["answer", "chunks", "web_results", "url", "text", "markdown_block", "blocks"]
            )
            | st.text(max_size=6),
            inner,
            max_size=4,
        )
    ),
    max_leaves=16,
)


_ANSWERS = (
    st.text("abcdefgh ", min_size=1, max_size=12).filter(str.strip).map(lambda a: {"answer": a})
)
# An answer hidden one or two levels down where no form reads it (a loss), or where one does.
_HIDDEN = st.recursive(
    _ANSWERS,
    lambda inner: (
        st.lists(inner, min_size=1, max_size=2)
        | st.dictionaries(st.sampled_from(["response", "data", "result"]), inner, min_size=1)
    ),
    max_leaves=3,
)


@settings(max_examples=300, deadline=None)
@example(name="object-text", field="text", value=[{"answer": "hidden"}])
@example(name="blocks-only", field="text", value=json.dumps({"data": {"answer": "hidden"}}))
@given(
    name=st.sampled_from(sorted(L.threads())),
    field=st.sampled_from(["text", "blocks", "plan", "related_queries", "updated_datetime"]),
    value=_JSONISH | _JSONISH.map(json.dumps) | _HIDDEN | _HIDDEN.map(json.dumps),
)
def test_odd_values_in_the_live_fields_never_crash_and_never_lose_silently(
    name: str, field: str, value: Any
) -> None:
    plain, blocks = copy.deepcopy(L.threads()[name])
    plain["entries"][0][field] = value
    conv = parse(plain, blocks)
    render_thread(conv)
    turn = next(t for t in conv.turns if t.uuid == plain["entries"][0]["uuid"])
    # An answer string anywhere in the entry is shown or reported, never dropped in silence.
    if _holds_an_answer(plain["entries"][0]):
        assert turn.answer.strip() or [loss.kind for loss in turn.losses][:1] == ["answer"]


def _holds_an_answer(value: Any) -> bool:
    """A non-blank `answer` string anywhere in `value`, JSON strings decoded."""
    if isinstance(value, str):
        try:
            return _holds_an_answer(json.loads(value)) if value.lstrip()[:1] in "{[" else False
        except ValueError:
            return False
    if isinstance(value, list):
        return any(_holds_an_answer(v) for v in value)
    if isinstance(value, dict):
        answer = value.get("answer")
        if isinstance(answer, str) and answer.strip() and answer.lstrip()[:1] not in "{[":
            return True
        return any(_holds_an_answer(v) for v in value.values())
    return False
