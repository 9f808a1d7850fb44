"""issue 30, round 5, section coo: SpMV on a scipy coo_matrix passed on every call (the kernels suite's
`spmv_coo_case`, formats {"A": "csr"}), on the kernels suite's SpMV data (family_matrix, full size) and the
real graphs named, at 1 or 2 threads. Contenders, rounds interleaved in one process, medians in ms of wall
time:
- "coo3 call": round 4's path, the native pass (`checked_coordinates`: ranges and the rows' order), then
  the unchecked `coo` or `u~q` kernel it picks;
- "coo5 call": this branch's path (since round 5's coo3 section): the `coo` kernel taking the rows as in
  order and checking that and the ranges where it reads them, on one thread and on threads; after a call
  whose rows were out of order (the Kernel's hint), the pass and the unchecked kernel instead;
- "no hint": the same, the hint cleared before each call, so rows out of order pay the failed checked run,
  then the pass and the rerun (each call as a fresh Kernel's first);
- "bare kernel": the `u~q` kernel with no check at all, on the matrix's arrays wrapped once (the floor);
- scipy's `coo @ x`.
Inputs: rows in order (`coo_matrix(csr)`), "shuffled" (entries in a random order), or "last" (rows in
order but the last entry's row set to 0: the worst case for the checked kernel). "kernels" instead times
the checked `coo` kernel against a checked `u~q` kernel (the reading coo4 used on one thread), alone, on
one thread, rows in order.

    PYTHONPATH=src:bench python docs/notes/perf30-coo-4.py [rounds] [threads] [files...] [shuffled|last|kernels]
"""

import statistics
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

import autosparse as asp
from autosparse.pipeline import conversions
from autosparse_bench import data
from autosparse_bench.kernels import SIZES, family_matrix

SPMV = "y(i) = A(i,j) * x(j)"


def contenders(coo: sp.coo_matrix, x: np.ndarray, threads: int) -> dict:
    coo3 = asp.Kernel(SPMV, formats={"A": "csr"}, num_threads=threads)
    coo3._as_stored = lambda operands: iter([coo3._reading_as_stored(operands, checked=False)])  # the pass, always
    coo5 = asp.Kernel(SPMV, formats={"A": "csr"}, num_threads=threads)
    fresh = asp.Kernel(SPMV, formats={"A": "csr"}, num_threads=threads)

    def first_call():
        fresh._rows_out_of_order = False
        return fresh(A=coo, x=x)
    bare = asp.Kernel(SPMV, formats={"A": "u~q"}, num_threads=1)
    wrapped = conversions._as_stored(coo)  # u~q, its arrays checked once here
    return {"coo3 call": lambda: coo3(A=coo, x=x), "coo5 call": lambda: coo5(A=coo, x=x), "no hint": first_call,
            "bare kernel": lambda: bare(A=wrapped, x=x), "scipy coo @ x": lambda: coo @ x}


def checked_kernels(coo: sp.coo_matrix, x: np.ndarray) -> dict:
    """The checked `coo` and `u~q` kernels alone, each on the arrays wrapped once, and the bare `u~q`."""
    runs = {}
    for name, fmt, operand in [("checked coo", "coo", conversions.coordinates_as_stored(coo, asp.Format("ds"), True)),
                               ("checked u~q", "u~q", conversions._as_stored(coo)), ("bare u~q", "u~q", None)]:
        kernel = asp.Kernel(SPMV, formats={"A": fmt, "y": "d"}, num_threads=1)
        kernel._checked = frozenset() if operand is None else frozenset({"A"})
        wrapped = conversions._as_stored(coo) if operand is None else operand
        runs[name] = lambda k=kernel, a=wrapped: k(A=a, x=x)
    return runs


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
    modes = {"shuffled", "last", "kernels"}
    mode = next((a for a in args[2:] if a in modes), "in order")
    nnz = SIZES["full"]["spmv"]
    inputs = [(family, lambda f=family: family_matrix(f, nnz, 10, 42))
              for family in ("uniform", "power-law", "stencil-2d")]
    inputs += [(name, lambda n=name: data.load_matrix(f"/work/shared/data/{n}.mtx.gz"))
               for name in args[2:] if name not in modes]
    rng = np.random.default_rng(0)
    warnings.simplefilter("ignore", asp.PerformanceWarning)
    print(f"threads {threads}, {rounds} rounds, rows {mode}, medians in ms; ratios: scipy's time over ours")
    if mode != "kernels":
        print("| data | nnz | coo3 call | coo5 call | no hint | bare kernel | scipy | coo3 / scipy | coo5 / scipy "
              "| coo5 / coo3 |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, make in inputs:
        m = make()
        coo, x = sp.coo_matrix(m), rng.random(m.shape[1])
        if mode == "shuffled":
            order = np.random.default_rng(1).permutation(coo.nnz)
            coo = sp.coo_matrix((coo.data[order], (coo.row[order], coo.col[order])), shape=coo.shape)
        elif mode == "last":
            coo.row[-1] = 0
        runs = checked_kernels(coo, x) if mode == "kernels" else contenders(coo, x, threads)
        for run in runs.values():
            np.testing.assert_allclose(run(), coo @ x, rtol=1e-10, atol=1e-12)
        t = measure(runs, rounds)
        if mode == "kernels":
            print(f"| {name} | {m.nnz:,} | " + " | ".join(f"{n} {v:.3f}" for n, v in t.items()) + " |", flush=True)
            continue
        b, a, f, k, s = (t[n] for n in ("coo3 call", "coo5 call", "no hint", "bare kernel", "scipy coo @ x"))
        print(f"| {name} | {m.nnz:,} | {b:.2f} | {a:.2f} | {f:.2f} | {k:.2f} | {s:.2f} | {s / b:.2f}x | {s / a:.2f}x |"
              f" {a / b:.2f} |", flush=True)


if __name__ == "__main__":
    main()
