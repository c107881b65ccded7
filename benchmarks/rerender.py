"""Benchmark `re-render` against the floor of just decoding every raw file.

    python benchmarks/rerender.py [--n 1500 6000] [--repeat 3] [--archives fixtures corpus]
    python benchmarks/rerender.py --n 50000 --repeat 1      # archive built once, cached

Archives (each made once per N into --cache, which is reused across runs):

* fixtures  tests/fixtures/archive cloned round-robin to N threads with fresh UUIDs
* corpus    ../shared/corpus/archive replicated to N threads with
            ../shared/tools/replicate_corpus.py (only when both are present): raw files
            and thread.json only, as the earlier tool left an archive, write tokens included

The cached archive is never written to: every run renders a hard-linked copy of it (every
write of re-render replaces a file by rename, so the cached inodes stay as they were).

Measured, each in a process of its own (best of --repeat; noise only ever adds time):

* floor        stdlib: read + json.loads of every raw file, one process (THE floor)
* floor-full   both JSON layers: the raw files, then every JSON-in-string value in them
* floor-msgspec  msgspec.json.decode of every raw file (what jsontext.loads mostly runs)
* first        re-render of a fresh copy (writes every derived file, redacts write tokens
               durably), default jobs
* full         re-render of the rendered archive again, default jobs (parse + render + compare)
* full-j1      the same with --jobs 1
* noop         `pplx-export re-render --changed-only`, the WHOLE CLI process (interpreter
               start, imports, render state), timed against the floor as a whole process too

For each: seconds, threads/s, CPU seconds per thread (workers included), peak RSS (the
largest process; workers included) and the ratio to each floor. The goals are on wall time;
the ratio of CPU seconds is printed beside it, as a check when other work loads the machine
(wall time then grows, CPU time much less; for a run of several workers it is their sum).
Then the goals of issue 18, each with "met" or "MISSED" and the archive it was measured on.
With several --n the peak RSS of each kind is compared across sizes (flat memory: the same
at every N).
"""

from __future__ import annotations

import argparse
import compileall
import hashlib
import itertools
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
FIXTURES = REPO / "tests" / "fixtures" / "archive"
SHARED = REPO.parent / "shared"
# The project lives in a worktree or a clone next to shared/: look upwards for it.
for _up in REPO.parents:
    if (_up / "shared" / "corpus" / "archive").is_dir():
        SHARED = _up / "shared"
        break
CORPUS = SHARED / "corpus" / "archive"
REPLICATE = SHARED / "tools" / "replicate_corpus.py"
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "pplx-bench-cache"

# Goals of issue 18 ("Scale: 50,000 threads"): kind, floor, at most.
GOALS = [
    ("full", "floor", 1.5, "full re-render, default jobs / stdlib floor"),
    ("full-j1", "floor", 2.5, "full re-render, --jobs 1 / stdlib floor"),
    ("first", "floor", 4.0, "first render of an earlier-tool archive / stdlib floor"),
    ("noop", "floor-process", 0.1, "--changed-only no-op process / floor process"),
]


def generate(root: Path, n: int, *, fresh_titles: bool = False) -> list[Path]:
    """N thread directories cloned round-robin from the fixtures, each with a fresh UUID.

    With `fresh_titles` each clone's thread.json title gets a ` (copy N)` suffix, so a
    library served from the clones (benchmarks/sync.py) lists distinct titles. Returns the
    fixture directory each clone was made from, in clone order.
    """
    sources = sorted(p for p in FIXTURES.glob("*/*/*") if p.is_dir())
    made: list[Path] = []
    for i in range(n):
        src = sources[i % len(sources)]
        meta = json.loads((src / "thread.json").read_text(encoding="utf-8"))
        old = meta["web_uuid"]
        new = str(uuid.UUID(bytes=hashlib.sha256(b"%d" % i).digest()[:16], version=4))
        account, mode = src.parent.parent.name, src.parent.name
        dest = root / account / mode / f"{src.name.rsplit('_', 1)[0]}_{new[:8]}"
        dest.mkdir(parents=True)
        for f in src.iterdir():
            if f.is_file():
                (dest / f.name).write_bytes(f.read_bytes().replace(old.encode(), new.encode()))
        if fresh_titles:
            meta = json.loads((dest / "thread.json").read_text(encoding="utf-8"))
            meta["title"] = f"{meta.get('title') or 'Untitled'} (copy {i})"
            (dest / "thread.json").write_text(json.dumps(meta, ensure_ascii=False), "utf-8")
        made.append(src)
    return made


# --- the child processes ---------------------------------------------------------------


def _raw_files(root: Path) -> list[str]:
    return sorted(str(p) for p in root.glob("*/*/*/raw_*.json"))


def _inner(value: Any, loads: Any) -> int:
    """Decode every JSON-in-string value under `value` (the payload layer), recursively;
    returns how many were decoded."""
    count = 0
    stack = [value]
    while stack:
        v = stack.pop()
        if type(v) is dict:
            stack.extend(v.values())
        elif type(v) is list:
            stack.extend(v)
        elif type(v) is str and v[:1] in ("{", "[") and len(v) > 1:
            try:
                stack.append(loads(v))
                count += 1
            except ValueError:
                pass
    return count


def floor(kind: str, root: Path) -> int:
    """The floors; returns the number of threads (counted outside the timed part)."""
    if kind == "floor-msgspec":
        import msgspec

        loads: Any = msgspec.json.Decoder().decode
    else:
        loads = json.loads
    for path in _raw_files(root):
        with open(path, "rb") as fh:
            value = loads(fh.read())
        if kind == "floor-full":
            _inner(value, loads)
    return -1


def child(kind: str, root: Path, jobs: int) -> None:
    if not kind.startswith("floor"):
        # Import time is not re-render time. A checkout from before the tree move (issue 28)
        # has it at sync/rerender.py: A/B runs across the move measure both.
        import pplx_export

        if (Path(pplx_export.__file__).parent / "commands").is_dir():
            from pplx_export.commands.rerender.run import rerender
        else:
            from pplx_export.sync.rerender import rerender  # type: ignore[import-not-found, no-redef]
    before = _usage()
    started = time.perf_counter()
    if kind.startswith("floor"):
        floor(kind, root)
        seconds = time.perf_counter() - started
        threads = len(list(root.glob("*/*/*/raw_entries.json")))  # not part of the floor
    else:
        summary = rerender(root, jobs=jobs)
        seconds = time.perf_counter() - started
        if summary.failed:
            raise SystemExit(f"{summary.failed} threads failed: {summary.failures[:3]}")
        threads = summary.total
    after = _usage()
    after["cpu"] -= before["cpu"]  # the timed part only, like `seconds`
    print(json.dumps({"seconds": seconds, "threads": threads, **after}))


def _usage() -> dict[str, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    # ru_maxrss is KiB on Linux (bytes on macOS); a --jobs run's workers are the children.
    return {
        "cpu": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
        "peak_kib": max(me.ru_maxrss, kids.ru_maxrss),
    }


# --- the parent -------------------------------------------------------------------------


def _env(src: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(src), PYTHONHASHSEED="0")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _run(cmd: list[str], src: Path, home: Path) -> tuple[float, str, dict[str, float]]:
    """Run `cmd`: its whole wall time (process start to exit), its stdout, and the CPU
    seconds and peak RSS of it and its workers (from wait4)."""
    env = _env(src)
    env["HOME"] = str(home)  # no real config or cache of the user's
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    with tempfile.TemporaryFile("w+") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, cwd=home, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        assert proc.stderr is not None
        err = proc.stderr.read().decode(errors="replace")
        if proc.returncode:
            raise SystemExit(f"{cmd[:3]} failed ({proc.returncode}): {err[-2000:]}")
        out.seek(0)
        text = out.read()
    return wall, text, {"cpu": usage.ru_utime + usage.ru_stime, "peak_kib": usage.ru_maxrss}


def measure(kind: str, root: Path, jobs: int, src: Path, home: Path) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--child", kind, "--root", str(root), "--jobs", str(jobs)]
    wall, out, _ = _run(cmd, src, home)
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    result["process"] = wall
    return result


# The floor as a whole process: interpreter start, `import json`, decode every raw file.
FLOOR_PROCESS = """
import glob, json, sys
for path in sorted(glob.glob(sys.argv[1] + "/*/*/*/raw_*.json")):
    with open(path, "rb") as fh:
        json.loads(fh.read())
"""


def measure_process(kind: str, root: Path, src: Path, home: Path) -> dict[str, float]:
    """A whole process, timed from outside: the no-op CLI run as a user runs it, or the
    floor as a process of its own."""
    if kind == "noop":
        cli = "from pplx_export.cli.export import run; run()"
        cmd = [sys.executable, "-c", cli, "re-render", "--changed-only", "-q", "--out", str(root)]
    else:
        cmd = [sys.executable, "-c", FLOOR_PROCESS, str(root)]
    wall, _, usage = _run(cmd, src, home)
    threads = len(list(root.glob("*/*/*/raw_entries.json")))
    return {"seconds": wall, "process": wall, "threads": threads, **usage}


def best(runs: list[dict[str, float]], key: str = "seconds") -> dict[str, float]:
    return min(runs, key=lambda r: r[key])


def build(name: str, n: int, cache: Path) -> Path:
    """The pristine archive of `name` at N threads, made once into the cache."""
    root = cache / f"{name}-{n}"
    if (root / ".complete").exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    print(f"building {root} ...", file=sys.stderr, flush=True)
    if name == "fixtures":
        generate(root, n)
    else:
        subprocess.run(
            [sys.executable, str(REPLICATE), str(CORPUS), str(root), str(n)],
            check=True,
            capture_output=True,
        )
    (root / ".complete").write_text("")
    return root


def fresh_copy(pristine: Path, dest: Path) -> Path:
    """A hard-linked copy of the pristine archive (re-render replaces files, never edits).

    `dest` must not exist: nothing is deleted while measuring. On this machine's ext4,
    creating files in the minute after tens of thousands were deleted costs up to ten times
    the system time (measured: 0.02 ms per `open(O_CREAT)` becomes 0.3-0.9 ms while fsyncs
    run), which would be charged to the first render that follows; a user's first render
    does not follow a mass deletion. Every copy is removed at the end of the benchmark."""
    subprocess.run(["cp", "-al", str(pristine), str(dest)], check=True)
    (dest / ".complete").unlink(missing_ok=True)
    return dest


def run(
    name: str, n: int, repeat: int, cache: Path, srcs: list[Path], work: Path
) -> list[dict[str, dict[str, float]]]:
    """Every measurement for each checkout in `srcs`, taken in turns (A B A B ...) so that
    a load that comes and goes on the shared machine weighs on each alike."""
    pristine = build(name, n, cache)
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    runs: list[dict[str, list[dict[str, float]]]] = [{} for _ in srcs]

    def each(kind: str, measure_one: Any) -> None:
        for _ in range(repeat):
            for i, src in enumerate(srcs):
                runs[i].setdefault(kind, []).append(measure_one(i, src))

    # The floors import nothing of the project: measured once, the same for every checkout.
    for kind in ("floor", "floor-full", "floor-msgspec", "floor-process"):
        how = measure_process if kind == "floor-process" else partial(measure, jobs=1)
        floor = [how(kind, pristine, src=srcs[0], home=home) for _ in range(repeat)]
        for per_src in runs:
            per_src[kind] = floor
    roots = [work / f"{name}-{n}-archive-{i}" for i in range(len(srcs))]
    copies = itertools.count()

    def first(i: int, src: Path) -> dict[str, float]:
        # A new copy each run (see fresh_copy); the full runs below use the last one.
        roots[i] = fresh_copy(pristine, work / f"{name}-{n}-archive-{i}-{next(copies)}")
        return measure("first", roots[i], 0, src, home)

    each("first", first)
    each("full", lambda i, src: measure("full", roots[i], 0, src, home))
    each("full-j1", lambda i, src: measure("full", roots[i], 1, src, home))
    each("noop", lambda i, src: measure_process("noop", roots[i], src, home))
    return [{kind: best(r) for kind, r in per_src.items()} for per_src in runs]


def report(name: str, n: int, results: dict[str, dict[str, float]], pristine: Path) -> None:
    workers = _auto_jobs(n)
    print(f"\narchive: {name}, N = {n} threads ({pristine}); default jobs = {workers}")
    floors = {k: results[k]["seconds"] for k in ("floor", "floor-full", "floor-msgspec")}
    print(
        f"  {'kind':14s} {'seconds':>8s} {'thr/s':>7s} {'cpu ms/thr':>10s} {'peak MiB':>8s}"
        f" {'x floor':>8s} {'x full':>7s} {'x msgspec':>9s} {'cpu x floor':>11s}"
    )
    for kind, r in results.items():
        rate = r["threads"] / r["seconds"] if r["seconds"] else float("inf")
        ratios = " ".join(
            f"{r['seconds'] / floors[f]:{w}.2f}"
            for f, w in (("floor", 8), ("floor-full", 7), ("floor-msgspec", 9))
        )
        cpu_ratio = r["cpu"] / results["floor"]["cpu"]
        print(
            f"  {kind:14s} {r['seconds']:8.3f} {rate:7.0f} {1000 * r['cpu'] / r['threads']:10.2f}"
            f" {r['peak_kib'] / 1024:8.1f} {ratios} {cpu_ratio:11.2f}"
        )
    for kind, against, goal, what in GOALS:
        ratio = results[kind]["seconds"] / results[against]["seconds"]
        verdict = "met" if ratio <= goal else "MISSED"
        cpu = results[kind]["cpu"] / results[against]["cpu"]
        print(
            f"  {what}: {ratio:.2f}x (goal <= {goal:g}) {verdict}  [{name}, N = {n}]"
            f"  (CPU seconds: {cpu:.2f}x)"
        )


def report_flat(name: str, by_n: dict[int, dict[str, dict[str, float]]]) -> None:
    """Peak RSS and the first-render ratio at every N: flat means the same at every size."""
    sizes = sorted(by_n)
    print(f"\n{name}: peak RSS (MiB) and first/floor by N: " + ", ".join(map(str, sizes)))
    for kind in ("first", "full", "full-j1", "noop"):
        cells = "  ".join(f"{by_n[n][kind]['peak_kib'] / 1024:7.1f}" for n in sizes)
        print(f"  {kind:8s} {cells}")
    cells = "  ".join(
        f"{by_n[n]['first']['seconds'] / by_n[n]['floor']['seconds']:7.2f}" for n in sizes
    )
    print(f"  {'first/fl':8s} {cells}")


def _auto_jobs(n: int) -> int:
    try:
        from pplx_export.commands.rerender.pool import auto_jobs

        return auto_jobs(n)
    except ImportError:
        return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[1500], help="threads (several: flat?)")
    ap.add_argument("--repeat", type=int, default=3, help="best of R runs")
    ap.add_argument("--archives", nargs="+", default=["fixtures", "corpus"])
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="built archives, kept")
    ap.add_argument(
        "--src",
        type=Path,
        nargs="+",
        default=[REPO],
        help="the checkout(s) whose pplx_export is measured (several: A/B, taken in turns)",
    )
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--root", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--jobs", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.root, args.jobs)
        return
    srcs = [s.resolve() for s in args.src]
    sys.path.insert(0, str(srcs[0]))
    # Bytecode as an installed package has it (pip compiles on install), even where
    # PYTHONDONTWRITEBYTECODE is set: otherwise every timed run would compile what it imports.
    for src in srcs:
        compileall.compile_dir(src / "pplx_export", quiet=1)
    names = [a for a in args.archives if a != "corpus" or (CORPUS.is_dir() and REPLICATE.exists())]
    if "corpus" in args.archives and "corpus" not in names:
        print(f"(no corpus at {CORPUS}: measuring the fixtures only)")
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"src {' vs '.join(map(str, srcs))}; load: {uptime}")
    work = Path(tempfile.mkdtemp(prefix="pplx-bench-"))
    try:
        for name in names:
            by_n: list[dict[int, dict[str, dict[str, float]]]] = [{} for _ in srcs]
            for n in args.n:
                results = run(name, n, args.repeat, args.cache, srcs, work)
                for i, src in enumerate(srcs):
                    by_n[i][n] = results[i]
                    print(f"\n== {src}")
                    report(name, n, results[i], args.cache / f"{name}-{n}")
            for i, src in enumerate(srcs):
                if len(args.n) > 1:
                    print(f"\n== {src}")
                    report_flat(name, by_n[i])
    finally:
        shutil.rmtree(work, ignore_errors=True)  # every copy, once nothing is measured
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"load at the end: {uptime}")


if __name__ == "__main__":
    main()
