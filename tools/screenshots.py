"""Screenshots of one thread per mode (its conversation.md and first turn) and of the
archive's index.md, in both render flavours.

    python -m tools.screenshots OUT [--open] [--height 2000] [--lang en|zh]
                                    [--keep DIR | --archive DIR]

Builds the demo archive (the bundled sample library, exported through the in-process
emulator: never the shared corpus) in a temporary directory, once per flavour (github, then
obsidian re-rendered from the same raw files), picks the largest first turn of each mode,
and writes OUT/<mode>__<flavor>.html and .png (the turn), OUT/<mode>__conversation__<flavor>
(its conversation.md) and OUT/index__<flavor> (headless Chromium, `chromium` on PATH;
without it only the HTML is written). The CSS is close to GitHub's Markdown view.
`--keep DIR` builds the demo archives there and leaves them, so the pages' embedded images
and relative links resolve after the run (each page carries a <base> naming its source
folder); `--archive DIR` shoots an archive already rendered (the re-rendered corpus, say),
in whatever flavour it was rendered.

The HTML approximates what a reader sees: CommonMark + tables with markdown-it-py
(tools/render_html.py; front matter as a table, as GitHub shows it). For the obsidian
flavour a small pre-pass first turns foldable callouts into <details>, wikilinks and
`![[embeds]]` into Markdown links and images, and footnotes into linked `[n]` markers, as
Obsidian would show them. `--open` opens
every fold, to read what is inside. For looking at the output by eye; not used by the tests.
"""

from __future__ import annotations

import argparse
import logging
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tools.render_html import to_html

MODES = ("search", "deep-research", "computer", "council", "study")
FLAVORS = ("github", "obsidian")

_CALLOUT = re.compile(r"^> \[!(\w+)\]([-+]?) ?(.*)$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_WIKILINK = re.compile(r"(!?)\[\[([^\]|\\]+)(?:\\?\|([^\]]*))?\]\]")


def _unquote(line: str) -> str:
    return line[2:] if line.startswith("> ") else line[1:]


def callouts_to_details(md: str) -> str:
    """Obsidian callouts (`> [!note]- title` and the quoted lines under it) as <details>
    folds, nested ones included; `-` folded, `+` open; a callout that does not fold as a
    quote. Fenced code is left alone."""
    lines = md.split("\n")
    out: list[str] = []
    fence = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = ""
            out.append(line)
            i += 1
            continue
        if m:
            fence = m.group(1)
            out.append(line)
            i += 1
            continue
        head = _CALLOUT.match(line)
        if head is None:
            out.append(line)
            i += 1
            continue
        if not head.group(2):
            # A callout that does not fold (`> [!warning] text`): a box with its text, read
            # as the quote the github flavour writes.
            out.append(f"> {head.group(3)}" if head.group(3) else ">")
            i += 1
            continue
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].startswith(">"):
            body.append(_unquote(lines[i]))
            i += 1
        state = "" if head.group(2) == "-" else " open"
        out += [
            f"<details{state}>",
            f"<summary>{head.group(3) or head.group(1).title()}</summary>",
            "",
            callouts_to_details("\n".join(body)),
            "",
            "</details>",
        ]
    return "\n".join(out)


def wikilinks_to_links(md: str) -> str:
    """`[[path|text]]` -> `[text](<path>)`; `![[path]]` -> `![path](<path>)`."""

    def one(m: re.Match[str]) -> str:
        bang, target, text = m.group(1), m.group(2), m.group(3)
        return f"{bang}[{text or target}](<{target}>)"

    return _WIKILINK.sub(one, md)


# A footnote definition as the obsidian flavour writes it (`[^n]: [title]( url )`, one line)
# and a footnote reference (`[^n]`, `[^2-1]` in conversation.md: turn 2, source 1).
_FOOTNOTE_DEF = re.compile(r"^\[\^([^\]\s]+)\]: \[.*\]\( ?(.+?) ?\)$", re.MULTILINE)
_FOOTNOTE_REF = re.compile(r"\[\^([^\]\s]+)\](?!:)")


def footnotes_to_links(md: str) -> str:
    """`[^n]` -> `[\\[n\\]](url)` with the url of its definition, definitions dropped: the
    marker a reader sees, linked to its source (Obsidian lists the sources under the page)."""
    urls = {m.group(1): m.group(2) for m in _FOOTNOTE_DEF.finditer(md)}
    if not urls:
        return md
    md = _FOOTNOTE_DEF.sub("", md)

    def one(m: re.Match[str]) -> str:
        label = m.group(1)
        url = urls.get(label)
        if url is None:
            return m.group(0)
        return f"[\\[{label.rsplit('-', 1)[-1]}\\]]({url})"

    return _FOOTNOTE_REF.sub(one, md)


def obsidian_to_commonmark(md: str) -> str:
    return callouts_to_details(footnotes_to_links(wikilinks_to_links(md)))


def build_archives(work: Path, lang: str) -> dict[str, Path]:
    """The demo archive rendered in each flavour: flavour -> archive root."""
    from pplx_export.commands.rerender.run import rerender
    from pplx_export.commands.setup.demo import run_demo
    from pplx_export.pipeline.assemble import default_engine

    roots = {"github": work / "github", "obsidian": work / "obsidian"}
    run_demo(roots["github"], lang=lang, quiet=True, progress=False)
    shutil.copytree(roots["github"], roots["obsidian"], symlinks=True)
    summary = rerender(roots["obsidian"], lang=lang, jobs=1, engine=default_engine("obsidian"))
    if summary.failed:
        raise SystemExit(f"re-render to obsidian failed: {summary.failures}")
    return roots


def pick_turns(root: Path) -> dict[str, Path]:
    """The largest first turn file of each mode (most structure to look at): mode -> path
    relative to the archive root."""
    picked: dict[str, Path] = {}
    for mode in MODES:
        turns = sorted(root.glob(f"*/{mode}/*/turns/turn_0001.md"))
        if turns:
            best = max(turns, key=lambda p: (p.stat().st_size, str(p)))
            picked[mode] = best.relative_to(root)
    return picked


def screenshot(browser: str, page: Path, png: Path, height: int) -> bool:
    done = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--window-size=1000,{height}",
            f"--screenshot={png}",
            page.resolve().as_uri(),
        ],
        check=False,
        capture_output=True,
        timeout=120,
    )
    return done.returncode == 0 and png.is_file()


def page_html(text: str, source: Path, *, flavor: str, open_folds: bool) -> str:
    """One Markdown page as HTML whose relative links and images resolve against the folder
    the page came from."""
    if flavor == "obsidian":
        text = obsidian_to_commonmark(text)
    page = to_html(text)
    if open_folds:
        page = page.replace("<details>", "<details open>")
    base = f'<base href="{source.parent.resolve().as_uri()}/">'
    return page.replace("<meta charset=utf-8>", "<meta charset=utf-8>" + base, 1)


def shoot(roots: dict[str, Path], out: Path, args: argparse.Namespace, browser: str | None) -> None:
    """The index page and, per mode, the largest first turn and its conversation.md, once
    per flavour in `roots`."""
    first = next(iter(roots.values()))
    turns = pick_turns(first)
    shots: list[tuple[str, Path]] = [("index", Path("index.md"))]
    for mode in MODES:
        if mode not in turns:
            print(f"{mode}: no thread of this mode in the archive")
            continue
        shots.append((mode, turns[mode]))
        shots.append((f"{mode}__conversation", turns[mode].parent.parent / "conversation.md"))
    for name, rel in shots:
        for flavor, root in roots.items():
            source = root / rel
            if not source.is_file():
                print(f"{name} ({flavor}): {rel} not in the archive")
                continue
            text = source.read_text(encoding="utf-8")
            page = page_html(text, source, flavor=flavor, open_folds=args.open)
            target = out / f"{name}__{flavor}.html"
            target.write_text(page, encoding="utf-8")
            line = f"{name} ({flavor}): {rel} -> {target}"
            if browser is not None:
                png = target.with_suffix(".png")
                ok = screenshot(browser, target, png, args.height)
                line += f", {png}" if ok else ", screenshot failed"
            print(line)


def archive_flavor(root: Path) -> str:
    """The flavour an existing archive was rendered in, read from its index.md (Obsidian
    pages use wikilinks)."""
    index = root / "index.md"
    text = index.read_text(encoding="utf-8") if index.is_file() else ""
    return "obsidian" if "[[" in text else "github"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("out", type=Path, help="Directory for the .html and .png files.")
    ap.add_argument("--open", action="store_true", help="Open every fold.")
    ap.add_argument("--height", type=int, default=2000, help="Window height in pixels.")
    ap.add_argument("--lang", choices=("en", "zh"), default="en")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--keep", type=Path, help="Build the demo archives here and keep them.")
    where.add_argument("--archive", type=Path, help="Shoot this rendered archive instead.")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    # The demo's own warnings (a gone asset, a deleted thread) are part of the sample.
    logging.getLogger("pplx_export").setLevel(logging.ERROR)
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("no chromium on PATH (apt-get install -y chromium): writing HTML only")
    if args.archive is not None:
        root = args.archive
        shoot({archive_flavor(root): root}, args.out, args, browser)
        return 0
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        shoot(build_archives(args.keep, args.lang), args.out, args, browser)
        return 0
    with tempfile.TemporaryDirectory(prefix="pplx-screens-") as tmp:
        shoot(build_archives(Path(tmp), args.lang), args.out, args, browser)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
