"""Parallel SpMV schedules at 1 and 2 threads beside the serial default schedule, scipy, and the bandwidth
scaling of a plain copy of A's bytes (1 vs 2 threads: the memory-traffic floor), in one process on the
same data, for a uniform random matrix and an R-MAT power-law one (rows skewed towards the first ones, as
in graphs), where a static split of rows gives one thread most of the nonzeros.

    autosparse bench scaling-spmv [--scale 21] [--nnz 20000000] [--repeat 11]

Schedules (Senanayake et al. §5): the row loop in parallel (`parallelize(i)`), the paper's row split
(`split(i, i0, i1, 2048)`, tiles in parallel), and the load-balanced one (`collapse(i, j, f); pos(f, fp,
A(i,j)); split(fp, p0, p1, 65536)`, chunks of nonzeros in parallel with atomic flushes of each row's sum).
Medians of --repeat calls, round-robin across contenders; ratios are the serial kernel's time over each.
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

import autosparse as asp

SPMV = "y(i) = A(i,j) * x(j)"
ROW_SPLIT = "split(i, i0, i1, 2048); parallelize(i0, cpu_thread, no_races)"
BALANCED = "collapse(i, j, f); pos(f, fp, A(i,j)); split(fp, p0, p1, 65536); parallelize(p0, cpu_thread, atomics)"


def uniform(n: int, nnz: int, rng) -> sp.csr_array:
    return _csr(rng.integers(0, n, nnz), rng.integers(0, n, nnz), n, rng)


def rmat(scale: int, nnz: int, rng, a=0.57, b=0.19, c=0.19) -> sp.csr_array:
    """R-MAT (Graph500 parameters): each bit of (row, column) picks a quadrant, low rows the likeliest."""
    rows = np.zeros(nnz, dtype=np.int64)
    cols = np.zeros(nnz, dtype=np.int64)
    for _ in range(scale):
        down = rng.random(nnz) < 1 - a - b
        right = rng.random(nnz) < np.where(down, (1 - a - b - c) / (1 - a - b), b / (a + b))
        rows = 2 * rows + down
        cols = 2 * cols + right
    return _csr(rows, cols, 1 << scale, rng)


def _csr(rows, cols, n, rng) -> sp.csr_array:
    matrix = sp.csr_array((rng.random(len(rows)) + 0.5, (rows, cols)), shape=(n, n))
    matrix.sum_duplicates()
    return matrix


def _time_ms(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def copies(matrix: sp.csr_array) -> dict:
    """np.copyto of A's values and indices, whole (one thread) or by halves in two threads (numpy
    releases the GIL while it copies)."""
    source = np.concatenate([matrix.data.view(np.uint8), matrix.indices.view(np.uint8)])
    target = np.empty_like(source)
    half = len(source) // 2
    pool = ThreadPoolExecutor(2)

    def two():
        done = [pool.submit(np.copyto, target[:half], source[:half]),
                pool.submit(np.copyto, target[half:], source[half:])]
        for future in done:
            future.result()
    return {"copy of A's bytes, 1 thread": lambda: np.copyto(target, source), "copy of A's bytes, 2 threads": two}


def run(name: str, matrix: sp.csr_array, repeat: int, rng) -> None:
    x = rng.random(matrix.shape[1])
    A = asp.Tensor.from_scipy(matrix)
    expected = matrix @ x
    kernels = {"serial (default schedule)": asp.compile(SPMV, {"A": "csr"})}
    for threads in (1, 2):
        for label, schedule in (("parallelize(i)", "parallelize(i, cpu_thread, no_races)"),
                                ("row split", ROW_SPLIT), ("load-balanced", BALANCED)):
            kernels[f"{label}, {threads} thread(s)"] = asp.compile(SPMV, {"A": "csr"}, schedule=schedule,
                                                                    num_threads=threads)
    for kernel in kernels.values():
        np.testing.assert_allclose(kernel(A=A, x=x).to_numpy(), expected, rtol=1e-10)
    contenders = {label: (lambda k=kernel: k(A=A, x=x)) for label, kernel in kernels.items()}
    contenders["scipy A @ x"] = lambda: matrix @ x
    contenders.update(copies(matrix))
    times = {label: [] for label in contenders}
    for fn in contenders.values():
        fn()
    for _ in range(repeat):
        for label, fn in contenders.items():
            times[label].append(_time_ms(fn))
    medians = {label: statistics.median(samples) for label, samples in times.items()}
    serial = medians["serial (default schedule)"]
    heaviest = int(np.diff(matrix.indptr).max())
    half = int(matrix.indptr[matrix.shape[0] // 2])
    print(f"\n{name}: {matrix.shape[0]:,}² with {matrix.nnz:,} nonzeros (CSR, int32 indices; heaviest row "
          f"{heaviest:,}, first half of the rows {half / max(matrix.nnz, 1):.0%} of the nonzeros), medians of "
          f"{repeat} rounds\n")
    print("| contender | ms | serial / contender |")
    print("|---|---:|---:|")
    for label, ms in medians.items():
        print(f"| {label} | {ms:.2f} | {serial / ms:.2f}× |")
    one, two = medians["copy of A's bytes, 1 thread"], medians["copy of A's bytes, 2 threads"]
    print(f"\ncopy bandwidth scaling, 2 vs 1 thread: {one / two:.2f}×; load-balanced vs row split at 2 threads: "
          f"{medians['row split, 2 thread(s)'] / medians['load-balanced, 2 thread(s)']:.2f}×; "
          f"parallelize(i) at 2 threads vs scipy: {medians['scipy A @ x'] / medians['parallelize(i), 2 thread(s)']:.2f}×")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=21, help="2**scale rows and columns (default: 21)")
    parser.add_argument("--nnz", type=int, default=20_000_000)
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    run("uniform random", uniform(1 << args.scale, args.nnz, rng), args.repeat, rng)
    run("R-MAT power law (a=0.57, b=c=0.19)", rmat(args.scale, args.nnz, rng), args.repeat, rng)


if __name__ == "__main__":
    main()
