"""issue 30, round 3, section unsorted: `A @ B` (now unsorted rows, `ds~`) against the sorted product it
replaced (format="csr"), scipy's `A @ B`, MKL's and GraphBLAS's, and `(A @ B) + C` (now with a sort) against
scipy's same chain, on the kernels suite's SpGEMM data (bench/autosparse_bench/kernels.py family_matrix,
x0.25 and x1). Serial: one thread each, thread-CPU time, rounds interleaved, medians in ms.

    PYTHONPATH=src:bench python docs/notes/perf30-unsorted-2.py [rounds] [files...]
"""

import statistics
import sys
import time
import warnings

import autosparse as asp
from autosparse_bench import data
from autosparse_bench.kernels import family_matrix, load_graphblas, load_mkl

SPGEMM = "C(i,j) = A(i,k) * B(k,j)"
asp.set_num_threads(1)


def contenders(a, b, c, mkl, gb):
    oa, ob, oc = (asp.Tensor.from_scipy(m) for m in (a, b, c))
    ga, gb_b = gb.io.from_scipy_sparse(a), gb.io.from_scipy_sparse(b)
    return {
        "A @ B, csr (before)": lambda: asp.evaluate(SPGEMM, A=oa, B=ob, format="csr", num_threads=1),
        "A @ B, ds~ (after)": lambda: asp.evaluate(SPGEMM, A=oa, B=ob, num_threads=1),
        "scipy A @ B": lambda: a @ b,
        "MKL": lambda: mkl.dot_product_mkl(a, b),
        "GraphBLAS mxm": lambda: ga.mxm(gb_b, gb.semiring.plus_times).new(),
        "(A @ B) + C, csr (before)": lambda: asp.evaluate(SPGEMM, A=oa, B=ob, format="csr", num_threads=1) + oc,
        "(A @ B) + C, ds~ + sort (after)": lambda: asp.evaluate(SPGEMM, A=oa, B=ob, num_threads=1) + oc,
        "scipy (A @ B) + C": lambda: (a @ b) + c,
    }


def measure(runs, rounds):
    times = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            start = time.thread_time()
            run()
            times[name].append(time.thread_time() - start)
    return {name: 1e3 * statistics.median(t) for name, t in times.items()}


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 11
    mkl, _ = load_mkl(1)
    gb, _ = load_graphblas(1)
    cases = []
    for scale in (0.25, 1):
        for family in ("uniform", "stencil-2d", "power-law"):
            nnz = int(200_000 * scale)
            a, b = family_matrix(family, nnz, 10, 42), family_matrix(family, nnz, 10, 43)
            cases.append((f"{family} x{scale:g}", a, b, family_matrix(family, nnz, 10, 44)))
    for path in sys.argv[2:]:
        m = data.load_matrix(path)
        cases.append((data.name_of(path), m, m, data.canonical(m.T)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", asp.PerformanceWarning)
        for name, a, b, c in cases:
            c = c[:a.shape[0], :b.shape[1]] if c.shape != (a.shape[0], b.shape[1]) else c
            runs = contenders(a, b, c, mkl, gb)
            for run in runs.values():  # compile, warm
                run()
            medians = measure(runs, rounds)
            print(f"{name}: nnz(A) {a.nnz:,}, nnz(A @ B) {(a @ b).nnz:,}")
            for contender, ms in medians.items():
                print(f"    {contender:34s} {ms:9.2f} ms")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
