"""A no-op `re-render --changed-only` is mostly interpreter start-up, so what it imports is
its cost: the data model, the parser, the renderer, the writer and tomlkit (the config is
read with the stdlib's tomllib) stay out of it until a thread is actually rendered."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from pplx_export.commands.rerender.run import rerender

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "archive"

# Modules a no-op run must not import (a prefix stands for its package's modules too).
NOT_IMPORTED = (
    "pplx_export.models",
    "pplx_export.parse",
    "pplx_export.render",
    "pplx_export.archive.writer",
    "pplx_export.site.pacing",
    "tomlkit",
    "tempfile",
    # Nor the C JSON decoder (~15 ms to import; the render state's few records decode with
    # the stdlib), nor `secrets` (random, hmac: the snapshot's id uses os.urandom).
    "msgspec",
    "secrets",
    # Nor the network, the search index or the worker pool.
    "httpx",
    "email.utils",
    "rich.progress",
    "pplx_export.search.index",
    "pplx_export.commands.rerender.pool",
    "pplx_export.workers",
)

PROBE = """
import json, sys
from pplx_export.cli.export import run
names = json.loads(sys.argv[2])
sys.argv = ["pplx-export", "re-render", "--changed-only", "-q", "--json", "--out", sys.argv[1]]
try:
    run()
except SystemExit as exc:
    assert not exc.code, exc.code
loaded = [m for m in sys.modules if any(m == n or m.startswith(n + ".") for n in names)]
sys.stderr.write(json.dumps(sorted(loaded)))
"""


def test_a_noop_changed_only_run_imports_neither_the_model_nor_tomlkit(
    tmp_path: Path, isolated_home: Path
) -> None:
    root = tmp_path / "archive"
    thread = next(p for p in sorted(FIXTURES.glob("*/*/*")) if p.is_dir())
    shutil.copytree(thread, root / thread.relative_to(FIXTURES))
    assert rerender(root, jobs=1).written == 1
    # A config file, read as every command reads it (comments and all).
    config = isolated_home / ".config" / "pplx-export" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        '# kept by tomlkit when a command edits the file\ndefault_account = "maya"\n\n'
        '[accounts.maya]\nemail = "maya@example.com"  # the session check\n',
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(root), json.dumps(NOT_IMPORTED)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    summary = json.loads(done.stdout)
    assert (summary["threads"], summary["skipped"]) == (1, 1)  # the no-op path it is
    assert json.loads(done.stderr) == []


def test_slug_and_stem_patterns_keep_every_cjk_ideograph() -> None:
    """archive/paths.py spells its patterns `[^\\w-]`, not `[^\\w\\u4e00-\\u9fff-]` (which costs
    milliseconds to compile at every start): `\\w` covers the range, so the two are equal."""
    from pplx_export.archive import paths

    ideographs = "".join(map(chr, range(0x4E00, 0xA000)))
    for short, named in (
        (paths._SLUG_BAD, re.compile(r"[^\w\u4e00-\u9fff-]+")),
        (paths._STEM_BAD, re.compile(r"[^\w\u4e00-\u9fff.-]+")),
    ):
        assert short.sub("_", ideographs) == named.sub("_", ideographs) == ideographs
        sample = "Ünïcode 名前 — a/b\\c: d.e-f_g 😀\u3000x"
        assert short.sub("_", sample) == named.sub("_", sample)
