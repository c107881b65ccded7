"""Mutation check of durability: drop each fsync (or turn a durable write into a plain one)
and see a test fail.

    python tools/durability_mutants.py [--list] [--only SUBSTRING] [--keep DIR]

The page cache survives a killed process, so no crash test sees a missing fsync; the tests
that guard them record `os.fsync`/`os.replace` (tests/fsync_support.py). This tool proves
they do: for each mutant below it copies the checkout (git ls-files) into a scratch
directory, applies the one change, and runs the tests that name the mutated module plus the
durability tests (every test module that records fsyncs), with `-x` and without the crash
tests (minutes each, and blind to an fsync). A mutant whose tests all pass SURVIVED: the
fsync it drops is unguarded. Exit 1 when any survives, 2 when a mutant's text is no longer
found (the code moved: update the list).

Run by hand (a few minutes: one pytest run per mutant); no test runs it.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The durability tests: every test module that records fsyncs (tests/fsync_support.py, or
# test_durability.py's own journal) and so can see one go missing.
DURABILITY_MARKS = r"\.durable\(|record_fsyncs|fsynced\("

# (file, text, replacement, which occurrence of `text` in the file, 1-based)
MUTANTS: list[tuple[str, str, str, int]] = [
    ("pplx_export/util/atomic.py", "os.fsync(fd)", "pass", 1),  # fsync_dir
    ("pplx_export/util/atomic.py", "os.fsync(fd)", "pass", 2),  # the temp file of a write
    ("pplx_export/util/atomic.py", "fsync_dir(Path(directory))", "pass", 1),
    ("pplx_export/pipeline/fetch_assets.py", "fsync_dir(files_dir)", "pass", 1),
    ("pplx_export/search/index.py", "os.fsync(fh.fileno())", "pass", 1),
    ("pplx_export/site/client.py", "os.fsync(fh.fileno())", "pass", 1),
    ("pplx_export/archive/history.py", "durable=True", "durable=False", 1),
    ("pplx_export/archive/history.py", "fsync_dir(target)", "pass", 1),
    ("pplx_export/archive/history.py", "fsync_dir(target.parent)", "pass", 1),
    ("pplx_export/archive/history.py", "fsync_dir(thread_dir)", "pass", 1),
    ("pplx_export/archive/thread_docs.py", "durable=True", "durable=False", 1),
    ("pplx_export/archive/official.py", "durable=True", "durable=False", 1),
    (
        "pplx_export/archive/writer.py",
        "sink.put(REPORT_SOURCE, report_body, durable=True)",
        "sink.put(REPORT_SOURCE, report_body, durable=False)",
        1,
    ),
    ("pplx_export/archive/writer.py", "durable=online", "durable=False", 1),  # manifest
    ("pplx_export/archive/writer.py", "durable=online", "durable=False", 2),  # thread.json
    ("pplx_export/archive/writer.py", "durable=durable,", "durable=False,", 1),
    ("pplx_export/archive/writer.py", "durable=True, sync_dir=False", "durable=False", 1),
    ("pplx_export/archive/writer.py", "fsync_dir(sink.directory)", "pass", 1),
    ("pplx_export/archive/migrate.py", "durable=True", "durable=False", 1),
    ("pplx_export/archive/migrate.py", "fsync_dir(parent)", "pass", 1),
    ("pplx_export/archive/migrate.py", "fsync_dir(src.parent)", "pass", 1),
    ("pplx_export/commands/spaces/sync_space.py", "durable=True", "durable=False", 1),
    ("pplx_export/commands/upkeep/assets_backfill.py", "durable=True", "durable=False", 1),
    ("pplx_export/commands/upkeep/assets_backfill.py", "durable=True", "durable=False", 2),
    ("pplx_export/commands/upkeep/assets_backfill.py", "durable=True", "durable=False", 3),
    ("pplx_export/commands/upkeep/assets_backfill.py", "fsync_dir(files_dir)", "pass", 1),
    ("pplx_export/store/library_index.py", "durable=True", "durable=False", 1),
    ("pplx_export/store/space_files.py", "durable=True", "durable=False", 1),
    ("pplx_export/config.py", "durable=True", "durable=False", 1),
    ("pplx_export/site/cookies.py", "durable=True", "durable=False", 1),
    ("pplx_export/site/cookies.py", "durable=True", "durable=False", 2),
    ("pplx_export/store/db.py", "synchronous = FULL", "synchronous = OFF", 1),
]


def _replace_nth(text: str, old: str, new: str, nth: int) -> str | None:
    at = -1
    for _ in range(nth):
        at = text.find(old, at + 1)
        if at < 0:
            return None
    return text[:at] + new + text[at + len(old) :]


def _tests_for(work: Path, module_file: str) -> list[str]:
    """The durability tests and every test file that names the module (either import form)."""
    dotted = module_file.removesuffix(".py").replace("/", ".")
    package, _, name = dotted.rpartition(".")
    found = subprocess.run(
        ["grep", "-rlE", f"{dotted}\\b|from {package} import .*\\b{name}\\b", "tests"],
        cwd=work,
        capture_output=True,
        text=True,
    ).stdout.split()
    guards = subprocess.run(
        ["grep", "-rlE", DURABILITY_MARKS, "tests"], cwd=work, capture_output=True, text=True
    ).stdout.split()
    tests = {f for f in found + guards if Path(f).name.startswith("test_") and "crash" not in f}
    return sorted(tests)


def _copy_checkout(dest: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--only", default="", help="only the mutants whose file contains this")
    ap.add_argument("--keep", type=Path, default=None, help="work in DIR and keep it")
    args = ap.parse_args()
    chosen = [m for m in MUTANTS if args.only in m[0]]
    if args.list:
        for f, old, new, nth in chosen:
            print(f"{f}: {old} -> {new} (#{nth})")
        return 0
    work = args.keep or Path(tempfile.mkdtemp(prefix="pplx-mutants-"))
    work.mkdir(parents=True, exist_ok=True)
    _copy_checkout(work)
    survived = missing = 0
    try:
        for f, old, new, nth in chosen:
            path = work / f
            original = path.read_text("utf-8")
            mutated = _replace_nth(original, old, new, nth)
            label = f"{f}: {old} -> {new} (#{nth})"
            if mutated is None:
                print(f"NOT FOUND {label}", flush=True)
                missing += 1
                continue
            path.write_text(mutated, "utf-8")
            try:
                tests = _tests_for(work, f)
                run = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "pytest",
                        "-x",
                        "-q",
                        "-p",
                        "no:randomly",
                        "-p",
                        "no:cacheprovider",
                        *tests,
                    ],
                    cwd=work,
                    capture_output=True,
                    text=True,
                )
            finally:
                path.write_text(original, "utf-8")
            caught = run.returncode != 0
            survived += not caught
            print(
                f"{'caught  ' if caught else 'SURVIVED'} {label} [{len(tests)} test files]",
                flush=True,
            )
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(
        f"{len(chosen) - survived - missing} of {len(chosen)} caught, {survived} survived"
        + (f", {missing} not found" if missing else "")
    )
    return 2 if missing else (1 if survived else 0)


if __name__ == "__main__":
    raise SystemExit(main())
