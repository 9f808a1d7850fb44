"""The harness behind docs/notes/ci-time.md: variants of the quick kernels suite's command (as
tests/test_benchmarks.py runs it) timed interleaved in one process, each run with a fresh data folder as the test
has, reporting the median wall time and the median CPU time of the child (which is less disturbed by the other
processes on a shared machine).

    PYTHONPATH=$PWD/src:$PWD/bench python docs/notes/ci-time.py --rounds 2
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from autosparse_bench import kernels

FAMILIES = ("uniform", "power-law", "stencil-2d")
KERNELS = [k for k in kernels.KERNELS if k != "compile"]
BASE = [sys.executable, "-c", "from autosparse.cli import main; main()", "bench", "kernels", "--quick",
        "--matrices", *FAMILIES, "--kernel", *KERNELS]
VARIANTS = {
    "repeat 2 (before)": ["--repeat", "2"],
    "repeat 1, min-sample 2 ms (after)": ["--repeat", "1", "--min-sample", "0.002"],
    "repeat 1, min-sample 2 ms, scale 0.1": ["--repeat", "1", "--min-sample", "0.002", "--scales", "0.1"],
}


def run(extra: list[str]) -> tuple[float, float, str]:
    with tempfile.TemporaryDirectory() as data:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(BASE + extra, env={**os.environ, "AUTOSPARSE_BENCH_DATA": data}, capture_output=True,
                              text=True, timeout=900)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    status = "ok" if done.returncode == 0 and "WRONG" not in done.stdout else f"rc {done.returncode}"
    return wall, cpu, status


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    args = parser.parse_args()
    walls = {name: [] for name in args.variants}
    cpus = {name: [] for name in args.variants}
    for round_number in range(args.rounds):
        names = args.variants[round_number % len(args.variants):] + args.variants[:round_number % len(args.variants)]
        for name in names:
            wall, cpu, status = run(VARIANTS[name])
            walls[name].append(wall)
            cpus[name].append(cpu)
            print(f"round {round_number}: {name}: wall {wall:.1f} s, cpu {cpu:.1f} s, {status}", flush=True)
    print("| command | median wall s | median CPU s |\n|---|---|---|")
    for name in args.variants:
        print(f"| {name} | {statistics.median(walls[name]):.1f} | {statistics.median(cpus[name]):.1f} |")


if __name__ == "__main__":
    main()
