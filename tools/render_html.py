"""Render archive pages to HTML as a reader's viewer would, and screenshot them.

    python -m tools.render_html OUT PAGE.md [PAGE.md ...] [--screenshot]

Each page is read as CommonMark + tables (markdown-it-py; YAML front matter shown as a
table, as GitHub does; `<details>` folds pass through as HTML) and written to
OUT/<thread>__<page>.html. With --screenshot, headless Chromium (`chromium` on PATH) saves a
full-width PNG of each. For looking at the output by eye; not used by the tests.
"""

from __future__ import annotations

import argparse
import html
import shutil
import subprocess
import sys
from pathlib import Path

import yaml  # type: ignore[import-untyped]
from markdown_it import MarkdownIt

# Close to GitHub's Markdown view (github-markdown-css, light): what a reader of an
# archive pushed to GitHub sees.
STYLE = """body{font:16px/1.5 -apple-system,BlinkMacSystemFont,"Segoe UI","Noto Sans",Helvetica,
Arial,sans-serif,"Noto Sans CJK SC";color:#1f2328;max-width:980px;margin:2em auto;padding:0 2em}
a{color:#0969da;text-decoration:none}a:hover{text-decoration:underline}
h1,h2{border-bottom:1px solid #d1d9e0;padding-bottom:.3em}h1{font-size:2em}h2{font-size:1.5em}
h1,h2,h3,h4{font-weight:600;margin:1.5em 0 .6em}
pre{background:#f6f8fa;padding:16px;border-radius:6px;overflow:auto;font-size:85%}
code{background:#eff1f3;border-radius:6px;padding:.2em .4em;font-size:85%}
pre code{padding:0;background:none}
blockquote{color:#59636e;border-left:.25em solid #d1d9e0;margin:0 0 16px;padding:0 1em}
table{border-collapse:collapse;margin:0 0 16px}td,th{border:1px solid #d1d9e0;padding:6px 13px}
tr:nth-child(2n){background:#f6f8fa}
details{margin:0 0 16px}summary{cursor:pointer}
.fm{font-size:85%}.fm td:first-child{font-weight:600}"""


def to_html(text: str) -> str:
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    head = ""
    if text.startswith("---\n"):
        end = text.index("\n---\n", 3)
        meta = yaml.safe_load(text[4:end]) or {}
        rows = "".join(
            f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(str(v))}</td></tr>"
            for k, v in meta.items()
        )
        head = f'<table class="fm">{rows}</table>'
        text = text[end + 5 :]
    body = md.render(text)
    return f"<!doctype html><meta charset=utf-8><style>{STYLE}</style>{head}{body}"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("pages", nargs="+", type=Path)
    ap.add_argument("--screenshot", action="store_true")
    ap.add_argument("--height", type=int, default=2400)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    for page in args.pages:
        thread = page.parent.parent.name if page.parent.name == "turns" else page.parent.name
        name = f"{thread}__{page.stem}"
        target = args.out / f"{name}.html"
        target.write_text(to_html(page.read_text(encoding="utf-8")), encoding="utf-8")
        print(target)
        if args.screenshot and browser:
            png = args.out / f"{name}.png"
            subprocess.run(
                [
                    browser,
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--hide-scrollbars",
                    f"--window-size=1000,{args.height}",
                    f"--screenshot={png}",
                    target.resolve().as_uri(),
                ],
                check=False,
                capture_output=True,
                timeout=120,
            )
            print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
