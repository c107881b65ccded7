"""Benchmark the online pipeline against the emulator: requests and wall time of a sync.

    python benchmarks/sync.py [--n 500] [--interval 0.05] [--latency-ms 10] [--page-size 2]

Builds a library of N threads (clones of tests/fixtures/archive with fresh UUIDs and titles,
all five modes; with the default page size 2 the longer threads span two pages), serves it
from the emulator in its own process with `latency=<L>ms`, and paces the client as in real
use, only faster: `min_interval = --interval` (the real default is 3 s; `--interval 0`
turns pacing off). Then runs, each as the real CLI in a subprocess:

* index    the first full listing
* batch    the full export; wall time against two lower bounds, and requests issued
           against the minimum needed:
           paced bound   every API request after the first waits the interval, the first
                         page of each schematized fetch 4/3 of it (protocol: 4 s vs 3 s);
                         the pacer's +-25 % jitter averages out. CDN downloads bypass it.
           latency bound API requests the emulator delayed x L (not the probe or the CDN)
           A real export is paced: wall / paced bound is the figure that matters, and the
           overhead per thread is what the tool adds to the waiting it must do.
* sync     with nothing changed: its requests and time

Minimum requests = session probe + library pages (ceil(N / 25)) + every thread's plain pages
+ schematized pages of the threads whose mode needs blocks (every non-search mode) + one
download per downloadable asset version (counted from the manifests the export wrote).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from rerender import generate  # noqa: E402  (benchmarks/ is not a package)

from pplx_export.site.constants import (  # noqa: E402
    BLOCKS_PACE_SCALE,
    LIBRARY_PAGE_SIZE,
)

CLI = "from pplx_export.cli.export import run; run()"
ACCOUNT = "maya"
EMAIL = "alice@example.com"
FILES = "GET /__emulator/files"
SESSION = "GET /api/auth/session"


def start_emulator(library: Path, latency_ms: int, page_size: int) -> tuple[Any, str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pplx_export.emulator",
            "--library",
            str(library),
            "--page-size",
            str(page_size),
            "--faults",
            f"latency={latency_ms}ms",
            "--email",
            EMAIL,
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert proc.stdout is not None
    base_url = proc.stdout.readline().strip()
    if not base_url.startswith("http"):
        proc.kill()
        raise SystemExit(f"emulator did not start: {base_url!r}")
    return proc, base_url


def control(base_url: str, method: str, path: str) -> Any:
    response = httpx.request(method, base_url + path, timeout=30)
    response.raise_for_status()
    return response.json()


def run_cli(work: Path, base_url: str, *args: str) -> float:
    argv = [
        sys.executable,
        "-c",
        CLI,
        *args,
        "-q",
        "--config",
        str(work / "config.toml"),
        "--cookies",
        str(work / "cookies.json"),
        "--out",
        str(work / "out"),
        "--base-url",
        base_url,
    ]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
    return seconds


def minimum_requests(library: Path, out: Path, page_size: int) -> dict[str, int]:
    plain = blocks = threads = 0
    for raw in sorted(library.glob("*/*/*/raw_entries.json")):
        threads += 1
        n = len(json.loads(raw.read_text("utf-8")).get("entries") or [])
        plain += max(1, math.ceil(n / page_size))
        blocks_file = raw.parent / "raw_blocks.json"
        if blocks_file.exists():
            m = len(json.loads(blocks_file.read_text("utf-8")).get("entries") or [])
            blocks += max(1, math.ceil(m / page_size))
    downloads = 0
    for manifest in out.glob("*/*/*/assets/assets_manifest.json"):
        for f in json.loads(manifest.read_text("utf-8")).get("files") or []:
            for v in f.get("versions") or []:
                if v.get("downloaded_to") and not v.get("extracted_inline"):
                    downloads += 1
    library_pages = max(1, math.ceil(threads / LIBRARY_PAGE_SIZE))
    return {
        "session": 1,
        "library_pages": library_pages,
        "plain_pages": plain,
        "blocks_pages": blocks,
        "downloads": downloads,
        "total": 1 + library_pages + plain + blocks + downloads,
    }


def paced_bound(stats: dict[str, Any], interval: float) -> tuple[float, int, int]:
    """The paced lower bound of a run, from the requests it issued: (seconds, API requests,
    schematized fetches). Every API request after the first waits `interval`; the first
    page of a schematized fetch (one per thread that has blocks) waits 4/3 of it."""
    api = int(stats["requests"]) - int(stats["by_endpoint"].get(FILES, 0))
    schematized = int(stats.get("schematized_fetches", 0))
    plain_waits = max(0, api - 1 - schematized)
    return interval * (plain_waits + schematized * BLOCKS_PACE_SCALE), api, schematized


def schematized_fetches(stats: dict[str, Any], library: Path) -> int:
    """Schematized fetches of the run: one per thread fetched whose mode has blocks."""
    with_blocks = {
        json.loads((p.parent / "thread.json").read_text("utf-8"))["web_uuid"]
        for p in library.glob("*/*/*/raw_blocks.json")
    }
    return sum(1 for uuid in stats["by_thread"] if uuid in with_blocks)


def delayed(stats: dict[str, Any]) -> int:
    """Requests the emulator answered after the latency (API calls, not probe or CDN)."""
    by = stats["by_endpoint"]
    return int(stats["total"]) - int(by.get(FILES, 0)) - int(by.get(SESSION, 0))


def run(
    n: int, latency_ms: int, page_size: int, keep: Path | None, interval: float
) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="pplx-sync-bench-"))
    work = keep or tmp / "work"
    library = tmp / "library"
    proc = None
    try:
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        generate(library, n, fresh_titles=True)
        proc, base_url = start_emulator(library, latency_ms, page_size)
        (work / "config.toml").write_text(
            f"[network]\nmin_interval = {interval}\nbackoff_cap = 0\n\n"
            f'[accounts.{ACCOUNT}]\nemail = "{EMAIL}"\n',
            "utf-8",
        )
        cookies = {"__Secure-next-auth.session-token": "emulator-session-token-alice"}
        (work / "cookies.json").write_text(json.dumps(cookies), "utf-8")
        results: dict[str, Any] = {
            "n": n,
            "latency_ms": latency_ms,
            "page_size": page_size,
            "interval": interval,
        }
        for name, args in (("index", ("index",)), ("batch", ("batch",)), ("sync", ("sync",))):
            control(base_url, "POST", "/__emulator/reset-stats")
            seconds = run_cli(work, base_url, *args)
            stats = control(base_url, "GET", "/__emulator/stats")
            results[name] = {
                "seconds": seconds,
                "requests": stats["total"],
                "delayed": delayed(stats),
                "by_endpoint": stats["by_endpoint"],
                "threads_fetched": len(stats["by_thread"]),
                "schematized_fetches": schematized_fetches(stats, library),
            }
        results["minimum"] = minimum_requests(library, work / "out", page_size)
        exported = len(list((work / "out").glob("*/*/*/thread.json")))
        results["exported"] = exported
        return results
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)


def report(r: dict[str, Any]) -> None:
    latency = r["latency_ms"] / 1000
    batch, index, sync, minimum = r["batch"], r["index"], r["sync"], r["minimum"]
    # The batch reuses the index run's listing: its own minimum has no library pages.
    batch_min = minimum["total"] - minimum["library_pages"]
    floor = batch["delayed"] * latency
    paced, api, schematized = paced_bound(batch, r["interval"])
    print(
        f"N = {r['n']} threads, latency {r['latency_ms']} ms, page size {r['page_size']}, "
        f"{r['exported']} exported"
    )
    print(
        f"  index   {index['seconds']:7.2f} s  {index['requests']:5d} requests "
        f"(minimum {1 + minimum['library_pages']}: probe + {minimum['library_pages']} pages)"
    )
    print(
        f"  batch   {batch['seconds']:7.2f} s  {batch['requests']:5d} requests "
        f"(minimum {batch_min}: probe + {minimum['plain_pages']} plain pages + "
        f"{minimum['blocks_pages']} schematized pages + {minimum['downloads']} downloads)"
    )
    if paced:
        print(
            f"          paced bound {paced:.2f} s = ({api} API requests - 1 - {schematized} "
            f"schematized) x {r['interval']:g} s + {schematized} schematized x "
            f"{r['interval']:g} s x 4/3; wall / paced bound = {batch['seconds'] / paced:.2f}; "
            f"overhead {(batch['seconds'] - paced) / max(1, r['exported']) * 1000:.1f} ms/thread"
        )
    if floor:
        print(
            f"          latency bound {floor:.2f} s = {batch['delayed']} delayed requests x "
            f"{r['latency_ms']} ms; wall / latency bound = {batch['seconds'] / floor:.2f}"
        )
    print(
        f"  sync    {sync['seconds']:7.2f} s  {sync['requests']:5d} requests "
        f"(nothing changed; {sync['threads_fetched']} threads fetched) {sync['by_endpoint']}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--latency-ms", type=int, default=10)
    ap.add_argument(
        "--interval", type=float, default=0.05, help="client pacing, s (real: 3; 0: off)"
    )
    ap.add_argument("--page-size", type=int, default=2)
    ap.add_argument("--keep", type=Path, default=None, help="write the archive here, keep it")
    ap.add_argument("--json", action="store_true", help="also print the raw figures as JSON")
    args = ap.parse_args()
    results = run(args.n, args.latency_ms, args.page_size, args.keep, args.interval)
    report(results)
    if args.json:
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
