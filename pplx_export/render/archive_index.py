"""The archive's front door: `index.md` at the archive root. Pure.

Every exported thread, newest first, under a heading per month, with its date, mode,
space and author, linked to its conversation.md. An archive of more than `PAGE_FROM`
threads gets one page per year (`index-YYYY.md`) and an index.md that lists the years:
one Markdown file of 50,000 rows is more than GitHub or Obsidian will show.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from pplx_export.render.labels import labels_for
from pplx_export.render.text import GITHUB, cell, finish, join_blocks, link

INDEX_FILE = "index.md"
SPACES_INDEX = "spaces/index.md"
PAGE_FROM = 500  # threads above which the index is paged by year


@dataclass(frozen=True)
class IndexThread:
    rel: str  # ⟨account⟩/⟨mode⟩/⟨dir⟩, relative to the archive root
    title: str = ""
    mode: str = ""
    author: str = ""
    space: str = ""  # the space's title ("" = no space)
    date: str = ""  # YYYY-MM-DD of its last update (the directory's date when unknown)
    sort_key: str = ""  # ISO stamp, newest first


def year_file(year: str) -> str:
    return f"index-{year}.md"


def _ordered(threads: list[IndexThread]) -> list[IndexThread]:
    return sorted(threads, key=lambda t: (t.sort_key or t.date, t.rel), reverse=True)


def _table(threads: list[IndexThread], lang: str, flavor: str) -> str:
    lb = labels_for(lang)
    head = f"| {lb.index_date} | {lb.mode} | {lb.index_thread} | {lb.space} | {lb.author} |"
    rows = [head, "|---|---|---|---|---|"]
    for t in threads:
        name = link(t.title or lb.untitled, f"{t.rel}/conversation.md", flavor)
        rows.append(
            f"| {t.date} | {cell(t.mode)} | {cell(name)} | {cell(t.space)} | {cell(t.author)} |"
        )
    return "\n".join(rows)


def _by_month(threads: list[IndexThread], lang: str, flavor: str) -> list[str]:
    blocks: list[str] = []
    month = None
    run: list[IndexThread] = []
    for t in threads:
        if t.date[:7] != month and run:
            blocks += [f"## {month or '?'}", _table(run, lang, flavor)]
            run = []
        month = t.date[:7]
        run.append(t)
    if run:
        blocks += [f"## {month or '?'}", _table(run, lang, flavor)]
    return blocks


def _summary(threads: list[IndexThread], lang: str, flavor: str, spaces: bool) -> str:
    lb = labels_for(lang)
    modes = Counter(t.mode for t in threads)
    parts = [f"{lb.index_threads}{lb.sep}{len(threads)}"]
    parts += [
        f"{mode}{lb.sep}{n}" for mode, n in sorted(modes.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    if spaces:
        parts.append(link(lb.index_spaces, SPACES_INDEX, flavor))
    return "> " + " · ".join(parts)


def render_archive_index(
    threads: list[IndexThread], lang: str = "en", flavor: str = GITHUB, spaces: bool = False
) -> dict[str, str]:
    """File name (at the archive root) -> text: index.md, and index-YYYY.md pages when the
    archive is paged by year. `spaces`: `spaces` has written spaces/index.md (linked)."""
    lb = labels_for(lang)
    ordered = _ordered(threads)
    head = [f"# {lb.index_title}", _summary(ordered, lang, flavor, spaces)]
    if len(ordered) <= PAGE_FROM:
        body = _by_month(ordered, lang, flavor) if ordered else [lb.none]
        return {INDEX_FILE: finish(join_blocks(head + body))}
    years: dict[str, list[IndexThread]] = {}
    for t in ordered:
        years.setdefault(t.date[:4] or "unknown", []).append(t)
    files: dict[str, str] = {}
    lines = []
    for year, run in years.items():
        files[year_file(year)] = finish(
            join_blocks(
                [
                    f"# {lb.index_title} · {year}",
                    link(lb.index_title, INDEX_FILE, flavor),
                    *_by_month(run, lang, flavor),
                ]
            )
        )
        lines.append(f"- {link(year, year_file(year), flavor)} · {len(run)}")
    files[INDEX_FILE] = finish(join_blocks([*head, "\n".join(lines)]))
    return files
