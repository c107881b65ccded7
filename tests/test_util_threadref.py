"""util/threadref.py: every form of thread reference -> its web UUID, with no request."""

from __future__ import annotations

import string
import uuid as uuidlib

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from pplx_export.util.threadref import (
    SITE,
    ThreadRef,
    link_uuids,
    parse_thread_ref,
    slug_tail,
    slug_uuid,
)

# The pair checked against the live site (protocol.md §9.4).
TAIL = "Xs6pxUAfRwqwP8Wg0SsM6Q"
UUID = "5ecea9c5-401f-470a-b03f-c5a0d12b0ce9"

# Any 16 bytes, not only the versions uuid4 makes: the encoding does not care.
uuids = st.binary(min_size=16, max_size=16).map(lambda b: str(uuidlib.UUID(bytes=b)))
# A first byte of 0xf8-0xff makes the tail start with `-` or `_`.
dash_first = st.tuples(st.integers(0xF8, 0xFF), st.binary(min_size=15, max_size=15)).map(
    lambda t: str(uuidlib.UUID(bytes=bytes([t[0]]) + t[1]))
)
WORD_CHARS = string.ascii_letters + string.digits + "-_%."
word = st.text(WORD_CHARS, min_size=1, max_size=12)
# Title words as slugs have them: hyphen-joined, and words that hold hyphens (and base64url
# characters) themselves.
words = st.lists(word, min_size=1, max_size=6).map("-".join)
# Anything a URL path segment can hold, non-ASCII included.
any_words = st.text(
    st.characters(blacklist_categories=("Z", "C"), blacklist_characters="/?#"), min_size=1
)


def test_the_checked_pair() -> None:
    assert slug_uuid(TAIL) == UUID
    assert slug_uuid(f"what-is-python-{TAIL}") == UUID
    assert slug_tail(UUID) == TAIL
    assert slug_tail(UUID.upper()) == TAIL


def test_tails_with_dash_and_underscore_at_the_edges() -> None:
    # The last character holds 2 bits and 4 zero bits: always one of A, Q, g, w.
    assert slug_tail("fbffffff-ffff-ffff-ffff-fffffffffffc") == "-" + "_" * 20 + "A"
    assert slug_tail("ffffffff-ffff-ffff-ffff-fffffffffff9") == "_" * 20 + "-Q"


@given(uuids | dash_first, words)
@example(UUID, "what-is-python")
@example("fbffffff-ffff-ffff-ffff-fffffffffffc", "a--b")  # tail "-___…___A"
@example("ffffffff-ffff-ffff-ffff-fffffffffff9", "-")  # tail "___…___-Q", words "-"
def test_uuid_to_slug_to_uuid(web_uuid: str, prefix: str) -> None:
    tail = slug_tail(web_uuid)
    assert len(tail) == 22
    assert slug_uuid(tail) == web_uuid
    assert slug_uuid(f"{prefix}-{tail}") == web_uuid
    url = f"https://www.perplexity.ai/search/{prefix}-{tail}?utm_source=copy_output#x"
    assert parse_thread_ref(url) == ThreadRef(web_uuid, "search", url.split("?")[0])
    text = f"See [this]({url}), and **perplexity.ai/thread/{prefix}-{tail}**."
    assert link_uuids(text) == {web_uuid}


@given(uuids, any_words)
def test_any_words_before_the_tail(web_uuid: str, prefix: str) -> None:
    slug = f"{prefix}-{slug_tail(web_uuid)}"
    assert slug_uuid(slug) == web_uuid
    ref = parse_thread_ref(f"/search/{slug}")
    assert ref is not None and ref.uuid == web_uuid


@given(dash_first)
def test_tails_that_start_with_a_dash_or_underscore(web_uuid: str) -> None:
    tail = slug_tail(web_uuid)
    assert tail[0] in "-_"
    assert slug_uuid(tail) == web_uuid
    assert slug_uuid(f"x--{tail}") == web_uuid
    assert parse_thread_ref(f"perplexity.ai/search/{tail}") == ThreadRef(
        web_uuid, "search", f"https://perplexity.ai/search/{tail}"
    )


@given(uuids)
def test_a_uuid_in_any_case_is_itself(web_uuid: str) -> None:
    assert slug_uuid(web_uuid.upper()) == web_uuid
    assert parse_thread_ref(f"  {web_uuid.upper()}\n") == ThreadRef(web_uuid)


@given(st.text(max_size=80))
def test_parsing_never_raises(text: str) -> None:
    ref = parse_thread_ref(text)
    assert ref is None or len(ref.uuid) == 36
    link_uuids(text)
    slug_uuid(text)


@pytest.mark.parametrize(
    "slug",
    [
        TAIL[:-1],  # 21 characters
        "what-is-python" + TAIL,  # no hyphen before the 22 characters
        "-" + TAIL,  # no words before the hyphen
        TAIL[:-1] + "R",  # the 4 spare bits are not zero: no 16 bytes encode to this
        TAIL[:-1] + "-",  # a tail never ends in `-` or `_` (spare bits again)
        TAIL[:-1] + "_",
        "what-is-" + TAIL[:10] + "+" + TAIL[11:],  # `+` is base64, not base64url
        "what-is-" + TAIL[:10] + "=" + TAIL[11:],
        "",
        UUID[:-1],
    ],
)
def test_not_a_slug(slug: str) -> None:
    assert slug_uuid(slug) is None
    assert parse_thread_ref(f"https://www.perplexity.ai/search/{slug}") is None


SLUG = f"what-is-python-{TAIL}"


@pytest.mark.parametrize(
    ("ref", "kind", "url"),
    [
        (UUID.upper(), "", ""),
        (f"https://www.perplexity.ai/search/{UUID}", "search", f"{SITE}/search/{UUID}"),
        (f"https://www.perplexity.ai/search/{UUID.upper()}/", "search", f"{SITE}/search/{UUID}"),
        (f"https://www.perplexity.ai/search/{SLUG}", "search", f"{SITE}/search/{SLUG}"),
        (f"www.perplexity.ai/search/{SLUG}?login=1", "search", f"{SITE}/search/{SLUG}"),
        (f"/search/{SLUG}#answer-2", "search", f"{SITE}/search/{SLUG}"),
        (f"search/{TAIL}", "search", f"{SITE}/search/{TAIL}"),
        (f"{SITE}/computer/tasks/{UUID}", "computer/tasks", f"{SITE}/computer/tasks/{UUID}"),
        (f"/computer/tasks/{UUID}?x=1", "computer/tasks", f"{SITE}/computer/tasks/{UUID}"),
        (f"{SITE}/thread/{UUID}", "thread", f"{SITE}/thread/{UUID}"),
        (f"thread/{SLUG}", "thread", f"{SITE}/thread/{SLUG}"),
        # Any host: the emulator's URLs name threads too.
        (f"http://127.0.0.1:8765/search/{UUID}", "search", f"http://127.0.0.1:8765/search/{UUID}"),
    ],
)
def test_thread_references(ref: str, kind: str, url: str) -> None:
    assert parse_thread_ref(ref) == ThreadRef(UUID, kind, url)


@pytest.mark.parametrize(
    "ref",
    [
        "not-a-thread",
        SLUG,  # a bare title slug: only a URL says it is a thread's
        f"https://www.perplexity.ai/spaces/my-notes-{TAIL}",  # a space's slug
        f"https://www.perplexity.ai/search/{SLUG}/more",
        f"https://www.perplexity.ai/en/search/{SLUG}",
        f"https://www.perplexity.ai/computer/{UUID}",
        f"https://www.perplexity.ai/search?q={UUID}",
        f"ftp://www.perplexity.ai/search/{UUID}",
        f"https://www.perplexity.ai/search/{UUID} extra",
        "https://www.perplexity.ai/search/",
        "",
    ],
)
def test_not_a_thread_reference(ref: str) -> None:
    assert parse_thread_ref(ref) is None


def test_links_in_text_of_both_forms() -> None:
    other = "0f0e0d0c-0b0a-4908-8706-050403020100"
    text = (
        f"[old](https://www.perplexity.ai/search/what-is-python-{TAIL}) and "
        f"<https://PERPLEXITY.AI/Computer/Tasks/{other.upper()}>, "
        f"not https://www.perplexity.ai/spaces/notes-{slug_tail(other)}, "
        f"nor https://example.com/search/{TAIL}, nor perplexity.ai/search/x-{TAIL[:-1]}R."
    )
    assert link_uuids(text) == {UUID, other}
