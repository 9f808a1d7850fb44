"""Row-parallel SpMV (`parallelize(i, cpu_thread, no_races)`) at 1 and 2 threads beside the serial default
schedule, scipy and a serial copy of A's bytes (the memory-traffic floor), in one process on the same
data. A first step of the scheduling issue's benchmarks: the load-balanced and SpGEMM/SpMM/SDDMM rows
come with `pos`/`split` and parallel assembly.

    python bench/parallel_spmv.py [--rows 2000000] [--nnz 20000000] [--repeat 11]

Medians of --repeat calls, round-robin across contenders; ratios are the serial kernel's time over each.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import scipy.sparse as sp

import autosparse as asp


def _time_ms(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--nnz", type=int, default=20_000_000)
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    n = args.rows
    rows, cols = rng.integers(0, n, args.nnz), rng.integers(0, n, args.nnz)
    a = sp.csr_array((rng.random(args.nnz) + 0.5, (rows, cols)), shape=(n, n))
    a.sum_duplicates()
    x = rng.random(n)
    A = asp.Tensor.from_scipy(a)
    expected = a @ x
    kernels = {"serial (default schedule)": asp.compile("y(i) = A(i,j) * x(j)", {"A": "csr"})}
    for threads in (1, 2):
        kernels[f"parallelize(i), {threads} thread(s)"] = asp.compile(
            "y(i) = A(i,j) * x(j)", {"A": "csr"}, schedule="parallelize(i, cpu_thread, no_races)",
            num_threads=threads)
    for name, kernel in kernels.items():
        np.testing.assert_allclose(kernel(A=A, x=x).to_numpy(), expected, rtol=1e-12)
    contenders = {name: (lambda k=kernel: k(A=A, x=x)) for name, kernel in kernels.items()}
    contenders["scipy A @ x"] = lambda: a @ x
    source = np.concatenate([a.data.view(np.uint8), a.indices.view(np.uint8)])
    target = np.empty_like(source)
    contenders["copy of A's bytes (np.copyto)"] = lambda: np.copyto(target, source)
    times = {name: [] for name in contenders}
    for fn in contenders.values():
        fn()
    for _ in range(args.repeat):
        for name, fn in contenders.items():
            times[name].append(_time_ms(fn))
    medians = {name: statistics.median(samples) for name, samples in times.items()}
    serial = medians["serial (default schedule)"]
    print(f"SpMV {n:,}² with {a.nnz:,} nonzeros (CSR, int32 indices), medians of {args.repeat} rounds\n")
    print("| contender | ms | serial / contender |")
    print("|---|---:|---:|")
    for name, ms in medians.items():
        print(f"| {name} | {ms:.2f} | {serial / ms:.2f}× |")


if __name__ == "__main__":
    main()
