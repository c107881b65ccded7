"""Small text helpers shared by every renderer (protocol.md §6.2, with safer escaping)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from itertools import chain, compress, count
from typing import Any

from pplx_export.render.latex import norm
from pplx_export.util.jsontext import dumps_indented

_BACKTICK_RUN = re.compile(r"`+")
_MODEL_LINK = re.compile(r"\[([^\]]+)\]\(pplx://action/[^)]+\)")
_ANGLE_URL = re.compile(r"[ ()<>]")
_PIPE = re.compile(r"(\\*)\|")


def ts(us: Any) -> str:
    """Display timestamp from microseconds since the epoch; "" when missing or not an int."""
    if not isinstance(us, int) or isinstance(us, bool):
        return ""
    return _ts(us)


@lru_cache(maxsize=1024)
def _ts(us: int) -> str:
    # Cached: every turn's time is shown in conversation.md and in its turn file, and
    # datetime formatting costs more than the rest of a turn heading.
    try:
        return datetime.fromtimestamp(us / 1_000_000, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (OverflowError, OSError, ValueError):
        return ""


def step_time(value: str) -> str:
    """`2035-12-26T00:00:12.5+00:00` -> `2035-12-26 00:00:12`."""
    return value[:19].replace("T", " ")


def time_range(start: str, end: str) -> str:
    """` — start → end` when a start exists and differs from the end, else ""."""
    s, e = step_time(start), step_time(end)
    if not s or s == e:
        return ""
    return f" — {s} → {e or '?'}"


_EMPTY_QUOTED_LINE = re.compile(r"^> $", re.MULTILINE)


def quote(text: str) -> str:
    """Blockquote every line (an empty line becomes `>` so the quote stays one block)."""
    # A quoted line is exactly "> " only when the line was empty; two C passes instead of a
    # Python loop over the lines (tool output quotes run to hundreds of lines).
    return _EMPTY_QUOTED_LINE.sub(">", "> " + text.replace("\n", "\n> "))


def one_line(text: str) -> str:
    return " ".join(text.split())


def link_text(name: str) -> str:
    """Link labels: one line, brackets and backslashes escaped so the link cannot break."""
    # Backslashes first, so those added before brackets are not doubled.
    return one_line(name).replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def link_target(url: str) -> str:
    """URLs with spaces or parentheses go in angle brackets (CommonMark link destination)."""
    url = url.strip()
    if _ANGLE_URL.search(url):
        return "<" + url.replace("<", "%3C").replace(">", "%3E") + ">"
    return url


# Render flavours (config `render_flavor`, `--flavor`): how folds, links between the
# archive's own files and embedded images are written.
GITHUB = "github"
OBSIDIAN = "obsidian"
FLAVORS = (GITHUB, OBSIDIAN)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# What a wikilink's target or text cannot hold: `]]` ends it, `|` splits target from text,
# `#`/`^` in a target name a heading or block, `[` could open another link.
_WIKI_UNSAFE_TEXT = re.compile(r"[\[\]|]")
_WIKI_UNSAFE_TARGET = re.compile(r"[\[\]|#^\n]")


def is_internal(url: str) -> bool:
    """A link to a file of the archive: a relative path (no scheme, no `#`/`/`/`?` start)
    naming a file rather than a folder."""
    url = url.strip()
    return bool(url) and not _SCHEME.match(url) and url[0] not in "#/?" and not url.endswith("/")


def _vault_path(rel: str) -> str:
    # Obsidian reads a wikilink path without `./` or `../` as a path from the vault root (or
    # a bare file name searched across the vault): `turns/turn_0001.md` would find some other
    # thread's turn file. An explicit `./` keeps it relative to the page that links.
    rel = rel.strip()
    return rel if rel.startswith(("./", "../")) else "./" + rel


def wikilink(target: str, text: str = "") -> str | None:
    """`[[./target|text]]`, or None when the target or text has a character a wikilink
    cannot carry (the caller writes a Markdown link, which Obsidian resolves as well)."""
    text = one_line(text)
    if _WIKI_UNSAFE_TARGET.search(target) or _WIKI_UNSAFE_TEXT.search(text):
        return None
    path = _vault_path(target)
    return f"[[{path}|{text}]]" if text else f"[[{path}]]"


def link(name: str, url: str, flavor: str = GITHUB) -> str:
    """A Markdown link; in the obsidian flavour a link to a file of the archive is a
    wikilink (web links stay Markdown links: Obsidian shows those as they are)."""
    if flavor == OBSIDIAN and is_internal(url):
        wiki = wikilink(url, name or url)
        if wiki is not None:
            return wiki
    return f"[{link_text(name or url)}]({link_target(url)})"


def image(alt: str, url: str, flavor: str = GITHUB) -> str:
    """An embedded image: `![alt](url)`; `![[./path]]` for an archive file in the obsidian
    flavour (Obsidian's embed; the alt text has no place there)."""
    if flavor == OBSIDIAN and is_internal(url):
        wiki = wikilink(url)
        if wiki is not None:
            return "!" + wiki
    return f"!{link(alt, url)}"


def fence_for(body: str) -> str:
    """Backticks one longer than the longest run in `body`, minimum three."""
    longest = max((len(m) for m in _BACKTICK_RUN.findall(body)), default=0)
    return "`" * max(3, longest + 1)


def fenced(body: str, lang: str = "") -> str:
    """A code block that tool output containing fences of its own cannot close early."""
    body = body.rstrip()
    fence = fence_for(body)
    return f"{fence}{one_line(lang)}\n{body}\n{fence}"


def model_links(md: str) -> str:
    """`[Label](pplx://action/model_info?…)` -> `**Label**` (the link only works in the app)."""
    if "(pplx://action/" not in md:  # nearly always: no template expansion to set up
        return md
    return _MODEL_LINK.sub(r"**\1**", md)


# The level of the highest heading in a text shown inside the work process: below its
# `### Step N` (the turn file's H1 turn, H2 sections, H3 steps).
WORK_TOP = 4


def work_md(md: str) -> str:
    """Model-written Markdown inside the work process: LaTeX delimiters normalised, app-only
    model links bold, its headings from WORK_TOP down."""
    return demote(model_links(norm(md)), WORK_TOP)


def cell(text: str) -> str:
    """One Markdown table cell: never truncated; pipes escaped, line breaks kept as <br>."""
    # Double any backslashes before a pipe so the pipe itself stays escaped.
    text = _PIPE.sub(lambda m: m.group(1) * 2 + "\\|", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    return text.replace("\n", "<br>")


def details(summary: str, body: str, flavor: str) -> str:
    """A folded block: HTML `<details>` (blank lines around the body so Markdown inside it
    still renders), or in the obsidian flavour a folded callout (Obsidian renders no
    Markdown inside HTML blocks)."""
    if flavor == OBSIDIAN:
        return callout(summary, body)
    inner = body.strip("\n")
    if not inner:
        return f"<details>\n<summary>{summary}</summary>\n\n</details>"
    return f"<details>\n<summary>{summary}</summary>\n\n{inner}\n\n</details>"


def payload_fold(summary: str, value: Any, flavor: str) -> str:
    """A payload this version does not render, as folded JSON: what `search` indexes of it
    is then on the page too ("" for an empty payload)."""
    if not value:
        return ""
    return details(summary, fenced(dumps_indented(value, 1), "json"), flavor)


def callout(summary: str, body: str) -> str:
    """`> [!note]- summary` and the body quoted under it: a callout folded until clicked.
    A fold inside the body is a callout already, so nesting adds one `>` per level."""
    head = f"> [!note]- {one_line(summary)}".rstrip()
    inner = body.strip("\n")
    return f"{head}\n{quote(inner)}" if inner else head


def join_blocks(blocks: list[str]) -> str:
    """Non-blank blocks separated by one blank line."""
    return "\n\n".join([b.strip("\n") for b in blocks if b and not b.isspace()])


def finish(text: str) -> str:
    """File text with LF line ends only (payloads carry CRLF and lone CR in tool output),
    ending with exactly one newline."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.rstrip("\n") + "\n"


_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")


def summary_text(text: str) -> str:
    """Text for a <summary> line: one line, and no `<` that could open an HTML tag."""
    return _TAG_START.sub("&lt;", one_line(text))


# Characters that could end or swallow a `**…**` early: a backslash escaping the closing
# star, a star, an underscore, a backtick opening a code span, brackets and `<`.
_BOLD_ESCAPE = re.compile(r"[\\*_`\[\]<]")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")  # a fenced code block's opening or closing line
_ATX = re.compile(r"^( {0,3})(#{1,6})(?=[ \t]|$)")


def outside_fences(lines: Sequence[str]) -> Iterable[tuple[int, str]]:
    """(index, line) for each line of `lines` outside fenced code blocks, the fence lines
    themselves left out: headings and anchors inside code are not the answer's. A fence
    closes on a line of its own character at least as long as its opener (CommonMark).

    Every line of every answer passes through here, so the lines are not walked in Python:
    one `map` finds the fence lines, and the prose between them comes back as enumerated
    slices (a text without fences, the usual answer, as `enumerate(lines)` itself)."""
    found = list(map(FENCE.match, lines))
    if not any(found):
        return enumerate(lines)
    runs: list[Iterable[tuple[int, str]]] = []
    start = 0  # the first line of the prose run under way
    fence = ""  # the open fence's marker
    for n, m in zip(compress(count(), found), filter(None, found), strict=True):
        mark = m.group(1)
        if not fence:
            runs.append(enumerate(lines[start:n], start))
            fence = mark
        elif mark[0] == fence[0] and len(mark) >= len(fence):
            fence = ""
            start = n + 1
    if not fence:  # an unclosed fence runs to the end
        runs.append(enumerate(lines[start:], start))
    return chain.from_iterable(runs)


def demote(md: str, top: int) -> str:
    """ATX headings of `md` (outside fenced code) moved down so the highest is at level
    `top` (deeper ones keep their distance, down to 6): an answer's own outline sits below
    the page's turn and section headings."""
    if "#" not in md:
        return md
    lines = md.split("\n")
    found: list[int] = []
    least = 7
    for i, line in outside_fences(lines):
        h = _ATX.match(line)
        if h:
            found.append(i)
            least = min(least, len(h.group(2)))
    shift = top - least
    if not found or shift <= 0:
        return md
    for i in found:
        h = _ATX.match(lines[i])
        assert h is not None
        level = min(6, len(h.group(2)) + shift)
        lines[i] = h.group(1) + "#" * level + lines[i][h.end() :]
    return "\n".join(lines)


def escape_inline(text: str) -> str:
    """One line of plain text in a Markdown line: markup characters escaped."""
    return _BOLD_ESCAPE.sub(r"\\\g<0>", one_line(text))


def bold(text: str) -> str:
    """`**text**` that the text cannot break: one line, markup characters escaped."""
    inner = _BOLD_ESCAPE.sub(r"\\\g<0>", one_line(text))
    return f"**{inner}**" if inner else ""


_NON_WORD = re.compile(r"[\W_]+")
# The layout `squash` drops whole (the renderer's own folding and line-break markup, and
# the obsidian flavour's fold head, so both flavours squash to the same letters and every
# "already shown?" decision is the same in both).
LAYOUT_TAGS = ("<details>", "</details>", "<summary>", "</summary>", "<br>", "</br>", "[!note]-")
_LAYOUT_TAG = re.compile("|".join(re.escape(t) for t in LAYOUT_TAGS))
# The layout tags cut at every inner position.
TAG_HEADS = tuple(sorted({t[:i] for t in LAYOUT_TAGS for i in range(1, len(t))}))
TAG_TAILS = tuple(sorted({t[i:] for t in LAYOUT_TAGS for i in range(1, len(t))}))
SQUASH_SURE = 8  # squashed characters: more than fit inside a layout tag
# Every ASCII byte that is not a letter or digit: what `_NON_WORD` removes from ASCII text.
_ASCII_NON_WORD = bytes(b for b in range(128) if not chr(b).isalnum())
# Non-word characters the renderer itself writes into every page (`_NON_WORD` drops them).
_OWN_MARKS = ("·", "—", "→", "…")


def squash(text: str) -> str:
    """Letters and digits only, case-folded, layout tags dropped: for "is this content
    already shown?" checks."""
    # Dropping characters is a per-character filter, so the ASCII ones can go first in one
    # C pass (bytes.translate, several times faster than the regex on Markdown, which is
    # mostly punctuation and spaces); the regex then only sees the non-ASCII rest.
    if "<" in text or "[!" in text:
        text = _LAYOUT_TAG.sub("", text)
    return _drop_non_word(text, _ASCII_NON_WORD, _NON_WORD)


def _drop_non_word(text: str, ascii_drop: bytes, non_word: re.Pattern[str]) -> str:
    """`text` without the bytes `ascii_drop` and the rest of what `non_word` matches,
    case-folded (`squash` and `squash_lines` after the layout tags are gone)."""
    kept = text.encode("utf-8", "surrogatepass")
    rest = kept.translate(None, ascii_drop).decode("utf-8", "surrogatepass")
    if not rest.isascii():
        # Mostly the renderer's own separators: dropped in C passes, and the slow
        # per-character regex only runs if anything non-ASCII is left.
        for mark in _OWN_MARKS:
            rest = rest.replace(mark, "")
        if not rest.isascii():
            return non_word.sub("", rest).casefold()
    return rest.lower()


_ASCII_NON_WORD_KEEP_LF = _ASCII_NON_WORD.replace(b"\n", b"")
_NON_WORD_KEEP_LF = re.compile(r"[^\w\n]+|_")


def squash_lines(text: str) -> list[str]:
    """`squash` of every line of `text`, in one pass over it (the same characters dropped,
    line breaks kept): a page's atoms for "already shown?" lookups."""
    if "<" in text:
        text = _LAYOUT_TAG.sub("", text)
    return _drop_non_word(text, _ASCII_NON_WORD_KEEP_LF, _NON_WORD_KEEP_LF).split("\n")


def squashed_on_page(text: str, squashed: str, page: str) -> bool:
    """Cheap sufficient test for `squashed in squash(page)`, where `squashed` is
    `squash(text)` of at least SQUASH_SURE characters: `text` appears on the page verbatim.

    Squashing drops and case-folds characters one by one, except layout tags, dropped whole;
    a tag on the page can only straddle the text's ends if the text starts with the tail of
    one or ends with the head of one (and SQUASH_SURE squashed characters do not fit inside
    one). False means "cannot tell", not "absent".
    """
    return (
        len(squashed) >= SQUASH_SURE
        and text in page
        and not text.startswith(TAG_TAILS)
        and not text.endswith(TAG_HEADS)
    )
