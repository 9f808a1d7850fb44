"""issue 30, round 5, section coo: SpMV on a scipy coo_matrix passed on every call (the kernels suite's
`spmv_coo_case`, formats {"A": "csr"}), on the kernels suite's SpMV data (family_matrix, full size) and the
real graphs named, at 1 or 2 threads. Contenders, rounds interleaved in one process, medians in ms of wall
time:
- "coo3 call": round 4's path, the native pass (`checked_coordinates`: ranges and the rows' order), then
  the `coo` or `u~q` kernel (the same Kernel with its in-kernel check switched off);
- "coo4 call": this section's, on one thread the `u~q` kernel comparing each coordinate with its extent
  where it loads it, with no pass of its own (on threads, the same as coo3: the order decides the split);
  since round 5's coo2 (branch coo5) also on threads: the `coo` kernel taking the rows as in order and
  checking that too where it reads them, rerun as `u~q` where they are not (the "shuffled" inputs);
- "bare kernel": the `u~q` kernel with no check at all, on the matrix's arrays wrapped once (the floor);
- scipy's `coo @ x`.

    PYTHONPATH=src:bench python docs/notes/perf30-coo-4.py [rounds] [threads] [files...] [shuffled]
"""

import statistics
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

import autosparse as asp
from autosparse.pipeline.conversions import coordinates_as_stored
from autosparse_bench import data
from autosparse_bench.kernels import SIZES, family_matrix

SPMV = "y(i) = A(i,j) * x(j)"


def contenders(coo: sp.coo_matrix, x: np.ndarray, threads: int) -> dict:
    coo3 = asp.Kernel(SPMV, formats={"A": "csr"}, num_threads=threads)
    coo3._as_stored = lambda operands: iter([coo3._reading_as_stored(operands, None)])  # the pass, always
    coo4 = asp.Kernel(SPMV, formats={"A": "csr"}, num_threads=threads)
    bare = asp.Kernel(SPMV, formats={"A": "u~q"}, num_threads=1)
    wrapped = coordinates_as_stored(coo, asp.Format("ds"), checked_by_kernel=True)
    return {"coo3 call": lambda: coo3(A=coo, x=x), "coo4 call": lambda: coo4(A=coo, x=x),
            "bare kernel": lambda: bare(A=wrapped, x=x), "scipy coo @ x": lambda: coo @ x}


def measure(runs: dict, rounds: int) -> dict:
    times = {name: [] for name in runs}
    for run in runs.values():
        run()  # compiled before timing
    for _ in range(rounds):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return {name: 1e3 * statistics.median(t) for name, t in times.items()}


def main():
    args = sys.argv[1:]
    rounds = int(args[0]) if args else 11
    threads = int(args[1]) if len(args) > 1 else 1
    nnz = SIZES["full"]["spmv"]
    inputs = [(family, lambda f=family: family_matrix(f, nnz, 10, 42))
              for family in ("uniform", "power-law", "stencil-2d")]
    inputs += [(name, lambda n=name: data.load_matrix(f"/work/shared/data/{n}.mtx.gz"))
               for name in args[2:] if name != "shuffled"]
    shuffled = "shuffled" in args[2:]  # the entries in a random order: rows out of order
    rng = np.random.default_rng(0)
    warnings.simplefilter("ignore", asp.PerformanceWarning)
    print(f"threads {threads}, {rounds} rounds, medians in ms; ratios: scipy's time over ours")
    print("| data | nnz | coo3 call | coo4 call | bare kernel | scipy | coo3 / scipy | coo4 / scipy |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, make in inputs:
        m = make()
        coo, x = sp.coo_matrix(m), rng.random(m.shape[1])
        if shuffled:
            order = np.random.default_rng(1).permutation(coo.nnz)
            coo = sp.coo_matrix((coo.data[order], (coo.row[order], coo.col[order])), shape=coo.shape)
        runs = contenders(coo, x, threads)
        for run in runs.values():
            np.testing.assert_allclose(run(), m @ x, rtol=1e-10, atol=1e-12)
        t = measure(runs, rounds)
        b, a, k, s = (t[n] for n in ("coo3 call", "coo4 call", "bare kernel", "scipy coo @ x"))
        print(f"| {name} | {m.nnz:,} | {b:.2f} | {a:.2f} | {k:.2f} | {s:.2f} | {s / b:.2f}x | {s / a:.2f}x |",
              flush=True)


if __name__ == "__main__":
    main()
