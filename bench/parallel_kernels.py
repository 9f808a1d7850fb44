"""Parallel SpMM and SDDMM at 1 and 2 threads beside their peers at the same thread counts, in one process
on the same data: SpMM against MKL (sparse_dot_mkl, its thread count set to match) and the hand-written C
reference built with OpenMP; SDDMM against the C reference. Both kernels use the row-parallel schedule
`parallelize(i, cpu_thread, no_races)`; SDDMM writes its result into the operand's pattern, so its rows are
written in parallel without assembly.

    python bench/parallel_kernels.py [--repeat 11] [--quick]

Sizes are those of bench/kernels.py (SpMM 100,000² with 1,000,000 nonzeros times 100,000 × 64; SDDMM
20,000² with 1,000,000 nonzeros, K = 32), working sets far beyond the 512 KiB L2 per core. Medians of
--repeat calls, round-robin; ratio = peer time / autosparse time at the same thread count (> 1: autosparse
faster).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import scipy.sparse as sp

import autosparse as asp
from kernels import Reference, load_mkl, ptr

ROWS = "parallelize(i, cpu_thread, no_races)"


def _time_ms(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def _matrix(rows: int, cols: int, nnz: int, rng) -> sp.csr_array:
    matrix = sp.csr_array((rng.random(nnz) + 0.5, (rng.integers(0, rows, nnz), rng.integers(0, cols, nnz))),
                          shape=(rows, cols))
    matrix.sum_duplicates()
    # int32 indices, as the C references take them (scipy keeps the int64 of the coordinates given)
    return sp.csr_array((matrix.data, matrix.indices.astype(np.int32), matrix.indptr.astype(np.int32)),
                        shape=matrix.shape)


def _medians(contenders: dict, repeat: int, mkl=None) -> dict[str, float]:
    """Round-robin medians; a contender named with its thread count sets MKL's before it runs."""
    times = {name: [] for name in contenders}
    for _ in range(repeat + 1):  # the first round warms up
        for name, (threads, fn) in contenders.items():
            if mkl is not None:
                mkl.mkl_set_num_threads(threads)
            times[name].append(_time_ms(fn))
    return {name: statistics.median(samples[1:]) for name, samples in times.items()}


def _table(title: str, medians: dict[str, float], contenders: dict) -> None:
    print(f"\n{title}\n")
    print("| contender | threads | ms | vs autosparse at equal threads |")
    print("|---|---:|---:|---:|")
    ours = {threads: medians[name] for name, (threads, _) in contenders.items() if name.startswith("autosparse")}
    for name, (threads, _) in contenders.items():
        print(f"| {name} | {threads} | {medians[name]:.2f} | {medians[name] / ours[threads]:.2f}× |")
    print(f"\nautosparse 2 threads vs 1: {ours[1] / ours[2]:.2f}×")


def spmm(rows: int, nnz: int, cols: int, repeat: int, rng, ref: Reference, mkl) -> None:
    m = _matrix(rows, rows, nnz, rng)
    b = rng.random((rows, cols))
    expected = m @ b
    A, B = asp.Tensor.from_scipy(m), asp.Tensor.from_numpy(b)
    function = ref.function("spmm", "spmm")
    contenders = {}
    for threads in (1, 2):
        kernel = asp.compile("C(i,j) = A(i,k) * B(k,j)", {"A": "csr"}, schedule=ROWS, num_threads=threads)
        np.testing.assert_allclose(kernel(A=A, B=B).to_numpy(), expected, rtol=1e-12)
        contenders[f"autosparse {threads}"] = (threads, lambda k=kernel: k(A=A, B=B))

        def reference(t=threads):
            out = np.empty((rows, cols))
            function(rows, cols, ptr(m.indptr), ptr(m.indices), ptr(m.data), ptr(b), ptr(out), t)
            return out
        np.testing.assert_allclose(reference(), expected, rtol=1e-12)
        contenders[f"C reference {threads}"] = (threads, reference)
        if mkl is not None:
            mkl.mkl_set_num_threads(threads)
            np.testing.assert_allclose(mkl.dot_product_mkl(m, b), expected, rtol=1e-12)
            contenders[f"MKL {threads}"] = (threads, lambda: mkl.dot_product_mkl(m, b))
    _table(f"SpMM {rows:,}² with {m.nnz:,} nonzeros × dense {rows:,} × {cols}, medians of {repeat} rounds",
           _medians(contenders, repeat, mkl), contenders)


def sddmm(rows: int, nnz: int, k: int, repeat: int, rng, ref: Reference) -> None:
    m = _matrix(rows, rows, nnz, rng)
    c, d = rng.random((rows, k)), rng.random((k, rows))
    B, C, D = asp.Tensor.from_scipy(m), asp.Tensor.from_numpy(c), asp.Tensor.from_numpy(d)
    function = ref.function("sddmm", "sddmm")
    contenders, results = {}, []
    for threads in (1, 2):
        kernel = asp.compile("A(i,j) = B(i,j) * C(i,k) * D(k,j)", {"B": "csr", "A": "csr"}, schedule=ROWS,
                             num_threads=threads)
        results.append(kernel(B=B, C=C, D=D).to_scipy().data)
        contenders[f"autosparse {threads}"] = (threads, lambda q=kernel: q(B=B, C=C, D=D))

        def reference(t=threads):
            pos, crd, out = np.empty(rows + 1, dtype=np.int32), np.empty(m.nnz, dtype=np.int32), np.empty(m.nnz)
            function(rows, rows, k, ptr(m.indptr), ptr(m.indices), ptr(m.data), ptr(c), ptr(d), ptr(pos), ptr(crd),
                     ptr(out), t)
            return out
        results.append(reference())
        contenders[f"C reference {threads}"] = (threads, reference)
    for result in results[1:]:
        np.testing.assert_allclose(result, results[0], rtol=1e-12)
    _table(f"SDDMM {rows:,}² with {m.nnz:,} nonzeros, K = {k}, medians of {repeat} rounds",
           _medians(contenders, repeat), contenders)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--quick", action="store_true", help="a tenth of the sizes")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    scale = 10 if args.quick else 1
    mkl, why = load_mkl()
    if mkl is None:
        print(f"MKL: n/a — {why}")
    ref = Reference(openmp=True)
    spmm(100_000 // scale, 1_000_000 // scale, 64, args.repeat, rng, ref, mkl)
    sddmm(20_000 // scale, 1_000_000 // scale, 32, args.repeat, rng, ref)


if __name__ == "__main__":
    main()
