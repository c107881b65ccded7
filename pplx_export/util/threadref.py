"""Thread references -> web UUIDs, with no request (protocol.md §3.1, §9.4). Pure.

A thread is named by its web UUID, bare or in a URL: `/search/<uuid>`, `/computer/tasks/<uuid>`
or the old `/thread/<…>`. Threads made before about 2026 have title slugs instead:
`/search/what-is-python-eE52pv1vShiwEj2VPhouPA`, whose last 22 characters are the UUID's 16
bytes in unpadded base64url (§9.4, checked on real slug/uuid pairs). The words before them
may hold hyphens and the 22 characters may hold `-` and `_`, so the split is positional:
exactly the last 22 characters, after a `-` (or the whole slug when it is 22 long).
"""

from __future__ import annotations

import base64
import binascii
import re
import uuid as uuidlib
from dataclasses import dataclass

SITE = "https://www.perplexity.ai"
TAIL = 22  # base64url characters of 16 bytes, unpadded
ACCEPTED_FORMS = (
    "a UUID, or a thread URL (/search/<uuid>, /search/<title>-<22-character id>, "
    "/computer/tasks/<uuid>, /thread/<uuid or title slug>; the host may be left out)"
)

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_UUID_RE = re.compile(_UUID, re.I)
_TAIL = re.compile(rf"[A-Za-z0-9_-]{{{TAIL}}}")
_NOT_B64URL_END = re.compile(r"[^A-Za-z0-9_-]+$")
# A thread link inside text (answers, citations): the path segment after the thread path,
# up to what ends a URL in prose or Markdown. Trailing punctuation is trimmed afterwards.
_LINK = re.compile(
    r"perplexity\.ai/(search|thread|computer/tasks)/([^\s/?#()<>\[\]{}\"'`|\\^]+)", re.I
)
# The path of a thread URL: kind (lower-cased before matching) -> number of segments.
_KINDS = {"search": 2, "thread": 2, "computer": 3}


@dataclass(frozen=True)
class ThreadRef:
    """A parsed thread reference. `kind` is "" (a bare UUID), "search", "computer/tasks" or
    "thread"; `url` is the reference as a URL without query string or fragment (the site's
    host when it had none), "" for a bare UUID."""

    uuid: str  # lower-case web UUID
    kind: str = ""
    url: str = ""


def slug_uuid(slug: str) -> str | None:
    """The web UUID a URL's thread segment names: a UUID (any case; lower-cased) or a title
    slug `<words>-<22 base64url chars>` (or just the 22 chars). None for anything else,
    including 22 characters that are not the canonical encoding of 16 bytes."""
    if _UUID_RE.fullmatch(slug):
        return slug.lower()
    if len(slug) != TAIL and not (len(slug) > TAIL + 1 and slug[-TAIL - 1] == "-"):
        return None
    tail = slug[-TAIL:]
    if not _TAIL.fullmatch(tail):
        return None
    try:
        raw = base64.urlsafe_b64decode(tail + "==")
    except (binascii.Error, ValueError):
        return None
    # 22 characters carry 132 bits: the 4 spare ones must be zero, so each UUID has
    # exactly one slug tail and a random word of 22 letters is mostly not one.
    if len(raw) != 16 or base64.urlsafe_b64encode(raw)[:TAIL].decode() != tail:
        return None
    return str(uuidlib.UUID(bytes=raw))


def slug_tail(web_uuid: str) -> str:
    """The 22 characters a title slug of this thread ends with (the inverse of `slug_uuid`)."""
    raw = uuidlib.UUID(web_uuid).bytes
    return base64.urlsafe_b64encode(raw).decode()[:TAIL]


def parse_thread_ref(ref: str) -> ThreadRef | None:
    """A bare UUID or a thread URL (with or without scheme and host, query string or
    fragment; any host, so an emulator's URLs work too); None when `ref` is neither."""
    text = ref.strip()
    if _UUID_RE.fullmatch(text):
        return ThreadRef(text.lower())
    head = re.split(r"[?#]", text, maxsplit=1)[0]
    if not head or any(c.isspace() for c in head):
        return None
    scheme, sep, rest = head.partition("://")
    if not sep:
        scheme, rest = "", head
    elif scheme.lower() not in ("http", "https"):
        return None
    first = rest.split("/", 1)[0]
    if rest.startswith("/") or (not scheme and first.lower() in _KINDS):
        host, path = "", rest
    else:
        host, path = first, rest[len(first) :]
    parts = path.strip("/").split("/")
    kind = parts[0].lower()
    if _KINDS.get(kind) != len(parts) or (kind == "computer" and parts[1].lower() != "tasks"):
        return None
    kind = "computer/tasks" if kind == "computer" else kind
    segment = parts[-1]
    found = slug_uuid(segment)
    if found is None:
        return None
    if len(segment) != TAIL and _UUID_RE.fullmatch(segment):
        segment = found  # a UUID's case means nothing; a slug tail's does
    base = f"{scheme or 'https'}://{host}" if host else SITE
    return ThreadRef(found, kind, f"{base}/{kind}/{segment}")


def link_uuids(text: str) -> set[str]:
    """Lower-cased web UUIDs of the perplexity.ai thread links in `text`, either form."""
    found: set[str] = set()
    for match in _LINK.finditer(text):
        segment = match.group(2)
        head = _UUID_RE.match(segment)
        if head:
            found.add(head.group(0).lower())
            continue
        uuid = slug_uuid(_NOT_B64URL_END.sub("", segment))
        if uuid is not None:
            found.add(uuid)
    return found
