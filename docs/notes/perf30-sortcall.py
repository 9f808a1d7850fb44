"""The SpGEMM figures of docs/notes/perf30-sortcall.md: A @ A into sorted (`csr`) and unsorted (`ds~`) rows
against scipy's unsorted product, scipy + sort_indices, MKL and GraphBLAS, all on one thread.

    PYTHONPATH=src:bench python docs/notes/perf30-sortcall.py ROUNDS
    PYTHONPATH=<checkout before>/src:<checkout before>/bench python docs/notes/perf30-sortcall.py ROUNDS

Every contender runs once per round (interleaved); the figure is the median of the calling thread's user
time (getrusage RUSAGE_THREAD), in ms: the machine is shared, and the sys time of a product's first touch
depends on the VM's balloon (perf30-assembly.md), not on the kernel. Before timing, the `csr` result is
checked against scipy's, sorted.
"""

from __future__ import annotations

import resource
import statistics
import sys

import graphblas as gb
import numpy as np
import scipy.sparse as sp
import sparse_dot_mkl

import autosparse as asp
from autosparse_bench import data

SPGEMM = "C(i,j) = A(i,k) * B(k,j)"


def _user_time() -> float:
    return resource.getrusage(resource.RUSAGE_THREAD).ru_utime


def _cases():
    yield "soc-epinions", data.load_matrix(data.shipped_data() / "soc-epinions.mtx.gz")
    yield "rmat15x8", data.generate("rmat", 15, 8)
    yield "rmat16x4", data.generate("rmat", 16, 4)
    yield "uniform200k", data.generate("uniform", 200_000, 200_000, 1_000_000)


def _contenders(a) -> dict:
    A = asp.Tensor.from_scipy(a)
    runs = {}
    for result in ("csr", "ds~"):
        kernel = asp.compile(SPGEMM, {"A": "csr", "B": "csr", "C": result}, num_threads=1)
        runs[result] = lambda kernel=kernel: kernel(A=A, B=A)
    ga = gb.io.from_scipy_sparse(a)
    runs.update({"scipy": lambda: a @ a, "scipy+sort": lambda: (a @ a).sort_indices(),
                 "mkl": lambda: sparse_dot_mkl.dot_product_mkl(a, a),
                 "graphblas": lambda: gb.semiring.plus_times(ga @ ga).new()})
    return runs


def _check(runs: dict, a) -> None:
    got, expected = runs["csr"]().to_scipy(), a @ a
    expected.sort_indices()
    assert got.has_sorted_indices and np.array_equal(got.indptr, expected.indptr)
    assert np.array_equal(got.indices, expected.indices) and np.allclose(got.data, expected.data)


def main(rounds: int) -> None:
    sparse_dot_mkl.mkl_set_num_threads(1)
    gb.ss.config["nthreads"] = 1
    for name, matrix in _cases():
        a = sp.csr_matrix(matrix)
        a.data = np.random.default_rng(0).random(a.nnz)
        runs = _contenders(a)
        _check(runs, a)
        samples = {label: [] for label in runs}
        for _ in range(rounds):
            for label, run in runs.items():
                start = _user_time()
                out = run()
                samples[label].append(_user_time() - start)
                del out
        print(name, "  ".join(f"{label} {statistics.median(s) * 1e3:.1f}" for label, s in samples.items()), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]))
