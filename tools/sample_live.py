"""Sample threads in the shapes of live-site captures (protocol §9). Content written for this
project.

Each thread carries one shape the older sample threads lack (docs/emulator.md lists them):
an object `text` (2024), blocks-only plain entries, a 2026 pro-search entry with both a step
list and blocks, a plain-Markdown `text`, and a pre-2026 title slug. `sample_builder` adds
them to the library.
"""

from __future__ import annotations

from typing import Any

from tools.sample_builder import SampleThread, _entry, _meta
from tools.sample_shapes import (
    final,
    goals_plan_block,
    initial_query,
    live_times,
    markdown_block,
    media_block,
    object_text,
    pro_search_steps_block,
    pro_step,
    schematized,
    search_results,
    search_web,
    short_result,
    sources_mode_block,
    step,
    title_slug,
    uid,
    web_result,
    web_results_block,
)

JSON = dict[str, Any]


# -- a. 2024: `text` is a JSON object, no step list, no µs fields ----------------------------

BIKE_RESULTS = [
    short_result("How often to lube a bike chain", "https://cycling.example.com/chain-lube",
                 "Every 150-300 km, and after every wet ride."),
    short_result("Chain care basics", "https://bikeshop.example.org/chain-care",
                 "Clean, dry, lube one drop per roller, wipe the excess."),
    short_result("Wet vs dry chain lube", "https://gear.example.net/wet-dry-lube",
                 "Wet lube lasts in rain but collects grime; dry lube stays cleaner."),
]  # fmt: skip


def bike_chain() -> SampleThread:
    """2024 quick search: object `text`, `mode: concise`, `display_model: turbo`, no
    `search_mode`, no µs fields, no `entry_created_datetime`, only a naive `updated_datetime`."""
    t = SampleThread(
        "bike-chain", "How often should I oil my bike chain?", "search",
        "2024-03-14T09:15:02.480913Z", {},
    )  # fmt: skip
    turns = [
        (
            t.title,
            "Oil it roughly every **150-300 km**, and always after riding in the rain.[1] "
            "Put one drop on each roller, spin the cranks, then wipe off the excess: oil "
            "left on the outside only collects grit.[2]",
            BIKE_RESULTS[:2],
            "2024-03-14T09:12:44.123456Z",
        ),
        (
            "Is WD-40 ok for that?",
            "Not as the lubricant. Standard WD-40 is a solvent and water displacer: it is "
            "fine for cleaning the chain, but it washes away quickly.[1] Use a chain lube "
            "afterwards: a **wet lube** for rainy riding, a **dry lube** for dry, dusty "
            "roads.[2]",
            [BIKE_RESULTS[1], BIKE_RESULTS[2]],
            "2024-03-14T09:15:02.480913Z",
        ),
    ]
    entries = []
    for n, (query, answer, results, updated) in enumerate(turns, start=1):
        entry = _entry(t, n, query, [], updated, updated, "SEARCH", "turbo",
                       mode="concise", status="completed",
                       query_source="default" if n == 1 else "followup")  # fmt: skip
        entry["text"] = object_text(answer, results)
        for key in ("search_mode", "plan"):
            del entry[key]
        entries.append(live_times(entry, updated=updated))
    t.plain = {
        "thread_metadata": _meta(t.title, "1", turns[0][3], t.last_updated),
        "entries": entries,
        "background_entries": [],
    }
    return t


# -- b. blocks only: plain entries without `text`, answer and sources in blocks ---------------

PLANT_RESULTS = [
    web_result("Yellow leaves on pothos: causes", "https://plants.example.org/pothos-yellow",
               "Overwatering is the most common cause of yellowing lower leaves.", "2025-02-10"),
    web_result("Watering houseplants by touch", "https://garden.example.com/watering",
               "Water when the top 2-3 cm of soil are dry.", "2024-11-03"),
    web_result("Feeding and repotting pothos", "https://greenhouse.example.net/pothos-care",
               "Feed monthly in the growing season; repot in spring when roots circle."),
    web_result("Propagating pothos in water", "https://plants.example.org/pothos-cuttings",
               "Cut below a node; roots appear in two to four weeks.", "2024-08-22"),
]  # fmt: skip

PLANT_TURNS = [
    ("Why are the leaves on my pothos turning yellow?",
     "Most often it is **too much water**: soggy roots cannot take up oxygen and the lower "
     "leaves yellow first.[1] Less often it is too little light, or a plant that has used up "
     "its soil's nutrients.[2]", [0, 2]),
    ("How often should I water it then?",
     "Water when the top 2-3 cm of soil feel dry: about weekly in summer, every 10-14 days "
     "in winter.[1] Empty the saucer after 15 minutes.", [1]),
    ("Does it need fertiliser?",
     "A little: a balanced liquid fertiliser at half strength once a month from spring to "
     "late summer, none in winter.[1]", [2]),
    ("Should I cut off the yellow leaves?",
     "Yes. A yellow leaf will not turn green again; cut it at the stem with clean scissors "
     "so the plant stops spending energy on it.[1]", [0]),
    ("Can I root the cuttings?",
     "Yes: cut just below a node, stand the cutting in water in bright indirect light, and "
     "change the water weekly. Roots show in two to four weeks.[1]", [3]),
    ("When should I repot it?",
     "In spring, when roots circle the pot or grow out of the drainage holes, into a pot "
     "2-5 cm wider.[1]", [2]),
]  # fmt: skip


def houseplant() -> SampleThread:
    """Six turns whose plain entries have no `text` (turn 1) or an empty one (the rest): the
    answer is an `ask_text_0_markdown` block, the sources a `web_results` block. Entries carry
    `entry_*_datetime` and a naive `updated_datetime`, no µs fields, and no `display_model`
    (so the client finds the mode uncertain and fetches raw_blocks)."""
    t = SampleThread(
        "houseplant", "Why are the leaves on my pothos turning yellow?", "search",
        "2025-06-08T18:21:37.604400Z", {},
    )  # fmt: skip
    plain_entries, schem_entries = [], []
    for n, (query, answer, picks) in enumerate(PLANT_TURNS, start=1):
        created = f"2025-06-08T18:{2 + 3 * n:02d}:10.{n:06d}Z"
        updated = t.last_updated if n == len(PLANT_TURNS) else created.replace(":10.", ":31.")
        blocks = [
            markdown_block(answer, "ask_text_0_markdown"),
            web_results_block([PLANT_RESULTS[i] for i in picks]),
        ]
        entry = _entry(t, n, query, [], created, updated, "SEARCH", "",
                       query_source="default" if n == 1 else "followup")  # fmt: skip
        for key in ("search_mode", "display_model", "user_selected_model"):
            del entry[key]
        if n == 1:
            del entry["text"]
        else:
            entry["text"] = ""
        entry["blocks"] = blocks
        live_times(entry, created=created, updated=updated)
        plain_entries.append(entry)
        twin = schematized({k: v for k, v in entry.items() if k != "blocks"}, blocks,
                           created=created, updated=updated)  # fmt: skip
        schem_entries.append(twin)
    meta = _meta(t.title, "1", "2025-06-08T18:05:10.000001Z", t.last_updated)
    t.plain = {"thread_metadata": meta, "entries": plain_entries, "background_entries": []}
    t.blocks = {"thread_metadata": meta, "entries": schem_entries, "background_entries": []}
    return t


# -- c. 2026 pro search: step-list `text` and the §9.7 blocks on one entry -------------------

ESPRESSO_RESULTS = [
    web_result("Dialling in espresso: sour vs bitter", "https://coffee.example.com/dial-in",
               "Sour shots are under-extracted: grind finer or pull longer.", "2026-01-20"),
    web_result("Shot timing for a double espresso", "https://barista.example.org/shot-time",
               "Aim for 25-30 seconds from the first drop for 36 g out of 18 g in."),
    web_result("Brew temperature and fresh beans", "https://roastery.example.net/temperature",
               "92-94 °C suits most roasts; rest beans a week after roasting.", "2025-10-05"),
]  # fmt: skip

ESPRESSO_MEDIA = [
    {"medium": "image", "name": "Sour and balanced shots side by side",
     "url": "https://coffee.example.com/dial-in", "image": "https://img.example.com/shots.jpg",
     "thumbnail": "https://img.example.com/shots-thumb.jpg", "image_width": 1200,
     "image_height": 800, "source": "web"},
    {"medium": "video", "name": "Dialling in espresso in five minutes",
     "url": "https://video.example.com/watch/dial-in-espresso",
     "image": "https://img.example.com/dial-in-poster.jpg",
     "thumbnail": "https://img.example.com/dial-in-thumb.jpg", "image_width": 1280,
     "image_height": 720, "source": "web",
     "video_url": "https://video.example.com/embed/dial-in-espresso", "duration_s": 297},
]  # fmt: skip


def espresso() -> SampleThread:
    """One 2026 pro-search entry carrying both a step-list `text` (FINAL with the answer JSON)
    and the blocks of §9.7: `plan`, `pro_search_steps`, `ask_text_0_markdown`, `web_results`,
    `media_items`, `sources_answer_mode`; `related_queries` on the entry; no µs fields."""
    t = SampleThread(
        "espresso", "Why does my espresso taste sour?", "search",
        "2026-05-19T07:41:39.902117Z", {},
    )  # fmt: skip
    created = "2026-05-19T07:41:12.318004Z"
    answer = (
        "Sour espresso is almost always **under-extracted**: the water ran through too fast to "
        "dissolve the sweeter compounds.[1]\n\n"
        "1. **Grind finer**, one step at a time, until the shot slows down.[1]\n"
        "2. **Aim for 25-30 s** for about 36 g out from 18 g of coffee.[2]\n"
        "3. **Check the temperature**: 92-94 °C suits most roasts.[3]\n\n"
        "Beans roasted less than a week ago can also taste sharp; let them rest a few days.[3]"
    )
    goals = [
        {"id": "0", "description": "Find why espresso tastes sour", "final": False,
         "todo_task_status": "COMPLETED"},
        {"id": "1", "description": "Collect fixes: grind, shot time, temperature",
         "final": True, "todo_task_status": "COMPLETED"},
    ]  # fmt: skip
    queries = [{"engine": "web", "query": q, "limit": 8}
               for q in ("espresso tastes sour fix", "espresso shot time double")]  # fmt: skip
    ids = [uid(f"espresso:step:{i}") for i in range(5)]
    text_steps = [
        step("INITIAL_QUERY", {"goal_id": None, "query": t.title}, ids[0]),
        step("SEARCH_WEB", {"goal_id": "0", "queries": queries}, ids[1]),
        step("SEARCH_RESULTS", {"goal_id": "0", "web_results": ESPRESSO_RESULTS}, ids[2]),
        step("URL_NAVIGATE", {"goal_id": "1", "urls": [ESPRESSO_RESULTS[0]["url"]]}, ids[3]),
        step("TERMINATE", {"goal_id": "1"}, ids[4]),
        final(answer, ESPRESSO_RESULTS),
    ]
    block_steps = [
        pro_step("INITIAL_QUERY", {"query": t.title}, ids[0]),
        pro_step("SEARCH_WEB", {"goal_id": "0", "queries": queries}, ids[1]),
        pro_step("SEARCH_RESULTS", {"goal_id": "0", "web_results": ESPRESSO_RESULTS}, ids[2]),
        pro_step("URL_NAVIGATE", {"goal_id": "1", "urls": [ESPRESSO_RESULTS[0]["url"]]}, ids[3]),
        pro_step("TERMINATE", {"goal_id": "1"}, ids[4]),
    ]
    blocks = [
        goals_plan_block(goals),
        pro_search_steps_block(goals, block_steps),
        markdown_block(answer, "ask_text_0_markdown"),
        web_results_block(ESPRESSO_RESULTS),
        media_block(ESPRESSO_MEDIA),
        sources_mode_block(ESPRESSO_RESULTS),
    ]
    entry = _entry(
        t, 1, t.title, text_steps, created, t.last_updated, "SEARCH", "pplx_pro",
        plan={"goals": goals, "final": True},
        related_queries=[
            "How fine should I grind for espresso?",
            "What water temperature is best for espresso?",
            "How do I dial in a new bag of beans?",
        ],
    )  # fmt: skip
    entry["blocks"] = blocks
    live_times(entry, created=created, updated=t.last_updated)
    twin = schematized({k: v for k, v in entry.items() if k != "blocks"}, blocks,
                       created=created, updated=t.last_updated)  # fmt: skip
    meta = _meta(t.title, "1", created, t.last_updated)
    t.plain = {"thread_metadata": meta, "entries": [entry], "background_entries": []}
    t.blocks = {"thread_metadata": meta, "entries": [twin], "background_entries": []}
    return t


# -- d. `text` is plain Markdown -------------------------------------------------------------

EGG_RESULTS = [
    web_result("Soft-boiled eggs, timed", "https://kitchen.example.com/soft-boiled",
               "Six and a half minutes from boiling for a large egg from the fridge.",
               "2024-12-02"),
    web_result("Why eggs crack in the pot", "https://food.example.org/eggs-crack",
               "Lower eggs gently; cold eggs in boiling water crack more often."),
]  # fmt: skip


def soft_egg() -> SampleThread:
    """`text` is the answer as plain Markdown (§9.1 form 4); sources in the entry's
    `sources` list. µs fields kept, so the text is the only new shape."""
    t = SampleThread(
        "soft-egg", "How long should I boil an egg for a runny yolk?", "search",
        "2025-01-26T08:03:17.250000Z", {},
    )  # fmt: skip
    created = "2025-01-26T08:02:55.000000Z"
    answer = (
        "For a runny yolk and a set white, lower a large egg straight from the fridge into "
        "boiling water and cook it for **6½ minutes**, then cool it in cold water for a "
        "minute.[1]\n\n"
        "- Eggs at room temperature: take off about 30 seconds.[1]\n"
        "- Lower them with a spoon so the shells do not crack.[2]"
    )
    entry = _entry(t, 1, t.title, [], created, t.last_updated, "SEARCH", "pplx_pro",
                   sources=EGG_RESULTS)  # fmt: skip
    entry["text"] = answer
    t.plain = {
        "thread_metadata": _meta(t.title, "1", created, t.last_updated),
        "entries": [entry],
        "background_entries": [],
    }
    return t


# -- e. a pre-2026 title slug -----------------------------------------------------------------

KETTLE_RESULTS = [
    web_result("Descaling a kettle with citric acid", "https://home.example.com/descale-kettle",
               "Boil half a litre of water with a tablespoon of citric acid, leave 20 minutes.",
               "2025-03-30"),
    web_result("Vinegar and stainless steel", "https://clean.example.org/vinegar-steel",
               "Diluted white vinegar is safe on stainless steel; rinse well afterwards."),
]  # fmt: skip


def descale() -> SampleThread:
    """Listed and linked by a title slug (`<words>-<22 chars>`, §9.4); the entries'
    `thread_url_slug` is that slug. Its 22-character tail holds `-` and `_`."""
    t = SampleThread(
        "descale", "How do I descale an electric kettle?", "search",
        "2025-09-03T19:27:48.771200Z", {},
    )  # fmt: skip
    slug = title_slug(t.title, t.uuid)
    c1, u1 = "2025-09-03T19:24:02.000000Z", "2025-09-03T19:24:31.500000Z"
    c2 = "2025-09-03T19:27:20.000000Z"
    q2 = "Is vinegar safe for a stainless steel kettle?"
    a1 = (
        "Fill the kettle halfway, add a tablespoon of **citric acid**, boil it and leave it "
        "for 20 minutes. Pour it away, rinse, and boil once with clean water.[1]"
    )
    a2 = (
        "Yes: one part white vinegar to two parts water works on stainless steel. Rinse well "
        "and boil clean water once or twice, or the next cups will taste of vinegar.[1]"
    )
    e1 = _entry(t, 1, t.title, [initial_query(t.title), search_web("descale electric kettle"),
                                search_results(KETTLE_RESULTS[:1]), final(a1, KETTLE_RESULTS[:1])],
                c1, u1, "SEARCH", "pplx_pro", thread_url_slug=slug)  # fmt: skip
    e2 = _entry(t, 2, q2, [initial_query(q2), final(a2, KETTLE_RESULTS[1:])], c2,
                t.last_updated, "SEARCH", "pplx_pro", thread_url_slug=slug,
                query_source="followup")  # fmt: skip
    t.plain = {
        "thread_metadata": _meta(t.title, "1", c1, t.last_updated),
        "entries": [e1, e2],
        "background_entries": [],
    }
    t.slug = slug
    return t


def live_threads() -> list[SampleThread]:
    return [bike_chain(), houseplant(), espresso(), soft_egg(), descale()]
