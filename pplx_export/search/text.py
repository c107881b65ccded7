"""CJK word boundaries for FTS5, and the query rewrite that matches them. Pure.

SQLite's `unicode61` tokenizer does not segment Chinese or Japanese: a run of ideographs is
one token, so a two-character word inside a sentence is never found. The `trigram`
tokenizer finds substrings, but not ones shorter than three characters (most Chinese words
have two), it cannot rank by word, and it makes the index about three times the text.
(This machine's SQLite 3.40 has both; stdlib sqlite3 has no way to add a tokenizer.)

So the text is segmented before it is indexed: a space goes between every two CJK
characters, and between a CJK character and a letter or digit next to it. Every ideograph,
kana and half-width katakana is then a token of its own. The query gets the same
treatment, and each CJK run in it becomes a phrase: `量子` is searched as the adjacent
tokens `"量 子"`, which finds exactly the texts that contain the word (of any length), with
bm25 ranking and the FTS5 syntax (`OR`, `NEAR`, prefix `*`) intact. In Datasette, whose
search box does not rewrite queries, typing `量 子` finds the same rows.

A space costs one byte (a zero-width space would cost three per character, and CJK text
is mostly characters). `plain` takes the spaces between two CJK characters out of what is
shown; a space the text had there is lost from the snippet, never from the archive.
Hangul is left alone: Korean separates words with spaces already.
"""

from __future__ import annotations

import re

# Ideographs (URO, extension A, compatibility, the supplementary planes) and kana: what
# unicode61 would otherwise glue into one token.
_CJK = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u31f0-\u31ff"  # katakana phonetic extensions
    "\u3400-\u4dbf"  # extension A
    "\u4e00-\u9fff"  # unified ideographs
    "\uf900-\ufaff"  # compatibility ideographs
    "\uff66-\uff9f"  # half-width katakana
    "\U00020000-\U0003134f"  # extensions B-G
)
_HAS_CJK = re.compile(f"[{_CJK}]")
_AFTER_CJK = re.compile(f"(?<=[{_CJK}])(?=\\w)")
_BEFORE_CJK = re.compile(f"(?<=[^\\W{_CJK}])(?=[{_CJK}])")
# A space `segment` put between two CJK characters (either may carry a snippet marker,
# \x02 or \x03, on that side).
_JOIN = re.compile(f"([{_CJK}][\\x02\\x03]?) (?=[\\x02\\x03]?[{_CJK}])")
# A FTS5 bareword: what its query grammar accepts unquoted (letters, digits, `_`, and any
# non-ASCII character).
_BAREWORD = re.compile(r"[0-9A-Za-z_\x1a\x80-\U0010ffff]+")
# Words joined by `-`, `.`, `'` or `/` (e-bike, node.js, don't, and/or): FTS5 rejects them
# bare, so they are searched as the phrase their tokens make.
_JOINED = re.compile(r"(?<![\w\"])\w+(?:[-.'/]\w+)+")


def segment(text: str) -> str:
    """`text` with a space at every CJK token boundary (unchanged without CJK)."""
    if text.isascii() or _HAS_CJK.search(text) is None:
        # Most non-ASCII prose is a dash or a curly quote away from ASCII: one scan for a
        # CJK character is much cheaper than the two lookbehind passes below.
        return text
    # Two passes inserting a literal space at empty matches (a template or a callback
    # would run Python code per character): after every CJK character followed by a word
    # character, and after every other word character followed by a CJK one.
    return _BEFORE_CJK.sub(" ", _AFTER_CJK.sub(" ", text))


def plain(text: str) -> str:
    """Stored (segmented) text as it is shown: no space between two CJK characters."""
    if text.isascii():
        return text
    return _JOIN.sub(r"\1", text)


def rewrite_query(query: str) -> str:
    """A FTS5 query whose CJK words match segmented text.

    Outside double quotes, a bareword holding CJK becomes a quoted phrase of its segments
    (`量子计算` -> `"量 子 计 算"`, `量子*` -> `"量 子"*`), and so do words joined by
    punctuation (`e-bike` -> `"e-bike"`); inside quotes the phrase is only segmented.
    Everything else (operators, parentheses, column filters, `NEAR`) is kept.
    """
    if not (_JOINED.search(query) or _HAS_CJK.search(query)):
        return query
    out: list[str] = []
    i = 0
    n = len(query)
    while i < n:
        ch = query[i]
        if ch == '"':
            # A FTS5 string: "" inside is an escaped quote; an unterminated one runs to the end.
            j = i + 1
            while j < n:
                if query[j] == '"':
                    if j + 1 < n and query[j + 1] == '"':
                        j += 2
                        continue
                    break
                j += 1
            out.append(segment(query[i : j + 1]))
            i = j + 1
            continue
        m = _JOINED.match(query, i) or _BAREWORD.match(query, i)
        if m is None:
            out.append(ch)
            i += 1
            continue
        word = m.group(0)
        end = m.end()
        column = end < n and query[end] == ":"
        if not column and (_HAS_CJK.search(word) or not _BAREWORD.fullmatch(word)):
            out.append('"' + segment(word) + '"')
        else:
            out.append(word)
        i = end
    return "".join(out)


def as_phrase(query: str) -> str:
    """The whole query as one FTS5 phrase (the fallback for a query FTS5 cannot parse)."""
    return '"' + segment(query).replace('"', '""') + '"'


# One FTS5 query token: a string, a column set, a bareword, or a single character.
_TOKEN = re.compile(r'"(?:[^"]|"")*"?|\{[^}]*\}|[0-9A-Za-z_\x1a\x80-\U0010ffff]+|\S')


def positive_query(fts_query: str) -> str:
    """`fts_query` without its `NOT` operands: what a snippet highlights (a row that matched
    the query matches this too). FTS5 evaluates a NOT clause for the whole table even when
    asked about one row, which made snippets of `a NOT b` cost seconds at 50,000 threads."""
    tokens = _TOKEN.findall(fts_query)
    if "NOT" not in tokens:
        return fts_query
    out: list[str] = []
    i = 0
    while i < len(tokens):
        if tokens[i] == "NOT":
            i = _operand_end(tokens, i + 1)
            continue
        out.append(tokens[i])
        i += 1
    # FTS5 reads tokens apart as it reads them together, except `col:` and `term*`.
    return re.sub(r" \*", "*", re.sub(r" ?: ?", ":", " ".join(out)))


def _operand_end(tokens: list[str], i: int) -> int:
    """The index after the operand starting at tokens[i] (a column filter with its operand,
    a parenthesised group, NEAR(...), or a phrase with its `*`)."""
    if i >= len(tokens):
        return i
    if tokens[i] in ("-", "+", "^"):
        return _operand_end(tokens, i + 1)
    if i + 1 < len(tokens) and tokens[i + 1] == ":":
        return _operand_end(tokens, i + 2)
    if tokens[i] == "NEAR" and i + 1 < len(tokens) and tokens[i + 1] == "(":
        i += 1
    if tokens[i] == "(":
        depth = 0
        while i < len(tokens):
            depth += {"(": 1, ")": -1}.get(tokens[i], 0)
            i += 1
            if depth == 0:
                return i
        return i
    i += 1
    while i < len(tokens) and tokens[i] in ("*", "+"):
        i += 1 if tokens[i] == "*" else 2  # `a + b` joins phrases
    return i
