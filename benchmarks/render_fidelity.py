"""Render every thread of an archive copy and measure content fidelity.

Usage: python benchmarks/render_fidelity.py ARCHIVE [--lang en|zh] [--fidelity PATH]

Copies ARCHIVE (directories holding raw_entries.json [+ raw_blocks.json, thread.json]) to a
temporary directory, parses each thread with pplx_export.parse, writes render_thread's files
next to the raw files and runs the fidelity tool on the copy. Nothing in ARCHIVE is changed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pplx_export.parse import parse_thread, row_from_thread_json
from pplx_export.render import render_thread


def render_copy(root: Path, lang: str) -> int:
    n = 0
    for tdir in sorted({p.parent for p in root.rglob("raw_entries.json")}):
        plain = json.loads((tdir / "raw_entries.json").read_text(encoding="utf-8"))
        bp = tdir / "raw_blocks.json"
        blocks = json.loads(bp.read_text(encoding="utf-8")) if bp.exists() else None
        tp = tdir / "thread.json"
        meta = json.loads(tp.read_text(encoding="utf-8")) if tp.exists() else {}
        row = row_from_thread_json(meta)
        conv = parse_thread(
            plain,
            blocks,
            row,
            web_uuid=str(meta.get("web_uuid") or ""),
            url=str(meta.get("url") or ""),
            export_via=str(meta.get("export_via") or ""),
        )
        for rel, text in render_thread(conv, lang).items():
            out = tdir / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8")
        n += 1
    return n


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("archive", type=Path)
    ap.add_argument("--lang", default="en")
    ap.add_argument("--fidelity", type=Path, default=Path("/work/shared/tools/fidelity.py"))
    ap.add_argument("--missing", default="5")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "archive"
        shutil.copytree(args.archive, root)
        for p in root.rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        print(f"rendered {render_copy(root, args.lang)} threads ({args.lang})")
        cmd = [sys.executable, str(args.fidelity), str(root), "--missing", args.missing]
        return subprocess.run(cmd, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
