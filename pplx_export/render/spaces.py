"""`spaces/<slug>.md`, `spaces/index.md` and `spaces/spaces.json` text. Pure.

The inputs are plain dataclasses that `pipeline.space_catalog` fills from the archive. Every
list is sorted here, and no clock or absolute path reaches the text, so the same archive
always gives the same bytes. Every string from the API goes through `cell`/`link` (pipes,
brackets and line breaks escaped) before it reaches a table or a link.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from json.encoder import encode_basestring

from pplx_export.models import JSON
from pplx_export.render.labels import SpaceLabels, space_labels
from pplx_export.render.text import GITHUB, cell, link, one_line
from pplx_export.util.jsonobj import attrs_json
from pplx_export.util.jsontext import dumps_indented


@dataclass
class Member:
    username: str = ""
    name: str = ""
    permission: int = 0

    def to_json(self) -> JSON:
        return asdict(self)


@dataclass
class SpaceThread:
    uuid: str
    title: str = ""
    author: str = ""
    mode: str = ""
    last_updated: str = ""
    dir: str = ""  # newest exported directory, relative to the archive root; "" = not exported

    def to_json(self) -> JSON:
        keys = "uuid title author mode lastUpdated dir"
        return attrs_json(self, keys, lastUpdated=self.last_updated, dir=self.dir or None)


@dataclass
class SpacePage:
    file: str  # page file name under spaces/, e.g. "ocean-notes-4b1e0a.md"
    slug: str = ""
    uuid: str = ""
    title: str = ""
    emoji: str = ""
    description: str = ""
    owner: Member | None = None
    members: list[Member] = field(default_factory=list)  # contributors, owner excluded
    meta_via: str = ""  # the account whose answer the metadata is ("" = not fetched)
    meta_error: str = ""  # why no account could fetch it
    threads: list[SpaceThread] = field(default_factory=list)
    no_space: bool = False  # the page of threads in no space

    @property
    def participants(self) -> list[tuple[str, int]]:
        """(author, thread count), most threads first."""
        counts: dict[str, int] = {}
        for t in self.threads:
            key = t.author or "unknown"
            counts[key] = counts.get(key, 0) + 1
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))

    @property
    def exported(self) -> int:
        return sum(1 for t in self.threads if t.dir)


def emoji_char(value: str) -> str:
    """`1f30a` (the API's code point form, `-` joined for sequences) -> the character.

    Anything that is not such a code point list is returned as one line (it may already be
    the character); values that are not characters at all come back empty."""
    text = one_line(value)
    parts = text.split("-")
    if text and all(
        1 <= len(p) <= 6 and all(c in "0123456789abcdefABCDEF" for c in p) for p in parts
    ):
        try:
            return "".join(chr(int(p, 16)) for p in parts)
        except (ValueError, OverflowError):
            return ""
    return text if len(text) <= 8 else ""


def _cell(text: str) -> str:
    """`cell`, with a short cut for the plain values most cells hold (a table of thousands of
    threads is rendered on every run)."""
    if "|" in text or "\n" in text or "\r" in text or "\\" in text:
        return cell(text)
    return text


def _permission(lb: SpaceLabels, value: int) -> str:
    name = lb.permissions.get(value)
    return f"{value} {name}" if name else (str(value) if value else lb.unknown)


def _member_name(m: Member) -> str:
    return m.name or m.username or "?"


def _thread_rows(page: SpacePage, lb: SpaceLabels, flavor: str) -> list[str]:
    rows = [
        f"| {lb.title} | {lb.author} | {lb.mode} | {lb.date} | uuid | {lb.archive} |",
        "|---|---|---|---|---|---|",
    ]
    for t in sort_threads(page.threads):
        title = t.title or t.uuid[:8]
        shown = (
            link(title, f"../{t.dir}/conversation.md", flavor) if t.dir else cell(one_line(title))
        )
        where = link(lb.folder, f"../{t.dir}/") if t.dir else lb.not_exported
        rows.append(
            f"| {_cell(shown)} | {_cell(t.author or lb.unknown)} | {_cell(t.mode)} | "
            f"{_cell(t.last_updated[:10])} | `{_cell(t.uuid[:8])}` | {_cell(where)} |"
        )
    return rows


def sort_threads(threads: list[SpaceThread]) -> list[SpaceThread]:
    """Newest first (lastUpdated is µs ISO text: it sorts as time), then by UUID."""
    return sorted(threads, key=lambda t: (t.last_updated, t.uuid), reverse=True)


def sort_members(members: list[Member]) -> list[Member]:
    return sorted(members, key=lambda m: (-m.permission, _member_name(m).casefold(), m.username))


def page_heading(page: SpacePage, lb: SpaceLabels) -> str:
    if page.no_space:
        return lb.no_space
    emoji = emoji_char(page.emoji)
    title = one_line(page.title) or page.slug or page.uuid[:8]
    return f"{emoji} {title}" if emoji else title


def render_space_page(page: SpacePage, lang: str = "en", flavor: str = GITHUB) -> str:
    lb = space_labels(lang)
    out = [f"# {page_heading(page, lb)}", ""]
    if page.no_space:
        out += [lb.no_space_intro, ""]
    else:
        ids = ((lb.slug, page.slug), (lb.uuid, page.uuid))
        facts = [f"- {label}: `{cell(one_line(value))}`" for label, value in ids if value]
        if page.description:
            facts.append(f"- {lb.description}: {one_line(page.description)}")
        out += [*facts, ""] if facts else []
        out += _members_block(page, lb)
    out += [f"## {lb.participants}", ""]
    parts = page.participants
    out += [", ".join(f"{cell(a)} ({n})" for a, n in parts) if parts else lb.unknown, ""]
    out += [f"## {lb.threads} ({len(page.threads)})", ""]
    out += _thread_rows(page, lb, flavor)
    return "\n".join(out) + "\n"


def _members_block(page: SpacePage, lb: SpaceLabels) -> list[str]:
    out = [f"## {lb.members}", ""]
    if page.meta_error:
        out += [lb.meta_error.format(error=one_line(page.meta_error)), ""]
    if page.owner is None and not page.members:
        return out + ([] if page.meta_error else [lb.meta_missing, ""])
    if page.meta_via:
        out += [lb.meta_via.format(account=one_line(page.meta_via)), ""]
    out += [f"| {lb.member} | {lb.username} | {lb.permission} |", "|---|---|---|"]
    everyone = ([page.owner] if page.owner else []) + sort_members(page.members)
    for m in everyone:
        out.append(
            f"| {cell(_member_name(m))} | {cell(m.username)} | {_permission(lb, m.permission)} |"
        )
    return [*out, ""]


def render_spaces_index(pages: list[SpacePage], lang: str = "en", flavor: str = GITHUB) -> str:
    lb = space_labels(lang)
    spaces = [p for p in pages if not p.no_space]
    loose = next((p for p in pages if p.no_space), None)
    total = sum(len(p.threads) for p in pages)
    out = [f"# {lb.spaces}", ""]
    out += [
        lb.summary.format(
            spaces=len(spaces), threads=total, no_space=len(loose.threads) if loose else 0
        ),
        "",
    ]
    out += [
        f"| {lb.space} | {lb.threads.lower()} | {lb.exported} | {lb.members.lower()} | {lb.page} |",
        "|---|---|---|---|---|",
    ]
    for p in [*spaces, *([loose] if loose else [])]:
        members = (1 if p.owner else 0) + len(p.members)
        shown = str(members) if members else ("—" if p.no_space else "?")
        out.append(
            f"| {cell(page_heading(p, lb))} | {len(p.threads)} | {p.exported} | {shown} | "
            f"{cell(link(p.file, p.file, flavor))} |"
        )
    return "\n".join(out) + "\n"


def spaces_json(pages: list[SpacePage]) -> str:
    """`spaces/spaces.json`: every page's data, a space's fields indented, each of its
    threads one compact line (readable, diffable, and cheap for thousands of threads).

    `{"spaces": [page, ...], "no_space": page | null}`; a page's `threads` comes last."""
    return join_spaces_json([(p.no_space, page_json_text(p)) for p in pages])


def join_spaces_json(parts: list[tuple[bool, str]]) -> str:
    """spaces.json from each page's `page_json_text` (with its `no_space`), in page order."""
    spaces = [text for no_space, text in parts if not no_space]
    loose = next((text.lstrip() for no_space, text in parts if no_space), "null")
    body = ",\n".join(spaces)
    return (
        f'{{\n "spaces": [\n{body}\n ],\n "no_space": {loose}\n}}\n'
        if spaces
        else (f'{{\n "spaces": [],\n "no_space": {loose}\n}}\n')
    )


def _thread_line(t: JSON) -> str:
    """`json.dumps(t, ensure_ascii=False)` of a SpaceThread.to_json(), without an encoder
    object per thread (a page may list thousands)."""
    parts = []
    for key, value in t.items():
        text = "null" if value is None else encode_basestring(value)
        parts.append(f'"{key}": {text}')
    return "{" + ", ".join(parts) + "}"


def page_json_text(p: SpacePage) -> str:
    """One page's part of spaces.json (indented as it stands in the file)."""
    doc = _page_json(p)
    threads = doc.pop("threads")
    head = dumps_indented(doc, 1)[:-2]  # drop the closing "\n}" to append the threads
    lines = [_thread_line(t) for t in threads]
    items = ",\n  ".join(lines)
    tail = f',\n "threads": [\n  {items}\n ]\n}}' if lines else ',\n "threads": []\n}'
    return "  " + (head + tail).replace("\n", "\n  ")


def _page_json(p: SpacePage) -> JSON:
    return {
        "file": p.file,
        "slug": p.slug,
        "uuid": p.uuid,
        "title": p.title,
        "emoji": p.emoji,
        "description": p.description,
        "owner": p.owner.to_json() if p.owner else None,
        "members": [m.to_json() for m in sort_members(p.members)],
        "participants": [{"author": a, "threads": n} for a, n in p.participants],
        "meta_via": p.meta_via or None,
        "meta_error": p.meta_error or None,
        "n_threads": len(p.threads),
        "n_exported": p.exported,
        "threads": [t.to_json() for t in sort_threads(p.threads)],  # last: see page_json_text
    }
