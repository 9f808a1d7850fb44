"""issue 30, round 4, section chain: `(A @ B) + C` with `A @ B` unsorted (`ds~`), where the add now gathers
each row through a dense workspace (cin.concretize.unordered_merges) instead of sorting the product first,
against round 3's sort-then-merge (the product sorted by `to_format("csr")`, as the kernel did), round 2's
sorted product (format="csr"), and scipy's same chain; `2 * (A @ B)` likewise (now walked as stored). Also the add alone on a product computed once
(scipy's unsorted product for scipy). Kernels suite's SpGEMM data (family_matrix, seeds 42/43, C seed 44)
at x0.25 and x1, and real matrices given as files (A·A with C = Aᵀ). Serial: one thread each, thread-CPU
time, rounds interleaved, medians in ms.

    PYTHONPATH=src:bench python docs/notes/perf30-chain-3.py [rounds] [files...]
"""

import statistics
import sys
import time
import warnings

import autosparse as asp
from autosparse_bench import data
from autosparse_bench.kernels import family_matrix

SPGEMM = "C(i,j) = A(i,k) * B(k,j)"
ADD = "D(i,j) = P(i,j) + C(i,j)"
asp.set_num_threads(1)


def contenders(a, b, c):
    oa, ob, oc = (asp.Tensor.from_scipy(m) for m in (a, b, c))
    product = lambda: asp.evaluate(SPGEMM, A=oa, B=ob, num_threads=1)
    once, scipy_once = product(), a @ b
    return {
        "chain: csr product + add (round 2)": lambda: asp.evaluate(SPGEMM, A=oa, B=ob, format="csr",
                                                                   num_threads=1) + oc,
        "chain: ds~ + sort + add (round 3)": lambda: asp.evaluate(ADD, P=product().to_format("csr"), C=oc,
                                                                  num_threads=1),
        "chain: ds~ + workspace add, ds~ (now)": lambda: product() + oc,
        "chain: ds~ + workspace add, csr": lambda: asp.evaluate(ADD, P=product(), C=oc, format="csr",
                                                                num_threads=1),
        "chain: scipy (A @ B) + C": lambda: (a @ b) + c,
        "scale: 2 * (A @ B), walked as stored (now)": lambda: 2 * product(),
        "scale: 2 * (A @ B), sorted first (round 3)": lambda: 2 * product().to_format("csr"),
        "scale: scipy 2 * (A @ B)": lambda: 2 * (a @ b),
        "add alone: workspace, ds~ (now)": lambda: once + oc,
        "add alone: workspace, csr": lambda: asp.evaluate(ADD, P=once, C=oc, format="csr", num_threads=1),
        "add alone: scipy P + C (P unsorted)": lambda: scipy_once + c,
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
            runs = contenders(a, b, c)
            for run in runs.values():  # compile, warm
                run()
            medians = measure(runs, rounds if a.nnz < 1_000_000 else max(3, rounds // 3))
            print(f"{name}: nnz(A) {a.nnz:,}, nnz(A @ B) {(a @ b).nnz:,}")
            for contender, ms in medians.items():
                print(f"    {contender:44s} {ms:9.2f} ms")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
