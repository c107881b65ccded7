"""Benchmark `import` memory on big "Export my data" files: peak RSS stays flat with size.

    python benchmarks/official_import.py [--big-mb 500] [--small-mb 5] [--runs 3] [--zip]
        [--keep DIR]

Generates two exports of the §9.8 shape (`{"conversations": [...]}`, conversations of 1-12
turns with 0.5-4 KB answers, uuids all different) of about --small-mb and --big-mb MB, as
plain JSON (and, with --zip, as the ZIP Perplexity mails), then runs `pplx-export import
FILE --audit-only --json` on each against an empty archive in a fresh process, best of
--runs, and prints the peak RSS (VmHWM of that process) and time of each, and the
ratio of the big file's peak RSS to the small one's (the floor, measured in the same run):
a streamed read keeps it near 1, a `json.load` would grow with the file. What grows is the
report (one row per conversation, and the `--json` document); the reader alone is measured
too (a process that only streams the array). The audit-only
mode is measured because recovering 100,000+ threads writes 100,000+ directories, which
measures the disk; the reader and the audit are the same code either way.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from pathlib import Path

# Peak RSS = VmHWM of the process's own memory map (Linux): ru_maxrss would not do, it is
# kept across execve, so a child of this (big) generating process would report our peak.
PEAK = (
    "def peak():\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM:'):\n"
    "            return int(line.split()[1])\n"
)
ENTRY = (
    "import sys\n" + PEAK + "from pplx_export.cli.export import main\n"
    "try:\n"
    "    main(sys.argv[1:], prog_name='pplx-export')\n"
    "finally:\n"
    "    sys.stderr.write(f'MAXRSS_KB {peak()}\\n')\n"
)
# The streamed reader alone (no CLI, no audit, no report): what the file's size costs.
READER = (
    "import sys\n" + PEAK + "from pplx_export.util.jsonstream import iter_array_in_object\n"
    "with open(sys.argv[1], 'rb') as fh:\n"
    "    n = sum(1 for _ in iter_array_in_object(fh, 'conversations'))\n"
    "sys.stderr.write(f'MAXRSS_KB {peak()}\\n')\n"
)
WORDS = ["heat", "pump", "basil", "tide", "chain", "sourdough", "kettle", "pothos", "garden"]


def _text(rng: random.Random, size: int) -> str:
    out: list[str] = []
    n = 0
    while n < size:
        word = rng.choice(WORDS)
        out.append(word)
        n += len(word) + 1
        if rng.random() < 0.05:
            out.append(f"[{rng.randint(1, 9)}]")
    return " ".join(out)


def generate(path: Path, megabytes: int, seed: int = 37) -> int:
    """Write an export of about `megabytes` MB; return its conversation count."""
    rng = random.Random(seed)
    target = megabytes << 20
    count = 0
    with path.open("w", encoding="utf-8") as fh:
        fh.write('{"conversations": [\n')
        written = 0
        while written < target:
            turns = rng.randint(1, 12)
            first = str(uuid.UUID(int=rng.getrandbits(128)))
            entries = [
                {
                    "entry_uuid": first if n == 0 else str(uuid.UUID(int=rng.getrandbits(128))),
                    "query": _text(rng, rng.randint(20, 200)) + "?",
                    "answer": _text(rng, rng.randint(500, 4000)),
                    "created_at": f"2025-0{rng.randint(1, 9)}-1{n % 10}T10:00:0{n % 10}Z",
                    "label": None,
                    "query_status": "COMPLETED",
                    "engine_mode": rng.choice([None, "pro", "auto", "deep_research"]),
                }
                for n in range(turns)
            ]
            conv = {
                "context_uuid": str(uuid.UUID(int=rng.getrandbits(128))),
                "context_title": entries[0]["query"],
                "created_at": entries[0]["created_at"],
                "updated_at": entries[-1]["created_at"],
                "mode": rng.choice(["CONCISE", "COPILOT"]),
                "collection_uuid": None,
                "entries": entries,
            }
            text = ("" if count == 0 else ",\n") + json.dumps(conv, ensure_ascii=False, indent=1)
            fh.write(text)
            written += len(text)
            count += 1
        fh.write("\n]}\n")
    return count


def zipped(source: Path) -> Path:
    target = source.with_suffix(".zip")
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.write(source, "conversations-20261201_101500-5f3c2a9e.json")
    return target


def measure(export: Path, work: Path, runs: int) -> tuple[int, float, int]:
    """Best of `runs`: (peak RSS in KiB, seconds, conversations audited)."""
    best_rss, best_time, conversations = 1 << 62, float("inf"), 0
    for n in range(runs):
        out = work / f"archive-{export.stem}-{n}"
        argv = [sys.executable, "-c", ENTRY, "import", str(export), "--audit-only", "--json"]
        argv += ["--out", str(out), "-q", "--config", str(work / "none.toml")]
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            sys.exit(f"import failed ({done.returncode}): {done.stderr[-2000:]}")
        rss = int(done.stderr.rsplit("MAXRSS_KB ", 1)[1].split()[0])
        conversations = json.loads(done.stdout)["conversations"]
        best_rss, best_time = min(best_rss, rss), min(best_time, elapsed)
        shutil.rmtree(out, ignore_errors=True)
    return best_rss, best_time, conversations


def reader_rss(export: Path, runs: int) -> int:
    """Best of `runs`: peak RSS (KiB) of a process that only streams the array."""
    best = 1 << 62
    for _ in range(runs):
        argv = [sys.executable, "-c", READER, str(export)]
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        best = min(best, int(done.stderr.rsplit("MAXRSS_KB ", 1)[1].split()[0]))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--big-mb", type=int, default=500)
    parser.add_argument("--small-mb", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--zip", action="store_true", help="also measure the ZIP form")
    parser.add_argument("--keep", type=Path, default=None, help="work in DIR and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="pplx-import-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "none.toml").write_text("[network]\nmin_interval = 0\n", encoding="utf-8")
    try:
        files = []
        for mb in (args.small_mb, args.big_mb):
            path = work / f"export-{mb}mb.json"
            if not path.exists():
                generate(path, mb)
            files.append(path)
            if args.zip:
                zpath = path.with_suffix(".zip")
                files.append(zpath if zpath.exists() else zipped(path))
        results = {}
        for path in files:
            rss, seconds, conversations = measure(path, work, args.runs)
            results[path.name] = rss
            size = path.stat().st_size / (1 << 20)
            print(
                f"{path.name:24} {size:8.1f} MB  {conversations:7d} conversations  "
                f"peak RSS {rss / 1024:7.1f} MiB  {seconds:6.1f} s"
            )
            if path.suffix == ".json":
                alone = reader_rss(path, args.runs)
                print(f"{'':24} reader alone: peak RSS {alone / 1024:7.1f} MiB")
        for suffix in (".json", ".zip") if args.zip else (".json",):
            small = results[f"export-{args.small_mb}mb{suffix}"]
            big = results[f"export-{args.big_mb}mb{suffix}"]
            ratio = big / small
            print(f"peak RSS ratio {args.big_mb} MB / {args.small_mb} MB ({suffix}): {ratio:.2f}")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
