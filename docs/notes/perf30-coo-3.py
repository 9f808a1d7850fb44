"""issue 30, round 4, section coo: SpMV on a scipy coo_matrix passed on every call (the kernels suite's
`spmv_coo_case`, formats {"A": "csr"}), read as stored (after) against the conversion per call it
replaced (before: the same kernel with `_reads_as_stored` switched off, which is the old path unchanged)
and scipy's `coo @ x`, on the kernels suite's SpMV data (family_matrix, full size) and the real graphs named.
Rounds interleaved, medians in ms of wall time (the 2-thread rows run on threads where the call does).

    PYTHONPATH=src:bench python docs/notes/perf30-coo-3.py [rounds] [threads] [files...]
"""

import statistics
import sys
import time

import numpy as np
import scipy.sparse as sp

import autosparse as asp
from autosparse_bench import data
from autosparse_bench.kernels import SIZES, family_matrix

SPMV = "y(i) = A(i,j) * x(j)"


def contenders(coo: sp.coo_matrix, x: np.ndarray, threads: int) -> dict:
    after = asp.Kernel(SPMV, formats={"A": "csr"}, num_threads=threads)
    before = asp.Kernel(SPMV, formats={"A": "csr"}, num_threads=threads)
    before._reads_as_stored = False
    return {"before (converted)": lambda: before(A=coo, x=x), "after (as stored)": lambda: after(A=coo, x=x),
            "scipy coo @ x": lambda: coo @ x}


def measure(runs: dict, rounds: int) -> dict:
    times = {name: [] for name in runs}
    for run in runs.values():
        run()  # compiled, and the conversion's warning given, before timing
    for _ in range(rounds):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return {name: 1e3 * statistics.median(t) for name, t in times.items()}


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 11
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    files = sys.argv[3:]
    nnz = SIZES["full"]["spmv"]
    inputs = [(family, lambda f=family: family_matrix(f, nnz, 10, 42))
              for family in ("uniform", "power-law", "banded", "stencil-2d", "stencil-3d")]
    inputs += [(name, lambda n=name: data.load_matrix(f"/work/shared/data/{n}.mtx.gz")) for name in files]
    rng = np.random.default_rng(0)
    print(f"threads {threads}, {rounds} rounds, medians in ms; ratios: scipy's time over ours")
    print("| data | nnz | before | after | scipy | before / scipy | after / scipy |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    import warnings
    warnings.simplefilter("ignore", asp.PerformanceWarning)
    for name, make in inputs:
        m = make()
        coo, x = sp.coo_matrix(m), rng.random(m.shape[1])
        runs = contenders(coo, x, threads)
        for run in runs.values():
            np.testing.assert_allclose(run(), m @ x, rtol=1e-10, atol=1e-12)
        t = measure(runs, rounds)
        b, a, s = t["before (converted)"], t["after (as stored)"], t["scipy coo @ x"]
        print(f"| {name} | {m.nnz:,} | {b:.2f} | {a:.2f} | {s:.2f} | {s / b:.2f}x | {s / a:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
