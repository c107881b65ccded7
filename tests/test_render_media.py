"""Images and videos with an answer, and the chart generated inside it (issue 34 point 6):
embedded where the archive holds the file, linked otherwise; an inline chart stands where the
answer showed it. Read with a CommonMark reader, in both flavours and both languages."""

from __future__ import annotations

from typing import Any

import pytest

from pplx_export.models import NOT_DOWNLOADED, Conversation, LocalFile, MediaItem, Turn
from pplx_export.parse.answer_forms import media_items
from pplx_export.parse.views import attach_views
from pplx_export.render import OBSIDIAN, render_thread
from pplx_export.render.labels import labels_for
from tests.reading_support import tokens
from tests.render_samples import T0

CHART_URL = "https://cdn.example.net/charts/speed.png"
CAPTION = "Build time by generator (seconds)"
ANSWER = "## Result\n\nHugo is the fastest of the three.\n\n## Method\n\nEach site was built twice."
CHART = LocalFile(
    "u-chart",
    "Speed chart",
    "v1",
    1,
    "CHART",
    "assets/files/speed.png",
    120,
    entry_uuid="e1",
    url=CHART_URL,
)


def _markdown(n: int, text: str) -> dict[str, Any]:
    return {
        "intended_usage": f"ask_text_{n}_markdown",
        "markdown_block": {"progress": "DONE", "chunks": [text]},
    }


def _inline_chart(n: int) -> dict[str, Any]:
    item = {"medium": "image", "image": CHART_URL, "url": CHART_URL, "name": "", "caption": CAPTION}
    return {
        "intended_usage": f"ask_text_{n}_images",
        "inline_entity_block": {
            "media_block": {"media_items": [item], "generated_media_items": []}
        },
    }


BLOCKS = [
    _markdown(0, "## Result\n\nHugo is the fastest of the three.\n\n## Method"),
    _inline_chart(1),
    _markdown(2, "Each site was built twice."),
    {
        "intended_usage": "media_items",
        "media_block": {
            "media_items": [
                {"medium": "video", "url": "https://video.example.org/v1", "name": "A talk"},
                {"medium": "image", "image": CHART_URL, "url": CHART_URL, "name": "dup"},
            ]
        },
    },
]


def _conversation(media: list[MediaItem]) -> Conversation:
    turn = Turn(
        index=1,
        uuid="e1",
        query="which generator is fastest",
        created_us=T0,
        answer=ANSWER,
        display_answer=ANSWER,
        media=media,
    )
    return attach_views(Conversation(web_uuid="w", title="Speed", mode="search", turns=[turn]))


def test_an_inline_chart_is_read_with_the_line_it_stands_before() -> None:
    chart, video = media_items(BLOCKS)
    assert chart.inline and chart.url == CHART_URL and chart.title == CAPTION
    assert chart.anchor == "Each site was built twice."
    # The media_items copy of the same picture is not listed twice.
    assert not video.inline and video.kind == "video" and video.title == "A talk"


def _answer_lines(page: str, lang: str) -> list[str]:
    answer = page.split(f"## {labels_for(lang).answer}\n", 1)[1]
    return [line for line in answer.split("\n") if line.strip()]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("flavor", ["github", OBSIDIAN])
def test_a_downloaded_chart_is_embedded_where_the_answer_showed_it(lang: str, flavor: str) -> None:
    pages = render_thread(_conversation(media_items(BLOCKS)), lang, flavor, local=[CHART])
    for rel, target in (("turns/turn_0001.md", "../assets/files/speed.png"),
                        ("conversation.md", "assets/files/speed.png")):  # fmt: skip
        lines = _answer_lines(pages[rel], lang)
        # A wikilink names a file beside the page as `./name` (Obsidian's relative form).
        wiki = target if target.startswith("../") else "./" + target
        embed = f"![[{wiki}]]" if flavor == OBSIDIAN else f"![{CAPTION}]({target})"
        at = lines.index(embed)
        assert lines[at + 1] == "Each site was built twice."
        assert "Method" in lines[at - 1]
        if flavor != OBSIDIAN:
            images = [c for t in tokens(pages[rel]) for c in t.children or [] if c.type == "image"]
            # The answer's embed, and conversation.md's list of every file embeds it again.
            assert {i.attrs["src"] for i in images} == {target}
    # The video is still listed under the answer, linked.
    turn = pages["turns/turn_0001.md"]
    assert f"## {labels_for(lang).media}" in turn
    assert "[A talk](https://video.example.org/v1) (video)" in turn
    assert turn.count("speed.png") == 1  # embedded once; the turn's Files do not repeat it


@pytest.mark.parametrize("flavor", ["github", OBSIDIAN])
def test_a_chart_not_downloaded_is_linked_where_the_answer_showed_it(flavor: str) -> None:
    turn = render_thread(_conversation(media_items(BLOCKS)), "en", flavor)["turns/turn_0001.md"]
    lines = _answer_lines(turn, "en")
    at = lines.index(f"[{CAPTION}]({CHART_URL})")
    assert lines[at + 1] == "Each site was built twice."
    links = [
        c.attrs["href"]
        for t in tokens(turn)
        for c in t.children or []
        if c.type == "link_open" and c.attrs["href"] == CHART_URL
    ]
    assert len(links) == 1


def test_an_inline_chart_whose_line_is_gone_stands_below_the_answer() -> None:
    item = MediaItem(CHART_URL, "image", CAPTION, anchor="A line the answer lost", inline=True)
    turn = render_thread(_conversation([item]), "en", local=[CHART])["turns/turn_0001.md"]
    lines = _answer_lines(turn, "en")
    assert lines[lines.index("Each site was built twice.") + 1] == (
        f"![{CAPTION}](../assets/files/speed.png)"
    )


def test_media_items_embed_an_archived_image_and_link_the_rest() -> None:
    items = [
        MediaItem(CHART_URL + "?X-Sig=1", "image", "Speed"),
        MediaItem("https://img.example.org/p.jpg", "image", "Photo", "https://img.example.org/"),
    ]
    turn = render_thread(_conversation(items), "en", local=[CHART])["turns/turn_0001.md"]
    section = turn.split("## Images and videos\n\n")[1]
    assert (
        "- [Speed](../assets/files/speed.png) (image)\n\n  ![Speed](../assets/files/speed.png)"
        in (section)
    )
    assert "- [Photo](https://img.example.org/p.jpg) (image) — [img.example.org]" in section


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_chart_the_archive_lacks_is_named_with_the_reason_not_its_signed_link(
    lang: str,
) -> None:
    """The thread's own chart, not downloaded: its CDN link is signed (it expires, and is a
    credential while it lasts), so the answer names it as the Files list does."""
    lb = labels_for(lang)
    missing = LocalFile("u-chart", "Speed chart", missing=NOT_DOWNLOADED, url=CHART_URL)
    signed = [
        MediaItem(CHART_URL + "?Expires=9&Signature=s", "image", CAPTION, anchor="x", inline=True)
    ]
    turn = render_thread(_conversation(signed), lang, local=[missing])["turns/turn_0001.md"]
    assert f"*{CAPTION}* · {lb.file_not_downloaded}" in turn
    assert "Signature" not in turn and CHART_URL not in turn
