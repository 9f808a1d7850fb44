"""issue 30, round 4, section coo: SpMV on a scipy coo_matrix passed on every call (the kernels suite's
`spmv_coo_case`, formats {"A": "csr"}), read as stored (after) against the conversion per call it
replaced (before: the same kernel with `_reads_as_stored` switched off, which is the old path unchanged)
and scipy's `coo @ x`, on the kernels suite's SpMV data (family_matrix, full size) and the real graphs named.
Rounds interleaved, medians in ms of wall time (the 2-thread rows run on threads where the call does).
With `--races` (section coo2), at 2 threads: the `u~q` kernel sequential, split over 2 threads with
atomic adds and with per-thread copies of y (`temporary`), against scipy; section coo3 runs it on the
entries shuffled (rows out of order: an atomic add per entry), where the default now is sequential.
With `--check` (section coo3): the coordinates' check alone, numpy's unsigned maximum of each array
(coo2's pass) against the one native pass (`checked_coordinates`, which also finds the rows' order), and
the whole call against coo2's path (that numpy check, then the `u~q` kernel, with atomics on threads)
and scipy, at 1 and 2 threads.

    PYTHONPATH=src:bench python docs/notes/perf30-coo-3.py [rounds] [threads] [files...]
    PYTHONPATH=src:bench python docs/notes/perf30-coo-3.py --races [rounds] [files...]
    PYTHONPATH=src:bench python docs/notes/perf30-coo-3.py --check [rounds] [threads] [files...]
"""

import statistics
import sys
import time

import numpy as np
import scipy.sparse as sp

import autosparse as asp
from autosparse.pipeline.conversions import coordinates_as_stored
from autosparse.runtime.conversion import checked_coordinates
from autosparse.tensor import storage as st
from autosparse_bench import data
from autosparse_bench.kernels import SIZES, family_matrix

SPMV = "y(i) = A(i,j) * x(j)"


def contenders(coo: sp.coo_matrix, x: np.ndarray, threads: int) -> dict:
    after = asp.Kernel(SPMV, formats={"A": "csr"}, num_threads=threads)
    before = asp.Kernel(SPMV, formats={"A": "csr"}, num_threads=threads)
    before._reads_as_stored = False
    return {"before (converted)": lambda: before(A=coo, x=x), "after (as stored)": lambda: after(A=coo, x=x),
            "scipy coo @ x": lambda: coo @ x}


def _largest(coordinates: np.ndarray) -> int:
    """coo2's check: the largest coordinate read as unsigned (a negative one counts as too large)."""
    return int(coordinates.view(np.dtype(f"u{coordinates.dtype.itemsize}")).max())


def coo2_path(coo: sp.coo_matrix, x: np.ndarray, kernel: asp.Kernel):
    """What coo2's branch did per call: numpy's check, the arrays as `u~q`, that kernel."""
    row, col = st.read_only(coo.row), st.read_only(coo.col)
    assert _largest(row) < coo.shape[0] and _largest(col) < coo.shape[1]
    levels = ({"pos": np.array([0, len(row)], dtype=row.dtype), "crd": row}, {"crd": col})
    tensor = asp.Tensor.from_read_only_storage(coo.shape, asp.Format("u~q"), st.Storage(levels, st.read_only(coo.data)))
    return kernel(A=tensor, x=x)


def checks(coo: sp.coo_matrix, x: np.ndarray, threads: int) -> dict:
    after = asp.Kernel(SPMV, formats={"A": "csr"}, num_threads=threads)
    schedule = "parallelize(i, cpu_thread, atomics)" if threads > 1 else None  # coo2's default on threads
    coo2 = asp.Kernel(SPMV, formats={"A": "u~q"}, schedule=schedule, num_threads=threads)
    row, col = coo.row, coo.col
    return {"numpy check": lambda: (_largest(row), _largest(col)),
            "native check": lambda: checked_coordinates(coo.shape, row, col),
            "coo2 call": lambda: coo2_path(coo, x, coo2), "coo3 call": lambda: after(A=coo, x=x),
            "scipy coo @ x": lambda: coo @ x}


def races(coo: sp.coo_matrix, x: np.ndarray) -> dict:
    stored = coordinates_as_stored(coo, asp.Format("ds"))
    kernels = {"sequential": asp.Kernel(SPMV, formats={"A": "u~q"}, num_threads=1)}
    for race in ("atomics", "temporary"):
        kernels[race] = asp.Kernel(SPMV, formats={"A": "u~q"}, schedule=f"parallelize(i, cpu_thread, {race})",
                                   num_threads=2)
    runs = {name: lambda k=k: k(A=stored, x=x) for name, k in kernels.items()}
    return {**runs, "scipy coo @ x": lambda: coo @ x}


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
    racing, checking = sys.argv[1:2] == ["--races"], sys.argv[1:2] == ["--check"]
    args = sys.argv[2:] if racing or checking else sys.argv[1:]
    rounds = int(args[0]) if args else 11
    threads = 2 if racing else int(args[1]) if len(args) > 1 else 1
    files = args[1:] if racing else args[2:]
    nnz = SIZES["full"]["spmv"]
    inputs = [(family, lambda f=family: family_matrix(f, nnz, 10, 42))
              for family in ("uniform", "power-law", "banded", "stencil-2d", "stencil-3d")]
    inputs += [(name, lambda n=name: data.load_matrix(f"/work/shared/data/{n}.mtx.gz")) for name in files]
    rng = np.random.default_rng(0)
    print(f"threads {threads}, {rounds} rounds, medians in ms; ratios: scipy's time over ours")
    if racing:
        print("| data | nnz | sequential | atomics | temporary | scipy | sequential / scipy |")
    elif checking:
        print("| data | nnz | numpy check | native check | coo2 call | coo3 call | scipy | coo2 / scipy "
              "| coo3 / scipy |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    else:
        print("| data | nnz | before | after | scipy | before / scipy | after / scipy |")
    if not checking:
        print("|---|---:|---:|---:|---:|---:|---:|")
    import warnings
    warnings.simplefilter("ignore", asp.PerformanceWarning)
    for name, make in inputs:
        m = make()
        coo, x = sp.coo_matrix(m), rng.random(m.shape[1])
        if racing:  # rows out of order
            order = rng.permutation(coo.nnz)
            coo = sp.coo_matrix((coo.data[order], (coo.row[order], coo.col[order])), shape=coo.shape)
        runs = races(coo, x) if racing else checks(coo, x, threads) if checking else contenders(coo, x, threads)
        for label, run in runs.items():
            if "check" not in label:
                np.testing.assert_allclose(run(), m @ x, rtol=1e-10, atol=1e-12)
        t = measure(runs, rounds)
        if racing:
            q, a, c, s = (t[n] for n in ("sequential", "atomics", "temporary", "scipy coo @ x"))
            print(f"| {name} | {m.nnz:,} | {q:.2f} | {a:.2f} | {c:.2f} | {s:.2f} | {s / q:.2f}x |", flush=True)
            continue
        if checking:
            n, c, b, a, s = (t[n] for n in ("numpy check", "native check", "coo2 call", "coo3 call", "scipy coo @ x"))
            print(f"| {name} | {m.nnz:,} | {n:.2f} | {c:.2f} | {b:.2f} | {a:.2f} | {s:.2f} | {s / b:.2f}x "
                  f"| {s / a:.2f}x |", flush=True)
            continue
        b, a, s = t["before (converted)"], t["after (as stored)"], t["scipy coo @ x"]
        print(f"| {name} | {m.nnz:,} | {b:.2f} | {a:.2f} | {s:.2f} | {s / b:.2f}x | {s / a:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
