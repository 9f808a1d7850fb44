"""Parallel SpMM and SDDMM at 1 and 2 threads beside their peers at the same thread counts, in one process
on the same data: SpMM against MKL (sparse_dot_mkl, its thread count set to match) and the hand-written C
reference built with OpenMP; SDDMM against the C reference. Both kernels use the row-parallel schedule
`parallelize(i, cpu_thread, no_races)`; SDDMM writes its result into the operand's pattern, so its rows are
written in parallel without assembly.

    autosparse bench scaling [--repeat 11] [--quick]

Sizes are those of autosparse bench kernels (SpMM 100,000² with 1,000,000 nonzeros times 100,000 × 64; SDDMM
20,000² with 1,000,000 nonzeros, K = 32), working sets far beyond the 512 KiB L2 per core. Medians of
--repeat calls, round-robin; ratio = peer time / autosparse time at the same thread count (> 1: autosparse
faster).
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

import autosparse as asp
from .kernels import Reference, load_mkl, ptr

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


def _copies(nbytes: int) -> dict:
    """A plain copy of `nbytes` at 1 and 2 threads beside the kernels: the memory-bandwidth scaling the
    machine allows (numpy releases the GIL while it copies)."""
    source, target = np.ones(nbytes, dtype=np.uint8), np.empty(nbytes, dtype=np.uint8)
    half, pool = nbytes // 2, ThreadPoolExecutor(2)

    def two():
        for future in [pool.submit(np.copyto, target[:half], source[:half]),
                       pool.submit(np.copyto, target[half:], source[half:])]:
            future.result()
    return {"copy of the result's bytes 1": (1, lambda: np.copyto(target, source)),
            "copy of the result's bytes 2": (2, two)}


def _same_csr(result: asp.Tensor, expected: sp.csr_array) -> None:
    """A sorted CSR result equal to scipy's (sorted) product, array by array."""
    mine = result.to_scipy()
    np.testing.assert_array_equal(mine.indptr, expected.indptr)
    np.testing.assert_array_equal(mine.indices, expected.indices)
    np.testing.assert_allclose(mine.data, expected.data, rtol=1e-12)


def spgemm(rows: int, nnz: int, repeat: int, rng, mkl) -> None:
    """Parallel two-phase assembly: threads count their rows, one sizes the arrays, threads fill their
    rows; against the serial kernel (default schedule: bound phase, then fill) and sorted-output peers."""
    a, b = _matrix(rows, rows, nnz, rng), _matrix(rows, rows, nnz, rng)
    expected = a @ b
    expected.sort_indices()
    A, B = asp.Tensor.from_scipy(a), asp.Tensor.from_scipy(b)
    serial = asp.compile("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": "csr"})
    _same_csr(serial(A=A, B=B), expected)
    contenders = {"autosparse serial kernel": (1, lambda: serial(A=A, B=B))}
    for threads in (1, 2):
        kernel = asp.compile("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": "csr"}, schedule=ROWS,
                             num_threads=threads)
        _same_csr(kernel(A=A, B=B), expected)
        contenders[f"autosparse {threads}"] = (threads, lambda k=kernel: k(A=A, B=B))
        if mkl is not None:
            mkl.mkl_set_num_threads(threads)
            _same_csr(asp.Tensor.from_scipy(sp.csr_array(mkl.dot_product_mkl(a, b, reorder_output=True))),
                      expected)
            contenders[f"MKL {threads} (sorted output)"] = (threads,
                                                            lambda: mkl.dot_product_mkl(a, b, reorder_output=True))

    def scipy_sorted():
        product = a @ b
        product.sort_indices()
        return product
    contenders["scipy A @ B, sorted"] = (1, scipy_sorted)
    contenders.update(_copies(expected.nnz * 12))
    medians = _medians(contenders, repeat, mkl)
    _table(f"SpGEMM {rows:,}² × {rows:,}² with {a.nnz:,} and {b.nnz:,} nonzeros into sorted CSR "
           f"({expected.nnz:,} nonzeros), medians of {repeat} rounds", medians, contenders)
    _scaling(medians, "autosparse serial kernel")


def ttm(size: int, nnz: int, rank: int, repeat: int, rng) -> None:
    """TTM into a dense-compressed-dense result, assembled by the threads (rows of i)."""
    coords = np.unique(rng.integers(0, size, (nnz, 3)), axis=0)
    values = rng.random(len(coords)) + 0.5
    B = asp.Tensor.from_coo(coords.T, values, (size,) * 3, "dss")
    C = rng.random((rank, size))
    formats = {"B": "dss", "C": "dense", "A": "dsd"}
    serial = asp.compile("A(i,j,k) = B(i,j,l) * C(k,l)", formats)
    expected = serial(B=B, C=C)
    contenders = {"autosparse serial kernel": (1, lambda: serial(B=B, C=C))}
    for threads in (1, 2):
        kernel = asp.compile("A(i,j,k) = B(i,j,l) * C(k,l)", formats, schedule=ROWS, num_threads=threads)
        np.testing.assert_array_equal(kernel(B=B, C=C).vals, expected.vals)
        contenders[f"autosparse {threads}"] = (threads, lambda k=kernel: k(B=B, C=C))
    contenders.update(_copies(len(expected.vals) * 8))
    medians = _medians(contenders, repeat)
    _table(f"TTM {size:,}³ with {len(coords):,} nonzeros × dense {rank} × {size:,} into dsd "
           f"({len(expected.vals):,} values), medians of {repeat} rounds", medians, contenders)
    _scaling(medians, "autosparse serial kernel")


def _scaling(medians: dict[str, float], serial: str) -> None:
    copy = medians["copy of the result's bytes 1"] / medians["copy of the result's bytes 2"]
    print(f"autosparse 2 threads vs the serial kernel: {medians[serial] / medians['autosparse 2']:.2f}×; "
          f"copy bandwidth scaling 2 vs 1 thread: {copy:.2f}×")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--quick", action="store_true", help="a tenth of the sizes")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--kernel", nargs="+", choices=["spmm", "sddmm", "spgemm", "ttm"])
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    scale = 10 if args.quick else 1
    mkl, why = load_mkl()
    if mkl is None:
        print(f"MKL: n/a — {why}")
    ref = Reference(openmp=True)
    wanted = args.kernel or ["spmm", "sddmm", "spgemm", "ttm"]
    if "spmm" in wanted:
        spmm(100_000 // scale, 1_000_000 // scale, 64, args.repeat, rng, ref, mkl)
    if "sddmm" in wanted:
        sddmm(20_000 // scale, 1_000_000 // scale, 32, args.repeat, rng, ref)
    if "spgemm" in wanted:
        spgemm(100_000 // scale, 1_000_000 // scale, args.repeat, rng, mkl)
    if "ttm" in wanted:
        ttm(2_000 // scale, 1_000_000 // scale, 16, args.repeat, rng)


if __name__ == "__main__":
    main()
