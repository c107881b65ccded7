"""Benchmark start-up: `pplx-export --help` and `status --help` against `python -c pass`.

    python benchmarks/startup.py [--runs 3] [--keep DIR]

Installs the project the way a user gets it (a regular, non-editable `pip install . --target
DIR`, no dependencies: they come from the running interpreter's environment), then times,
best of N runs each, `python -c pass` and the CLI's help screens run from that install
(`python -c "from pplx_export.cli.export import main; main()"` with DIR first on
`sys.path`, which is what the console script does). Prints each time and its ratio to
`python -c pass` (issue: within 3x), plus the modules `python -X importtime` shows as the
costliest for `--help`.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ENTRY = "import sys; from pplx_export.cli.export import main; sys.argv[0] = 'pplx-export'; main()"
CASES = (("--help",), ("status", "--help"), ("--version",))


def install(target: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-compile",
            "--target",
            str(target),
            str(REPO),
        ],
        check=True,
    )
    # Compile once, as pip does for a normal install, so the runs time imports and not
    # byte-compilation.
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(target / "pplx_export")], check=True
    )


def best_of(argv: list[str], runs: int, env: dict[str, str]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            argv,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
            cwd=tempfile.gettempdir(),
        )
        times.append(time.perf_counter() - start)
    return min(times)


def top_imports(env: dict[str, str], n: int = 8) -> list[tuple[int, str]]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", ENTRY, "--help"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
    )
    rows = []
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)", line)
        if m and not m.group(3):  # top-level imports only: their cumulative time
            rows.append((int(m.group(2)), m.group(4)))
    return sorted(rows, reverse=True)[:n]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="best of N (default 3)")
    parser.add_argument("--keep", type=Path, default=None, help="install here and keep it")
    args = parser.parse_args()
    target = args.keep or Path(tempfile.mkdtemp(prefix="pplx-startup-"))
    try:
        install(target)
        env = {**os.environ, "PYTHONPATH": str(target)}
        env.pop("PPLX_EXPORT_CONFIG", None)
        base = best_of([sys.executable, "-c", "pass"], args.runs, env)
        print(f"python -c pass{'':24} {base * 1000:7.1f} ms")
        worst = 0.0
        for case in CASES:
            took = best_of([sys.executable, "-c", ENTRY, *case], args.runs, env)
            ratio = took / base
            worst = max(worst, ratio) if case != ("--version",) else worst
            label = "pplx-export " + " ".join(case)
            print(f"{label:38} {took * 1000:7.1f} ms  {ratio:4.1f}x")
        print(f"help screens: worst {worst:.1f}x python -c pass (target: within 3x)")
        print("costliest top-level imports for --help (cumulative, one run):")
        for micros, name in top_imports(env):
            print(f"  {micros / 1000:6.1f} ms  {name}")
    finally:
        if args.keep is None:
            shutil.rmtree(target, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
