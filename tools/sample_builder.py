"""Build the bundled sample library (`emulator/sample/`). Content written for this project.

Regenerate after editing: `python -m tools.sample_builder` (deterministic:
same code, same bytes). The sample is laid out as an archive, so the emulator serves it the
way it serves any archive; `_emulator.json` marks the deleted/expired threads, the expired
asset and the report bodies. docs/emulator.md lists what each thread exercises.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.sample_shapes import (
    AUTHOR,
    assets_block,
    epoch_s,
    final,
    final_snapshot_only,
    initial_query,
    markdown_block,
    naive,
    plain_entry,
    plan_block,
    queries_item,
    schematized,
    search_results,
    search_web,
    slugify,
    sources_item,
    step,
    text_item,
    uid,
    web_result,
    web_results_block,
    wf_step,
    workflow_block,
    workflow_item,
    workflow_payload,
)

JSON = dict[str, Any]
CDN = "https://cdn.example.com/emu"

SPACE_OCEAN = {"uuid": uid("space:ocean"), "title": "Ocean Notes", "slug": "ocean-notes-4b1e0a"}
SPACE_KITCHEN = {"uuid": uid("space:kitchen"), "title": "Kitchen Lab", "slug": "kitchen-lab-9c7d21"}
# Shared with other members (bob writes there too) and, below, one alice can no longer see.
SPACE_GARDEN = {"uuid": uid("space:garden"), "title": "Garden Club", "slug": "garden-club-2f81c4"}
SPACE_ROADMAP = {"uuid": uid("space:roadmap"), "title": "Team Roadmap",
                 "slug": "team-roadmap-7a3e55"}  # fmt: skip
OTHER_AUTHOR = "bob"
SPACE_PEOPLE = {
    "alice": {"username": "alice", "email": "alice@example.com", "name": "Alice Example"},
    "bob": {"username": "bob", "email": "bob@example.com", "name": "Bob Rivera"},
    "carol": {"username": "carol", "email": "carol@example.com", "name": "Carol Diaz"},
    "dave": {"username": "dave", "email": "dave@example.com", "name": "Dave Okafor"},
    "erin": {"username": "erin", "email": "erin@example.com", "name": "Erin Walsh"},
}
SPACE_ROLES: dict[str, tuple[str, list[tuple[str, int]]]] = {
    # space uuid -> (owner, [(contributor, permission)]): 3 can manage, 2 can edit, 1 can view
    SPACE_GARDEN["uuid"]: ("alice", [("dave", 3), ("bob", 2), ("carol", 1)]),
    SPACE_ROADMAP["uuid"]: ("erin", [("bob", 2)]),
}
EMOJI = {SPACE_OCEAN["uuid"]: "1f30a", SPACE_GARDEN["uuid"]: "1f331",
         SPACE_ROADMAP["uuid"]: "1f5fa"}  # fmt: skip


@dataclass
class SampleThread:
    key: str
    title: str
    mode: str
    last_updated: str
    plain: JSON
    blocks: JSON | None = None
    space: JSON | None = None
    report_info: JSON | None = None
    author: str = AUTHOR
    slug: str = ""  # a pre-2026 title slug (§9.4); new threads' slug is their UUID

    @property
    def uuid(self) -> str:
        return uid(f"thread:{self.key}")

    @property
    def context_uuid(self) -> str:
        return uid(f"ctx:{self.key}")


def _collection_info(space: JSON) -> JSON:
    owner, members = SPACE_ROLES.get(space["uuid"], (AUTHOR, []))
    return {
        "uuid": space["uuid"],
        "slug": space["slug"],
        "title": space["title"],
        "description": f"Threads collected under {space['title']}.",
        "emoji": EMOJI.get(space["uuid"], "1f9c2"),
        "access": 1,
        "user_permission": 4,
        "max_contributors": 5,
        "owner_user": {**SPACE_PEOPLE[owner], "permission": 4},
        "contributor_users": [{**SPACE_PEOPLE[name], "permission": p} for name, p in members],
    }


def _meta(title: str, mode: str, created: str, updated: str, **extra: Any) -> JSON:
    meta: JSON = {
        "created_at": naive(created),
        "updated_at": naive(updated),
        "title": title,
        "mode": mode,
        "thread_status": "completed",
        "thread_status_summary": None,
        "thread_status_summary_enum": None,
        "locked_reason": None,
        "crons": None,
        "wake_at": None,
        "subscribe_entry_uuids": None,
        "local_workspace_directories": None,
        "sensitive_claims_visibility": None,
        "workflow_snapshots": None,
    }
    meta.update(extra)
    return meta


def _entry(t: SampleThread, n: int, query: str, steps: list[JSON], created: str, updated: str,
           search_mode: str, model: str, **extra: Any) -> JSON:  # fmt: skip
    if t.space is not None:
        extra.setdefault("collection_info", _collection_info(t.space))
    return plain_entry(
        thread_uuid=t.uuid,
        entry_uuid=uid(f"entry:{t.key}:{n}"),
        backend_uuid=t.uuid if n == 1 else uid(f"backend:{t.key}:{n}"),
        context_uuid=t.context_uuid,
        query=query,
        steps=steps,
        created=created,
        updated=updated,
        search_mode=search_mode,
        display_model=model,
        title=t.title,
        **extra,
    )


# -- search ----------------------------------------------------------------------------------


def tides() -> SampleThread:
    t = SampleThread(
        "tides", "How do tides work?", "search", "2026-11-02T08:14:05.120334Z", {}, None,
        SPACE_OCEAN,
    )  # fmt: skip
    results = [
        web_result("Tides and the Moon", "https://ocean.example.org/tides-moon",
                   "The Moon's gravity pulls the ocean into two bulges.", "2025-03-14"),
        web_result("Spring and neap tides explained", "https://coast.example.net/spring-neap",
                   "When Sun and Moon align, tidal ranges are largest.", "2024-09-02"),
        web_result("Why there are two high tides a day", "https://physics.example.edu/two-tides",
                   "The far-side bulge comes from the difference in pull across Earth."),
    ]  # fmt: skip
    answer = (
        "Tides are long waves driven mainly by the **Moon's gravity**, with the Sun adding about "
        "half as much again.[1]\n\n"
        "- The pull is stronger on the near side of Earth and weaker on the far side, so the "
        "ocean forms two bulges and most coasts see two high tides a day.[3]\n"
        "- When Sun and Moon line up (new and full moon) the bulges add up: **spring tides**. "
        "At quarter moons they partly cancel: **neap tides**.[2]\n\n"
        "The tidal force falls off with the cube of distance, $F \\propto 1/d^3$, which is why "
        "the nearby Moon beats the far more massive Sun."
    )
    steps = [
        initial_query(t.title),
        search_web("how do tides work", "spring neap tides"),
        search_results(results),
        final(answer, results),
    ]
    created = "2026-11-02T08:13:51.004211Z"
    t.plain = {
        "thread_metadata": _meta(t.title, "1", created, t.last_updated),
        "entries": [_entry(t, 1, t.title, steps, created, t.last_updated, "SEARCH", "pplx_pro")],
        "background_entries": [],
    }
    return t


def basil() -> SampleThread:
    """Answer-variant hit on turn 1 (SELECTED sibling); turn 2 is a control row (not a hit)."""
    t = SampleThread(
        "basil", "Best way to keep fresh basil", "search", "2026-10-21T17:03:44.508812Z", {},
        None, SPACE_KITCHEN,
    )  # fmt: skip
    a1 = (
        "Treat basil like cut flowers: trim the stems, stand them in a glass of water at room "
        "temperature, and loosely cover the leaves. Avoid the fridge: below about 10 °C the "
        "leaves blacken within a day."
    )
    a2 = (
        "Yes. Blanch the leaves for a few seconds, chill them in ice water, dry them, then "
        "freeze them flat or blended with olive oil in an ice-cube tray."
    )
    c1, u1 = "2026-10-21T17:01:02.000100Z", "2026-10-21T17:01:19.402000Z"
    c2 = "2026-10-21T17:03:30.117000Z"
    e1 = _entry(
        t, 1, t.title, [initial_query(t.title), final(a1)], c1, u1, "SEARCH", "pplx_pro",
        side_by_side_metadata={
            "experiment_role": "override-default-model-class:emu_instruct-3f2a1",
            "sibling_uuid": uid("basil:sibling"),
            "experiment_override": {"override-default-model-class": "emu_instruct"},
            "selection_status": "SELECTED",
            "execution_log": {},
            "selected_at": "2026-10-21T17:01:25.000000Z",
        },
    )  # fmt: skip
    q2 = "Can I freeze it?"
    e2 = _entry(
        t, 2, q2, [initial_query(q2), final(a2)], c2, t.last_updated, "SEARCH", "pplx_pro",
        query_source="followup",
        side_by_side_metadata={
            "experiment_role": "[control]default-model-class:emu_base",
            "sibling_uuid": uid("basil:sibling2"),
            "selection_status": "SELECTION_STATUS_UNSPECIFIED",
            "execution_log": {},
        },
    )  # fmt: skip
    t.plain = {
        "thread_metadata": _meta(t.title, "1", c1, t.last_updated),
        "entries": [e1, e2],
        "background_entries": [],
    }
    return t


SOURDOUGH_TURNS = [
    ("I want to bake sourdough on Saturday. When should I feed my starter?",
     "Feed it Friday evening at a 1:5:5 ratio (starter:flour:water); it will peak by morning."),
    ("My kitchen is about 19 °C. Does that change anything?",
     "Yes: at 19 °C fermentation is slower. Use 1:3:3 instead, or feed an hour or two earlier."),
    ("How do I know the starter has peaked?",
     "It has roughly doubled, its top is domed or just flattening, and a spoonful floats."),
    ("What hydration should a first loaf use?",
     "Start at 70 %: 350 g water to 500 g flour. It is forgiving and still opens up nicely."),
    ("How long is the autolyse?",
     "Thirty to sixty minutes of just flour and water, before adding starter and salt."),
    ("How many stretch-and-folds?",
     "Four sets, thirty minutes apart, during the first two hours of bulk fermentation."),
    ("When does bulk fermentation end?",
     "When the dough has grown by 50-75 %, is domed, jiggly and shows bubbles at the sides."),
    ("Can I retard it in the fridge overnight?",
     "Yes. Shape, cover and refrigerate for 12-16 hours; bake straight from the fridge."),
    ("What oven temperature?",
     "Preheat a Dutch oven to 250 °C; bake 20 minutes covered, then 20-25 uncovered at 230 °C."),
    ("The crust came out pale. Why?",
     "Usually over-fermentation (sugars used up) or too short an uncovered bake. Bake longer."),
    ("And the crumb was gummy?",
     "Slice only after the loaf has cooled for at least an hour; the crumb is still setting."),
    ("Write the whole schedule as a checklist.",
     "- Fri 21:00 feed starter\n- Sat 08:00 autolyse\n- 09:00 mix\n- 09:30-11:00 folds\n"
     "- ~14:00 shape, fridge\n- Sun 08:00 bake"),
]  # fmt: skip


def sourdough() -> SampleThread:
    """Twelve turns: three pages at the default page size of 5."""
    t = SampleThread(
        "sourdough", "Planning a sourdough schedule", "search", "2026-11-12T19:40:00.250001Z",
        {}, None, SPACE_KITCHEN,
    )  # fmt: skip
    entries = []
    for n, (query, answer) in enumerate(SOURDOUGH_TURNS, start=1):
        created = f"2026-11-12T18:{10 + 2 * n:02d}:00.000000Z"
        updated = t.last_updated if n == len(SOURDOUGH_TURNS) else created.replace(":00.", ":09.")
        entries.append(
            _entry(t, n, query, [initial_query(query), final(answer)], created, updated,
                   "SEARCH", "experimental",
                   query_source="default" if n == 1 else "followup")
        )  # fmt: skip
    t.plain = {
        "thread_metadata": _meta(t.title, "1", "2026-11-12T18:12:00Z", t.last_updated),
        "entries": entries,
        "background_entries": [],
    }
    return t


def simple_search(key: str, title: str, last_updated: str, answer: str) -> SampleThread:
    t = SampleThread(key, title, "search", last_updated, {})
    created = last_updated[:14] + "00:00.000000Z"
    t.plain = {
        "thread_metadata": _meta(title, "1", created, last_updated),
        "entries": [
            _entry(
                t,
                1,
                title,
                [initial_query(title), final(answer)],
                created,
                last_updated,
                "SEARCH",
                "pplx_pro",
            )
        ],
        "background_entries": [],
    }
    return t


# -- deep research ---------------------------------------------------------------------------

REPORT_V1 = """# Heat pumps in cold climates (draft)

Air-source heat pumps keep working well below freezing; efficiency drops as it gets colder.

## Findings so far

- Cold-climate models report a COP of about 2 at -15 °C.
- Backup resistance heat is rarely needed above -20 °C.
"""

REPORT_V2 = """# Heat pumps in cold climates

Modern cold-climate air-source heat pumps heat homes efficiently down to about -25 °C.

## Key findings

1. **Efficiency.** The coefficient of performance falls from about 4 at +7 °C to about 2 at
   -15 °C, still twice as efficient as resistance heating.
2. **Sizing.** Size for the 99th-percentile design temperature, not the record low.
3. **Defrost.** Defrost cycles cost 5-10 % of seasonal output in humid cold climates.

## Estimating running cost

Seasonal energy use is roughly $E = Q / \\overline{COP}$, where $Q$ is the heat demand.

## Caveats

Field data from very cold, windy sites remain sparse.
"""


def heat_pumps() -> SampleThread:
    t = SampleThread(
        "heat-pumps", "Do heat pumps work in cold climates?", "deep-research",
        "2026-11-18T10:22:31.777001Z", {},
    )  # fmt: skip
    created = "2026-11-18T10:02:00.000000Z"
    results = [
        web_result("Cold-climate heat pump field study", "https://energy.example.gov/ccashp",
                   "Measured COP across 40 homes in winter.", "2025-12-01"),
        web_result("Sizing heat pumps for design temperature", "https://hvac.example.com/sizing",
                   "Use the 99th-percentile design temperature.", "2024-10-10"),
        web_result("Defrost losses in humid climates", "https://research.example.edu/defrost",
                   "Defrost cycles reduce seasonal output by 5-10 %."),
    ]  # fmt: skip
    report_file = "heat-pump-report.md"
    answer = (
        "Yes. Cold-climate air-source heat pumps keep heating efficiently well below freezing; "
        "the full report covers efficiency curves, sizing and defrost losses.[1][2][3]\n\n"
        "In short, expect a coefficient of performance near \\( COP \\approx 2 \\) at -15 °C."
    )
    steps = [
        initial_query(t.title),
        search_web("cold climate heat pump COP field data", "heat pump sizing design temperature"),
        search_results(results),
        step("CODE", {"goal_id": "1", "language": "python",
                      "script": "cop = {7: 4.0, -7: 2.8, -15: 2.0}\nprint(min(cop.values()))",
                      "stdout": "2.0\n", "stderr": ""}),
        step("CREATE_CHART", {"goal_id": "1", "caption": "COP against outdoor temperature"}),
        step("RESEARCH_ANSWER", {"goal_id": None, "title": "Heat pumps in cold climates",
                                 "file_name": report_file,
                                 "url": f"https://files.example.com/reports/{report_file}"}),
        final(answer, results),
    ]  # fmt: skip
    entry = _entry(t, 1, t.title, steps, created, t.last_updated, "RESEARCH", "pplx_alpha")
    report_assets = [
        {
            "uuid": uid(f"asset:report:{v}"),
            "asset_type": "RESEARCH_REPORT",
            "research_report": {"url": f"{CDN}/{v}/{report_file}", "filename": report_file},
            "download_info": [{"filename": report_file, "url": f"{CDN}/{v}/{report_file}",
                               "is_exportable": True}],
            "created_at": epoch_s(when),
        }
        for v, when in (("v1", "2026-11-18T10:15:00Z"), ("v2", "2026-11-18T10:22:00Z"))
    ]  # fmt: skip
    expired_pdf = {
        "uuid": uid("asset:field-measurements"),
        "asset_type": "PDF_FILE",
        "pdf_file": {"url": f"{CDN}/field-measurements.pdf", "filename": "field-measurements.pdf",
                     "name": "field-measurements"},
        "download_info": [{"filename": "field-measurements.pdf",
                           "url": f"{CDN}/field-measurements.pdf", "is_exportable": True}],
        "created_at": epoch_s("2026-11-18T10:12:00Z"),
    }  # fmt: skip
    blocks = [
        plan_block("Collect field measurements of cold-climate heat pumps.",
                   "Compare efficiency at different outdoor temperatures.",
                   "Summarise sizing and defrost guidance."),
        markdown_block(answer),
        web_results_block(results),
        assets_block([*report_assets, expired_pdf]),
    ]  # fmt: skip
    t.plain = {
        "thread_metadata": _meta(t.title, "2", created, t.last_updated),
        "entries": [entry],
        "background_entries": [],
    }
    t.blocks = {
        "thread_metadata": t.plain["thread_metadata"],
        "entries": [schematized(entry, blocks, created=created, updated=t.last_updated)],
        "background_entries": [],
    }
    t.report_info = {
        "title": "Heat pumps in cold climates",
        "file_name": report_file,
        "url": f"https://files.example.com/reports/{report_file}",
    }
    return t


# -- computer --------------------------------------------------------------------------------


def _background(
    t: SampleThread,
    name: str,
    run_id: str,
    headline: str,
    objective: str,
    answer: str,
    *,
    started: str,
    completed: str,
    status: str = "WORKFLOW_COMPLETED",
    locked_reason: str | None = None,
) -> tuple[JSON, JSON]:
    """A plain + schematized background entry pair for one sub-agent run (protocol §3.8)."""
    bg_uuid = uid(f"bg:{t.key}:{name}")
    sources = [
        web_result(f"{headline}: reference", f"https://docs.example.org/{name}",
                   f"Notes gathered for: {headline}."),
    ]  # fmt: skip
    work_steps = [
        wf_step(uid(f"bgstep:{t.key}:{name}:1"), "Searching", [
            queries_item(uid(f"bgq:{t.key}:{name}"), f"{headline} comparison"),
            sources_item(uid(f"bgs:{t.key}:{name}"), sources),
        ], started=started, completed=started, tool_name="search_web", icon="search"),
    ]  # fmt: skip
    if status == "WORKFLOW_COMPLETED":
        work_steps.append(
            wf_step(uid(f"bgstep:{t.key}:{name}:2"), "", [
                text_item(uid(f"bga:{t.key}:{name}"), answer, "answer")
            ], started=completed, completed=completed)
        )  # fmt: skip
    payload = workflow_payload(
        run_id, headline, work_steps, status=status, started=started,
        completed=completed if status == "WORKFLOW_COMPLETED" else "", objective=[objective],
    )  # fmt: skip
    root = workflow_block(
        [
            wf_step(run_id, headline, [], started=started, completed=started,
                    tool_name="run_subagent", icon="subagent"),
            wf_step(f"{run_id}:workflow", "", [workflow_item(payload)], status=status,
                    unnest_items=True),
        ],
        status, started=started, completed=completed if status == "WORKFLOW_COMPLETED" else "",
    )  # fmt: skip
    plain_steps = [
        initial_query(""),
        step("ASI_TOOL_INPUT", {"goal_id": "0", "timestamp": started,
                                "workflow_items": [queries_item("q", f"{headline} comparison")],
                                "workflow_snapshots": []}, run_id),
        step("ASI_TOOL_OUTPUT", {"goal_id": "0", "timestamp": completed or started,
                                 "workflow_items": [sources_item("s", sources)],
                                 "workflow_snapshots": []}, run_id),
    ]  # fmt: skip
    if status == "WORKFLOW_COMPLETED":
        plain_steps.append(final(answer, sources))
    updated = completed or started
    plain = _entry(
        t, 0, "", plain_steps, started, updated, "ASI", "pplx_asi_opus",
        is_background=True, query_source="scheduled", locked_reason=locked_reason,
        status="BLOCKED" if locked_reason else "COMPLETED",
    )  # fmt: skip
    plain["uuid"] = plain["backend_uuid"] = plain["frontend_uuid"] = bg_uuid
    plain.pop("collection_info", None)
    schem = schematized(plain, [root], created=started, updated=updated)
    return plain, schem


def site_generators() -> SampleThread:
    """Anchored sub-agent (turn 1), stub-attributed one (turn 2), unassigned one (appendix);
    PNG chart, DOCX, inline code and a handle-only workspace file as assets."""
    t = SampleThread(
        "ssg", "Compare static site generators for a small blog", "computer",
        "2026-11-20T15:05:12.004512Z", {}, None, SPACE_OCEAN,
    )  # fmt: skip
    q1 = "Compare Hugo, Eleventy and Jekyll for a small personal blog and recommend one."
    q3 = "Turn the recommendation into a one-page checklist."
    c1, u1 = "2026-11-20T14:40:00.000000Z", "2026-11-20T14:47:30.000000Z"
    c2 = "2026-11-20T14:58:34.500000Z"  # 4.5 s after run B completed: the stub window
    c3, u3 = "2026-11-20T15:04:00.000000Z", t.last_updated
    run_a, run_b, run_c = "toolu_emuAnchored0001", "toolu_emuStubbed00002", "toolu_emuOrphan000003"
    answer1 = (
        "**Recommendation: Hugo.** It built the 200-post test site in 0.8 s (Eleventy 2.1 s, "
        "Jekyll 6.4 s), ships as a single binary and has mature themes. Choose Eleventy if you "
        "want to stay in JavaScript."
    )
    answer3 = (
        "- [ ] Install Hugo (single binary)\n- [ ] `hugo new site blog`\n- [ ] Pick a theme\n"
        "- [ ] Write the first post\n- [ ] Deploy to a static host"
    )
    bench = "#!/bin/sh\nfor g in hugo eleventy jekyll; do /usr/bin/time -p ./build-$g.sh; done\n"
    anchored_payload = workflow_payload(
        run_a, "Benchmark build times",
        [wf_step(uid("ssg:a:1"), "Running benchmarks", [
            text_item(uid("ssg:a:t"), bench, header="Input"),
            text_item(uid("ssg:a:o"), "hugo 0.8s\neleventy 2.1s\njekyll 6.4s", header="Output"),
        ], started="2026-11-20T14:41:10Z", completed="2026-11-20T14:45:50Z", tool_name="bash",
            icon="code_execute"),
         wf_step(uid("ssg:a:2"), "", [text_item(uid("ssg:a:ans"),
                 "Hugo 0.8 s, Eleventy 2.1 s, Jekyll 6.4 s for 200 posts.", "answer")])],
        status="WORKFLOW_COMPLETED", started="2026-11-20T14:41:00Z",
        completed="2026-11-20T14:46:10Z",
        objective=["Build the same 200-post site with Hugo, Eleventy and Jekyll ",
                   "and report the build times."],
    )  # fmt: skip
    wf1 = workflow_block([
        wf_step(uid("ssg:1:think"), "", [text_item(uid("ssg:1:tt"),
                "I will compare build speed, ecosystem and maintenance effort.", "thinking")],
                started=c1, completed="2026-11-20T14:40:05Z"),
        wf_step("toolu_emuSearch000001", "Searching the web", [
            queries_item(uid("ssg:1:q"), "hugo vs eleventy vs jekyll 2026"),
            sources_item(uid("ssg:1:s"), [
                web_result("Static site generators compared", "https://blog.example.dev/ssg",
                           "A practical comparison of popular generators."),
            ]),
        ], started="2026-11-20T14:40:05Z", completed="2026-11-20T14:40:40Z",
            tool_name="search_web", icon="search"),
        wf_step(f"{run_a}:workflow", "", [workflow_item(anchored_payload)], unnest_items=True),
        wf_step(uid("ssg:1:todo"), "Updating the plan", [{
            "id": uid("ssg:1:todoitem"), "type": "WORKFLOW_ITEM_TODO_LIST",
            "payload": {"todo_list_payload": {"title": "Plan", "items": [
                {"status": "COMPLETED", "description": "Benchmark build times"},
                {"status": "COMPLETED", "description": "Compare ecosystems"},
            ]}}}], tool_name="update_todo_list", icon="plan"),
        wf_step(f"{uid('ssg:1:answer')}:answer", "", [
            text_item(uid("ssg:1:ans"), answer1, "answer")]),
    ], "WORKFLOW_COMPLETED", started=c1, completed=u1)  # fmt: skip
    wf3 = workflow_block([
        wf_step(f"{uid('ssg:3:answer')}:answer", "", [
            text_item(uid("ssg:3:ans"), answer3, "answer")]),
    ], "WORKFLOW_COMPLETED", started=c3, completed="2026-11-20T15:05:00Z")  # fmt: skip
    e1 = _entry(t, 1, q1, [initial_query(q1), final_snapshot_only()], c1, u1, "ASI",
                "pplx_asi_opus")  # fmt: skip
    e2 = _entry(t, 2, "", [initial_query(""), final_snapshot_only()], c2, c2, "ASI",
                "pplx_asi_opus", trigger="subagent_result", query_source="scheduled")  # fmt: skip
    e3 = _entry(t, 3, q3, [initial_query(q3), final(answer3)], c3, u3, "ASI", "pplx_asi_opus",
                query_source="followup")  # fmt: skip
    assets = [
        {"uuid": uid("asset:ssg:chart"), "asset_type": "CHART",
         "chart": {"url": f"{CDN}/ssg/build-times.png", "name": "Build times"},
         "download_info": [{"filename": "build-times.png", "url": f"{CDN}/ssg/build-times.png"}],
         "created_at": epoch_s("2026-11-20T14:46:30Z")},
        {"uuid": uid("asset:ssg:docx"), "asset_type": "DOCX_FILE",
         "docx_file": {"url": f"{CDN}/ssg/recommendation.docx", "filename": "recommendation.docx"},
         "download_info": [{"filename": "recommendation.docx",
                            "url": f"{CDN}/ssg/recommendation.docx", "is_exportable": True}],
         "created_at": epoch_s("2026-11-20T14:47:00Z")},
        {"uuid": uid("asset:ssg:bench"), "asset_type": "CODE_ASSET",
         "code": {"script": bench, "language": "bash"},
         "download_info": [{"filename": "bench.sh", "text_content": bench}]},
        {"uuid": "toolu_emuNotesFile0001", "asset_type": "DOC_FILE",
         "doc_file": {"filename": "notes.md", "final": True},
         "preview_info": [{"type": "text", "media_type": "text/markdown", "is_streaming": False,
                           "file_handle": "file:workspace/notes.md"}],
         "created_at": epoch_s("2026-11-20T14:44:00Z")},
    ]  # fmt: skip
    bg = [
        _background(t, "a", run_a, "Benchmark build times", "Build the same site three times.",
                    "Hugo 0.8 s, Eleventy 2.1 s, Jekyll 6.4 s for 200 posts.",
                    started="2026-11-20T14:41:00Z", completed="2026-11-20T14:46:10Z"),
        _background(t, "b", run_b, "Check plugin ecosystems",
                    "Count maintained plugins and themes for each generator.",
                    "Hugo: 400+ themes; Eleventy: 1,000+ plugins on npm; Jekyll: large but aging.",
                    started="2026-11-20T14:50:00Z", completed="2026-11-20T14:58:30Z"),
        _background(t, "c", run_c, "Collect hosting prices",
                    "List free static hosting tiers.",
                    "Three hosts offer free tiers with custom domains and HTTPS.",
                    started="2026-11-20T15:00:00Z", completed="2026-11-20T15:01:00Z"),
    ]  # fmt: skip
    # The chart as the answer shows it (an inline media block; its file is the CHART asset).
    chart_inline = {
        "intended_usage": "ask_text_1_images",
        "inline_entity_block": {"media_block": {"media_items": [{
            "medium": "image", "image": f"{CDN}/ssg/build-times.png",
            "url": f"{CDN}/ssg/build-times.png", "name": "", "source": "code_interpreter",
            "caption": "Build time of a 200-post site, in seconds",
        }], "generated_media_items": []}},
    }  # fmt: skip
    meta = _meta(t.title, "4", c1, t.last_updated)
    t.plain = {
        "thread_metadata": meta,
        "entries": [e1, e2, e3],
        "background_entries": [p for p, _ in bg],
    }
    t.blocks = {
        "thread_metadata": meta,
        "entries": [
            schematized(
                e1,
                [plan_block("Benchmark", "Compare"), wf1, chart_inline, assets_block(assets)],
                created=c1,
                updated=u1,
            ),
            schematized(e2, [], created=c2, updated=c2),
            schematized(e3, [wf3], created=c3, updated=u3),
        ],
        "background_entries": [s for _, s in bg],
    }
    return t


def newsletter() -> SampleThread:
    """Spending-limit interruption: thread, entry and sub-agent all stop awaiting credits."""
    t = SampleThread(
        "newsletter", "Draft a four-part newsletter series", "computer",
        "2026-11-08T21:12:45.300200Z", {},
    )  # fmt: skip
    q = "Draft a four-part newsletter series about home composting, one issue per sub-agent."
    c1 = "2026-11-08T21:00:00.000000Z"
    run = "toolu_emuLimited00001"
    payload = workflow_payload(
        run, "Draft issue 1: getting started",
        [wf_step(uid("nl:s:1"), "Writing", [text_item(uid("nl:s:t"),
                 "Issue 1 outline: why compost, bins, greens and browns.", "thinking")],
                 started="2026-11-08T21:02:00Z", completed="2026-11-08T21:05:00Z",
                 tool_name="write", icon="store")],
        status="WORKFLOW_AWAITING_NEXT_STEPS", started="2026-11-08T21:02:00Z", completed="",
        objective=["Draft issue 1 (600 words) of a home-composting newsletter."],
    )  # fmt: skip
    wf = workflow_block([
        wf_step(uid("nl:1:think"), "", [text_item(uid("nl:1:tt"),
                "Four issues; each sub-agent drafts one.", "thinking")],
                started=c1, completed="2026-11-08T21:01:00Z"),
        wf_step(f"{run}:workflow", "", [workflow_item(payload)],
                status="WORKFLOW_AWAITING_NEXT_STEPS", unnest_items=True),
    ], "WORKFLOW_AWAITING_NEXT_STEPS", started=c1)  # fmt: skip
    locked = "spending_limit_exceeded"
    e1 = _entry(t, 1, q, [initial_query(q), final_snapshot_only()], c1, t.last_updated, "ASI",
                "pplx_asi_opus", locked_reason=locked, status="BLOCKED")  # fmt: skip
    bg_plain, bg_schem = _background(
        t, "issue1", run, "Draft issue 1: getting started",
        "Draft issue 1 (600 words) of a home-composting newsletter.", "",
        started="2026-11-08T21:02:00Z", completed="", status="WORKFLOW_AWAITING_NEXT_STEPS",
        locked_reason=locked,
    )  # fmt: skip
    meta = _meta(
        t.title, "4", c1, t.last_updated, locked_reason=locked, thread_status="blocked",
        thread_status_summary="Add credits to continue", thread_status_summary_enum="add_credits",
    )  # fmt: skip
    t.plain = {"thread_metadata": meta, "entries": [e1], "background_entries": [bg_plain]}
    t.blocks = {
        "thread_metadata": meta,
        "entries": [schematized(e1, [wf], created=c1, updated=t.last_updated)],
        "background_entries": [bg_schem],
    }
    return t


def receipts() -> SampleThread:
    """Turn 1 completes; turn 2 was canceled before any step ran."""
    t = SampleThread(
        "receipts", "Clean up a CSV of receipts", "computer", "2026-10-30T12:31:08.045600Z", {},
    )  # fmt: skip
    q1 = "Normalise the dates and currencies in receipts.csv."
    q2 = "Now categorise every row."
    c1, u1 = "2026-10-30T12:10:00.000000Z", "2026-10-30T12:18:00.000000Z"
    c2 = "2026-10-30T12:30:00.000000Z"
    answer1 = "Done: 214 rows, dates as ISO 8601, all amounts converted to EUR at the daily rate."
    wf1 = workflow_block([
        wf_step("toolu_emuPandas000001", "Normalising columns", [
            text_item(uid("rc:1:in"), "df['date'] = pd.to_datetime(df['date'], dayfirst=True)",
                      header="Input"),
            text_item(uid("rc:1:out"), "214 rows normalised", header="Output"),
        ], started="2026-10-30T12:11:00Z", completed="2026-10-30T12:17:00Z", tool_name="bash",
            icon="code_execute"),
        wf_step(f"{uid('rc:1:answer')}:answer", "", [text_item(uid("rc:1:a"), answer1, "answer")]),
    ], "WORKFLOW_COMPLETED", started=c1, completed=u1)  # fmt: skip
    wf2 = workflow_block([], "WORKFLOW_CANCELED", started=c2)
    e1 = _entry(t, 1, q1, [initial_query(q1), final(answer1)], c1, u1, "ASI", "pplx_asi_opus")
    e2 = _entry(t, 2, q2, [initial_query(q2)], c2, t.last_updated, "ASI", "pplx_asi_opus",
                query_source="followup")  # fmt: skip
    meta = _meta(t.title, "4", c1, t.last_updated)
    t.plain = {"thread_metadata": meta, "entries": [e1, e2], "background_entries": []}
    t.blocks = {
        "thread_metadata": meta,
        "entries": [
            schematized(e1, [wf1], created=c1, updated=u1),
            schematized(e2, [wf2], created=c2, updated=t.last_updated),
        ],
        "background_entries": [],
    }
    return t


# -- council and study -----------------------------------------------------------------------

COUNCIL = [
    ("gpt56_sol_thinking", "GPT-5.6 Thinking", "openai",
     "Plain text (Markdown) is the safest bet: any editor can read it in 30 years."),
    ("claude50opusthinking", "Claude Opus 5.0 Thinking", "anthropic",
     "Markdown files in folders, plus a yearly PDF export for the things you must not lose."),
    ("gemini31pro_high", "Gemini 3.1 Pro", "google",
     "Open formats win: Markdown or Org for notes, PDF/A for scanned documents."),
]  # fmt: skip


def note_formats() -> SampleThread:
    t = SampleThread(
        "notes", "Which note-taking format will still open in 30 years?", "council",
        "2026-11-15T09:45:10.660001Z", {},
    )  # fmt: skip
    created = "2026-11-15T09:40:00.000000Z"
    synthesis = "**All three models agree: plain-text Markdown.** " + " ".join(
        f"[{label}](pplx://action/model_info?id={mid}&provider={prov}) adds: {text}"
        for mid, label, prov, text in COUNCIL
    )
    results = [
        web_result("File formats for long-term preservation", "https://archive.example.org/fmt",
                   "Recommended formats for digital preservation.", "2025-06-01"),
    ]  # fmt: skip
    steps = [
        initial_query(t.title),
        step("COUNCIL_RESEARCH", {"goal_id": None, "models": [m for m, *_ in COUNCIL]}),
        final(synthesis, results),
    ]
    entry = _entry(t, 1, t.title, steps, created, t.last_updated, "AGENTIC_RESEARCH",
                   "pplx_agentic_research")  # fmt: skip
    members = []
    for mid, label, _prov, text in COUNCIL:
        members.append(workflow_item(workflow_payload(
            uid(f"notes:{mid}"), label, [
                wf_step(uid(f"notes:{mid}:1"), "", [
                    queries_item(uid(f"notes:{mid}:q"), "long term note format"),
                    sources_item(uid(f"notes:{mid}:s"), results),
                    text_item(uid(f"notes:{mid}:a"), text, "answer"),
                ]),
            ], status="WORKFLOW_COMPLETED", started=created, completed="2026-11-15T09:44:00Z",
            model=mid, mode="LLM_COUNCIL",
        )))  # fmt: skip
    wf = workflow_block(
        [wf_step(uid("notes:council"), "Consulting three models", members,
                 tool_name="council_research", started=created,
                 completed="2026-11-15T09:44:00Z")],
        "WORKFLOW_COMPLETED", started=created, completed="2026-11-15T09:45:00Z",
        mode="LLM_COUNCIL",
    )  # fmt: skip
    meta = _meta(t.title, "2", created, t.last_updated)
    t.plain = {"thread_metadata": meta, "entries": [entry], "background_entries": []}
    t.blocks = {
        "thread_metadata": meta,
        "entries": [
            schematized(
                entry,
                [wf, markdown_block(synthesis), web_results_block(results)],
                created=created,
                updated=t.last_updated,
            )
        ],
        "background_entries": [],
    }
    return t


def bayes() -> SampleThread:
    t = SampleThread(
        "bayes", "Teach me Bayes' rule", "study", "2026-11-05T16:20:33.901200Z", {},
        None, SPACE_OCEAN,
    )  # fmt: skip
    created = "2026-11-05T16:18:00.000000Z"
    results = [
        web_result("Bayes' theorem, gently", "https://stats.example.edu/bayes",
                   "A step-by-step introduction with a medical test example.", "2023-02-11"),
    ]  # fmt: skip
    answer = (
        "Let's build it in three steps.\n\n"
        "1. **Start from a prior**: how likely was the hypothesis before the evidence?\n"
        "2. **Weigh the evidence**: how likely is the evidence if the hypothesis is true?\n"
        "3. **Normalise**: \\[ P(H\\mid E) = \\frac{P(E\\mid H)\\,P(H)}{P(E)} \\]\n\n"
        "**Check yourself:** a test is 99 % sensitive and the disease affects 1 in 1,000. "
        "Is a positive result likely to be a true positive?"
    )
    steps = [initial_query(t.title), search_web("bayes rule intuition"), search_results(results),
             final(answer, results)]  # fmt: skip
    entry = _entry(t, 1, t.title, steps, created, t.last_updated, "STUDY", "pplx_study")
    meta = _meta(t.title, "2", created, t.last_updated)
    t.plain = {"thread_metadata": meta, "entries": [entry], "background_entries": []}
    t.blocks = {
        "thread_metadata": meta,
        "entries": [
            schematized(
                entry,
                [markdown_block(answer), web_results_block(results)],
                created=created,
                updated=t.last_updated,
            )
        ],
        "background_entries": [],
    }
    return t


# -- spaces and relations --------------------------------------------------------------------


def _one_turn(t: SampleThread, query: str, answer: str, created: str, **extra: Any) -> JSON:
    return {
        "thread_metadata": _meta(t.title, "1", created, t.last_updated),
        "entries": [
            _entry(t, 1, query, [initial_query(query), final(answer)], created, t.last_updated,
                   "SEARCH", "pplx_pro", **extra)
        ],
        "background_entries": [],
    }  # fmt: skip


def raised_bed() -> SampleThread:
    """Garden Club (shared); the answer links the tides thread with an upper-case UUID."""
    t = SampleThread("raised-bed", "How deep should a raised garden bed be?", "search",
                     "2026-11-12T17:40:02.500000Z", {}, None, SPACE_GARDEN)  # fmt: skip
    tides_link = f"https://www.perplexity.ai/search/{uid('thread:tides').upper()}"
    answer = (
        "For most vegetables **30 cm (12 in)** of loose soil is enough; root crops such as "
        "carrots and parsnips do better with **45 cm (18 in)**.\n\n"
        "- Line the bottom with cardboard rather than plastic so water drains.\n"
        "- On a coastal plot, salt spray matters more than depth (see the earlier notes on "
        f"[how tides work]({tides_link}))."
    )
    t.plain = _one_turn(t, t.title, answer, "2026-11-12T17:39:40.000000Z")
    return t


def tomatoes() -> SampleThread:
    """bob's thread in Garden Club: only the space listing shows it to alice."""
    t = SampleThread("tomatoes", "Which tomato varieties ripen earliest?", "search",
                     "2026-11-13T09:05:11.250000Z", {}, None, SPACE_GARDEN,
                     author=OTHER_AUTHOR)  # fmt: skip
    answer = (
        "Early varieties such as **Stupice**, **Glacier** and **Sub-Arctic Plenty** ripen in "
        "55-60 days from transplanting. They fit the 30 cm beds from Alice's thread "
        f"{uid('thread:raised-bed')} if staked."
    )
    t.plain = _one_turn(t, t.title, answer, "2026-11-13T09:04:50.000000Z",
                        author_username=OTHER_AUTHOR,
                        author_id="00000000-0000-4000-8000-00000000e002")  # fmt: skip
    return t


def roadmap() -> SampleThread:
    """In Team Roadmap, a space alice can no longer view."""
    t = SampleThread("roadmap", "Summarise the Q3 roadmap review", "search",
                     "2026-09-18T14:22:09.000000Z", {}, None, SPACE_ROADMAP)  # fmt: skip
    answer = (
        "Three themes came out of the Q3 review: ship offline sync, cut the onboarding steps "
        "from seven to four, and retire the legacy export format by the end of the year."
    )
    t.plain = _one_turn(t, t.title, answer, "2026-09-18T14:21:30.000000Z")
    return t


WEATHER_QUERIES = (
    # One prompt three times (two scheduled-task runs, then by hand): relations chains them.
    ("weather-1", "What's the weather outlook for the weekend?", "2026-11-06", "perplexity_tasks"),
    ("weather-2", "what's the weather outlook for the weekend", "2026-11-13", "perplexity_tasks"),
    ("weather-3", "WHAT'S THE   WEATHER OUTLOOK FOR THE WEEKEND?!", "2026-11-20", "default"),
)


def weather(key: str, query: str, day: str, source: str) -> SampleThread:
    t = SampleThread(key, "Weekend weather outlook", "search", f"{day}T07:00:05.000000Z", {})
    answer = f"Mild and mostly dry on Saturday, showers likely on Sunday afternoon ({day})."
    t.plain = _one_turn(t, query, answer, f"{day}T07:00:00.000000Z", query_source=source)
    return t


# -- writing ---------------------------------------------------------------------------------


def all_threads() -> list[SampleThread]:
    # Imported here: sample_live builds its threads with this module's helpers.
    from tools.sample_live import live_threads

    return [
        tides(),
        basil(),
        sourdough(),
        heat_pumps(),
        site_generators(),
        newsletter(),
        receipts(),
        note_formats(),
        bayes(),
        simple_search("packing", "Old packing list for a ferry trip", "2026-10-02T07:45:00.100000Z",
                      "Passport, ferry tickets, a warm layer and seasickness tablets."),
        simple_search("summer", "Weekend trip ideas from last summer",
                      "2026-07-28T11:05:19.880000Z",
                      "A coastal walk, a lake swim and a night in a mountain hut."),
        raised_bed(),
        tomatoes(),
        roadmap(),
        *(weather(*spec) for spec in WEATHER_QUERIES),
        *live_threads(),
    ]  # fmt: skip


def _entry_urls(entry: JSON) -> list[str]:
    """Source URLs of one plain entry, whichever form its answer takes (protocol §5.3, §9.1):
    `sources`, a step list's FINAL, an object `text`, the `web_results` blocks."""
    found = [s.get("url", "") for s in entry.get("sources") or []]
    try:
        decoded = json.loads(entry.get("text") or "null")
    except ValueError:  # plain Markdown text
        decoded = None
    bodies = [decoded] if isinstance(decoded, dict) else []
    for st in decoded if isinstance(decoded, list) else []:
        if st.get("step_type") == "FINAL":
            bodies.append(json.loads(st["content"]["answer"]))
    for body in bodies:
        found += [r.get("url", "") for r in body.get("web_results") or []]
    for block in entry.get("blocks") or []:
        found += [
            r.get("url", "") for r in block.get("web_result_block", {}).get("web_results", [])
        ]
    return found


def _n_sources(plain: JSON) -> int:
    """Thread-level citation count over the plain channels."""
    return len({u for entry in plain["entries"] for u in _entry_urls(entry) if u})


def _dump(path: Path, value: Any, *, indent: int | None = None) -> None:
    text = json.dumps(value, ensure_ascii=False, indent=indent)
    if indent is None:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    path.write_text(text + ("\n" if indent else ""), encoding="utf-8")


def build(root: Path) -> list[SampleThread]:
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    threads = all_threads()
    for t in threads:
        directory = (
            root / t.author / t.mode / f"{t.last_updated[:10]}_{slugify(t.title)}_{t.uuid[:8]}"
        )
        directory.mkdir(parents=True)
        url_kind = "computer/tasks" if t.mode == "computer" else "search"
        thread_json = {
            "web_uuid": t.uuid,
            "psc_uuid": t.context_uuid,
            "url": f"https://www.perplexity.ai/{url_kind}/{t.slug or t.uuid}",
            "title": t.title,
            "mode": t.mode,
            "author": t.author,
            "export_via": t.author,
            "space": t.space,
            "lastUpdated": t.last_updated,
            "threadAccess": None,
            "n_turns": len(t.plain["entries"]),
            "n_sources": _n_sources(t.plain),
            "metadata": t.plain["thread_metadata"],
            "report_info": t.report_info,
            "exported_at": "2026-11-21T00:00:00Z",
        }
        _dump(directory / "thread.json", thread_json, indent=1)
        _dump(directory / "raw_entries.json", t.plain)
        if t.blocks is not None:
            _dump(directory / "raw_blocks.json", t.blocks)
    manifest = {
        "about": "Emulator-only facts about this sample library; see docs/emulator.md.",
        "deleted": [uid("thread:packing")],
        "expired": [uid("thread:summer")],
        "expired_assets": [uid("asset:field-measurements")],
        "asset_bodies": {uid("asset:report:v1"): REPORT_V1, uid("asset:report:v2"): REPORT_V2},
        # alice left Team Roadmap (her old thread is still in it); her second account bob
        # still sees it, so `spaces --fetch-meta` gets its metadata through bob.
        "forbidden_spaces": [SPACE_ROADMAP["slug"]],
        "space_viewers": {SPACE_ROADMAP["slug"]: [SPACE_PEOPLE["bob"]["email"]]},
        # bob's thread in the shared Garden Club: in the space's listing, not in alice's library
        "space_only": [uid("thread:tomatoes")],
    }
    _dump(root / "_emulator.json", manifest, indent=1)
    return threads


def main() -> int:
    target = (
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else Path(__file__).resolve().parents[1] / "pplx_export" / "emulator" / "sample"
    )
    threads = build(target)
    print(f"wrote {len(threads)} threads to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
