"""Every fact once (issue 34, point 2), counted on every page the project ships.

One header quote per page; one status line per background run; no label the step's own
heading already says; no todo change that only restates the list; no free-text flag twice;
no computer/council plan goal that is a step's title on the same page; and a work
process's `steps: N` is the number of steps the page shows.
"""

from __future__ import annotations

import re

from tests.reading_support import all_pages, tokens

STEPS_N = re.compile(r"^## Work process \(steps: (\d+)", re.MULTILINE)
STEP_HEAD = re.compile(r"^### Step \d+(?: · (.*?))?(?: \(`[^`]*`\))?(?: — .*)?$", re.MULTILINE)


def _pages() -> list[tuple[str, str, str]]:
    return list(all_pages())


def test_one_header_quote_per_page() -> None:
    for name, rel, text in _pages():
        toks = tokens(text)
        first_h2 = next(
            (i for i, t in enumerate(toks) if t.type == "heading_open" and t.tag == "h2"),
            len(toks),
        )
        quotes = [t for t in toks[:first_h2] if t.type == "blockquote_open"]
        assert len(quotes) == 1, (name, rel, len(quotes))
        head = text.split("\n> ", 1)[1].split("\n", 1)[0]
        # The mode is said once on the line (it was twice: nav line and facts quote).
        assert head.count(" · ") >= 1 and "Mode:" not in head, (name, rel, head)


def test_one_status_line_per_background_run() -> None:
    runs = 0
    for name, rel, text in _pages():
        if rel != "conversation.md" or "## Background tasks" not in text:
            continue
        appendix = text.split("## Background tasks", 1)[1].split("\n## ", 1)[0]
        folds = appendix.split("<summary>🤖 Background task")[1:]
        for fold in folds:
            runs += 1
            # The run's own fold, up to the next run's launcher line or fold.
            own = fold.split("\n</details>\n\n>", 1)[0]
            assert own.count("> Status: ") == 1, (name, own[:300])
            assert " → ?" not in own.split("\n\n", 2)[1], (name, own[:300])
        outside = re.sub(r"<details>.*?</details>", "", appendix, flags=re.DOTALL)
        assert "Status:" not in outside, (name, outside[:300])
    assert runs >= 3


def test_no_label_repeats_its_step_heading() -> None:
    for name, rel, text in _pages():
        for label in ("Searching", "Asked the user"):
            heading_then_label = re.compile(
                rf"(### Step \d+ · {label}[^\n]*|\*\*{label}[^\n*]*\*\*[^\n]*)\n\n\*\*{label}:\*\*"
            )
            assert not heading_then_label.search(text), (name, rel, label)


def test_free_text_is_said_once_per_question() -> None:
    seen = 0
    for name, rel, text in _pages():
        for question in re.split(r"\n\n(?=\d+\. \*\*)", text):
            if "free-text answer allowed" in question.split("\n\n", 1)[0]:
                seen += 1
                assert question.split("\n\n", 1)[0].count("free-text answer allowed") == 1, (
                    name,
                    rel,
                    question[:200],
                )
    assert seen >= 2


def test_todo_changes_say_only_what_the_list_does_not() -> None:
    for name, rel, text in _pages():
        for block in text.split("\n\n*Changes:*\n\n")[1:]:
            listed = text.split("\n\n*Changes:*\n\n")[0]
            for line in block.split("\n\n", 1)[0].split("\n"):
                m = re.fullmatch(r"- added: (.*) → `PENDING`", line)
                if m:
                    assert f"- [ ] {m.group(1)}" not in listed, (name, rel, line)


def test_computer_plans_show_only_goals_that_are_not_step_titles() -> None:
    checked = 0
    for name, rel, text in _pages():
        if not rel.startswith("turns/") or "<summary>Plan (" not in text:
            continue
        if not re.search(r'^mode: "(computer|council)"', text, re.MULTILINE):
            continue
        titles = {m.group(1).strip() for m in STEP_HEAD.finditer(text) if m.group(1)}
        plan = text.split("<summary>Plan (", 1)[1].split("</details>", 1)[0]
        for goal in re.findall(r"^\d+\. (.*)$", plan, re.MULTILINE):
            checked += 1
            assert goal.strip() not in titles, (name, rel, goal)
    assert checked >= 1


def test_steps_n_counts_the_steps_shown() -> None:
    counted = 0
    for name, rel, text in _pages():
        m = STEPS_N.search(text)
        if not m or not rel.startswith("turns/"):
            continue
        section = text[m.end() :].split("\n## ", 1)[0]
        shown = len(re.findall(r"^### Step \d+", section, re.MULTILINE))
        assert int(m.group(1)) == shown, (name, rel, m.group(0), shown)
        counted += 1
    assert counted > 10


LAUNCHER = re.compile(r"^> `run_subagent` (.*?)(?: — .*)?$", re.MULTILINE)


def test_no_launcher_line_repeats_the_runs_own_title() -> None:
    # The run's heading or fold says "Sub-agent: <title>"; a launcher line saying the same
    # title again under it (or just above its fold) is the fact twice.
    launchers = 0
    for name, rel, text in _pages():
        for m in LAUNCHER.finditer(text):
            launchers += 1
            title = m.group(1).strip()
            before = text[: m.start()].rstrip().rsplit("\n", 3)[-3:]
            after = text[m.end() :].lstrip().split("\n", 2)[:2]
            near = [line for line in [*before, *after] if "Sub-agent" in line or "task" in line]
            assert not any(f": {title}" in line for line in near), (name, rel, title)
    assert launchers >= 1  # the corpus's runs whose launcher says something else stay


def test_a_pro_search_end_marker_is_not_a_placeholder() -> None:
    for name, rel, text in _pages():
        assert "**TERMINATE**" not in text, (name, rel)


def test_a_notification_turn_is_its_note_alone_in_the_conversation() -> None:
    # A subagent_result turn has no query or answer of its own; the conversation view
    # says where its work is, not "(empty)" and "(none)" under two headings.
    notes = 0
    for name, rel, text in _pages():
        if rel != "conversation.md":
            continue
        assert "### Query\n\n(empty)\n\n### Answer\n\n(none)" not in text, (name, rel)
        notes += text.count("is in [its turn file]")
    assert notes >= 2


def test_a_chinese_page_drops_the_label_an_english_step_title_says() -> None:
    from pplx_export.render.labels import EN, ZH
    from pplx_export.render.tree import drop_repeated_label

    body = f"**{ZH.searching}{ZH.colon}**\n\n- q"
    assert drop_repeated_label(ZH, "Searching the web", body) == "- q"
    assert drop_repeated_label(ZH, f"{ZH.searching}网页", body) == "- q"
    assert drop_repeated_label(ZH, "Reading pages", body) == body
    asked = f"**{ZH.asked_user}{ZH.colon}** which?"
    assert drop_repeated_label(ZH, "Asked the user", asked) == "which?"
    assert drop_repeated_label(EN, "Searching", f"**{EN.searching}:** x") == "x"
