"""The thread's generated files (charts, documents, code files, report versions) as links.

The archive's list of files (`LocalFile`: name, version, path under `assets/files/`, size,
or why there is no file) is an input of the render, built by sync from the assets, the
manifest and the disk; render never looks at the disk itself. A file is linked where it was
produced: the step that shared it (`share_file`: a SOURCES item's `asset_uuids`), else the
turn whose entry listed it; conversation.md lists every file of the thread. Images are
embedded.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pplx_export.models import EXPIRED, NO_CHANNEL, LocalFile
from pplx_export.render.labels import Labels
from pplx_export.render.text import GITHUB, fenced, image, link, one_line

IMAGE_EXTS = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp")


def file_name(f: LocalFile) -> str:
    """What a file entry is called: a diff by the files it changes (its title is often one
    step title shared by every edit of a task), anything else by its own name."""
    if f.changes:
        return ", ".join(one_line(c) for c in f.changes)
    return one_line(f.filename) or f.path.rsplit("/", 1)[-1] or f.uuid


def diff_numbers(items: Sequence[LocalFile]) -> dict[LocalFile, tuple[int, int]]:
    """`(n, total)` of each diff among the diffs that change the same files, in the
    thread's order (the manifest keeps the platform's): seven edits of one file read
    `diff 1 of 7` … `diff 7 of 7`, not seven times the same line."""
    groups: dict[str, list[LocalFile]] = {}
    for f in items:
        if f.changes:
            groups.setdefault(file_name(f), []).append(f)
    return {
        f: (n, len(group))
        for group in groups.values()
        if len(group) > 1
        for n, f in enumerate(group, 1)
    }


class Files:
    """The thread's files, looked up by asset uuid and by the entry that listed them."""

    __slots__ = ("by_entry", "by_url", "by_uuid", "items", "numbers")

    def __init__(self, items: Iterable[LocalFile] = ()) -> None:
        self.items: tuple[LocalFile, ...] = tuple(items)
        self.by_uuid: dict[str, list[LocalFile]] = {}
        self.by_entry: dict[str, list[LocalFile]] = {}
        # Files by the URL they come from: a media item that shows one is that file.
        self.by_url: dict[str, LocalFile] = {}
        for f in self.items:
            if f.url and (f.path or f.url not in self.by_url):
                self.by_url[f.url] = f
            if f.uuid:
                self.by_uuid.setdefault(f.uuid, []).append(f)
            if f.entry_uuid:
                self.by_entry.setdefault(f.entry_uuid, []).append(f)
        self.numbers = diff_numbers(self.items)

    def __bool__(self) -> bool:
        return bool(self.items)

    def of_entry(self, entry_uuid: str) -> list[LocalFile]:
        return self.by_entry.get(entry_uuid, []) if entry_uuid else []

    def at_url(self, url: str) -> LocalFile | None:
        """The thread's file that comes from `url` (its query ignored), downloaded or not;
        one on disk first."""
        return self.by_url.get(url.split("?", 1)[0]) if url else None


NO_FILES = Files()


def relative(rel: str, here: str) -> str:
    """`rel` (relative to the thread directory) as seen from the page at `here`."""
    if "/" not in here:
        return rel
    folder = here.rsplit("/", 1)[0] + "/"
    return rel.removeprefix(folder) if rel.startswith(folder) else "../" + rel


def human_size(n: int) -> str:
    """`73 B`, `12.5 KB`, `3.0 MB` (binary multiples, as file managers show them)."""
    if n < 1024:
        return f"{n} B"
    size = float(n)
    for unit in ("KB", "MB", "GB"):
        size /= 1024
        if size < 1024:
            return f"{size:.1f} {unit}"
    return f"{size / 1024:.1f} TB"


def is_image(path: str) -> bool:
    return path.lower().endswith(IMAGE_EXTS)


def _facts(lb: Labels, files: Files, f: LocalFile) -> list[str]:
    if f.changes:
        # A diff: which edit of its files it is, and the title the platform gave it.
        n, total = files.numbers.get(f, (0, 0))
        facts = [lb.file_diff_n.format(n=n, total=total) if total else lb.file_diff]
        title = one_line(f.filename)
        if title and title != file_name(f):
            facts.append(title)
    else:
        version = lb.file_inline if f.version == "inline" else f.version
        facts = [version] if version else []
    if f.path:
        if f.size is not None:
            facts.append(human_size(f.size))
        return facts
    return [*facts, missing_reason(lb, f)]


def missing_reason(lb: Labels, f: LocalFile) -> str:
    """Why the archive has no file for `f` (expired, no download channel, not yet)."""
    return {EXPIRED: lb.file_expired, NO_CHANNEL: lb.file_no_channel}.get(
        f.missing, lb.file_not_downloaded
    )


def file_line(
    lb: Labels, files: Files, f: LocalFile, here: str, extra: str = "", flavor: str = GITHUB
) -> str:
    """One list item: the linked file (an image also embedded), its version and size, or
    its name and why the archive has no file; `extra` is appended (a link to its turn)."""
    name = file_name(f)
    facts = _facts(lb, files, f)
    if extra:
        facts.append(extra)
    if not f.path:
        return " · ".join([f"- {name}", *facts])
    target = relative(f.path, here)
    line = " · ".join([f"- {link(name, target, flavor)}", *facts])
    if is_image(f.path):
        line += "\n\n  " + image(name, target, flavor)
    return line


def file_lines(
    lb: Labels, files: Files, items: Sequence[LocalFile], here: str, flavor: str = GITHUB
) -> str:
    return "\n".join(file_line(lb, files, f, here, "", flavor) for f in items)


def shared_lines(
    lb: Labels, files: Files, uuids: Sequence[str], here: str, flavor: str = GITHUB
) -> str:
    """The files a step shared, by asset uuid; a uuid the thread lists no file for is named
    as it stands (the step still says something was shared)."""
    lines: list[str] = []
    for uuid in uuids:
        found = files.by_uuid.get(uuid)
        if found:
            lines += [file_line(lb, files, f, here, "", flavor) for f in found]
        else:
            lines.append(f"- `{uuid}` · {lb.file_unlisted}")
    return "\n".join(lines)


def unlinked(
    lb: Labels, files: Files, items: Sequence[LocalFile], here: str, page: str
) -> list[LocalFile]:
    """The files of `items` that the page text `page` does not link (or name) yet."""
    out = []
    for f in items:
        if f.path:
            # The path itself, whatever the link syntax around it (links or wikilinks).
            target = relative(f.path, here)
            if not any(target + end in page for end in (")", ">", "]", "|")):
                out.append(f)
        elif file_line(lb, files, f, here) not in page:
            out.append(f)
    return out


# Fence languages by file extension, where the extension is not the language's own name.
_FENCE_LANGS = {"sh": "bash", "py": "python", "js": "javascript", "ts": "typescript", "rb": "ruby"}


def inline_file_text(kind: str, filename: str, content: str) -> str:
    """The text of an inline asset's `.⟨kind⟩.md` file: its code (or diff) in a fence, so the
    Markdown file shows it as code (a script read as Markdown loses its `#` lines to
    headings)."""
    if kind == "diff":
        lang = "diff"
    else:
        stem, dot, ext = filename.rpartition(".")
        ext = ext.lower() if dot and stem else ""
        lang = _FENCE_LANGS.get(ext, ext if ext.isalnum() else "")
    return fenced(content, lang) + "\n"
