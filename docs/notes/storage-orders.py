"""The figures of docs/notes/storage-orders.md: mixed storage orders before and after issue 28, beside scipy.

    PYTHONPATH=src python docs/notes/storage-orders.py            # this checkout
    PYTHONPATH=<checkout before>/src python docs/notes/storage-orders.py

Medians of interleaved runs, in milliseconds; every result is checked against scipy before it is timed.
"""

from __future__ import annotations

import gzip
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

import autosparse as asp

DATA = Path("/work/shared/data")
RUNS = 5


def timed(ours, theirs, runs: int = RUNS) -> tuple[str, str]:
    """Medians of `runs` interleaved calls of each (after one call each to compile and warm up)."""
    samples: tuple[list[float], list[float]] = ([], [])
    for function in (ours, theirs):
        function()
    for _ in range(runs):
        for function, kept in zip((ours, theirs), samples):
            start = time.perf_counter()
            function()
            kept.append(time.perf_counter() - start)
    return tuple(f"{statistics.median(kept) * 1e3:.1f}" for kept in samples)


def uniform(n: int, nnz: int, seed: int) -> sp.csr_array:
    rng = np.random.default_rng(seed)
    matrix = sp.csr_array((rng.random(nnz), (rng.integers(0, n, nnz), rng.integers(0, n, nnz))), shape=(n, n))
    matrix.sum_duplicates()
    return matrix


def row(name: str, ours, theirs, runs: int = RUNS) -> None:
    try:
        mine, scipy_ms = timed(ours, theirs, runs)
    except asp.AutosparseError as error:
        mine, scipy_ms = f"{type(error).__name__}: {str(error)[:50]}…", timed(theirs, theirs, runs)[0]
    print(f"| {name} | {mine} | {scipy_ms} |", flush=True)


def dense(result) -> np.ndarray:
    return result.to_numpy() if isinstance(result, asp.Tensor) else np.asarray(result)


def main() -> None:
    warnings.simplefilter("ignore")
    a = uniform(100_000, 1_000_000, 0)
    b = uniform(100_000, 1_000_000, 1)
    A, Bc = asp.Tensor.from_scipy(a), asp.Tensor.from_scipy(b.tocsc())
    x = np.random.default_rng(2).random(100_000)
    print(f"matrices: 100,000² uniform, {a.nnz:,} and {b.nnz:,} stored; SpGEMM on 4elt "
          f"(15,606², symmetric, expanded); {' '.join(sys.argv[1:]) or 'this checkout'}")
    print("| case | autosparse ms | scipy ms |\n|---|---|---|")

    row("CSR -> CSC conversion (Tensor.to_format)", lambda: A.to_format("csc"), a.tocsc)
    try:
        from autosparse.runtime.conversion import native_conversion
        row("CSR -> CSC conversion (native, the kernels' path)", lambda: native_conversion(A, asp.Format("csc")),
            a.tocsc)
    except ImportError:
        pass

    coo_matrix = sp.coo_matrix(a.tocoo())
    assert np.allclose(dense(asp.evaluate("y(i) = A(i,j) * x(j)", A=coo_matrix, x=x)), a @ x)
    kernel = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"})
    row("SpMV, a scipy coo_matrix per call", lambda: kernel(A=coo_matrix, x=x), lambda: coo_matrix @ x)
    by_columns = sp.coo_matrix(a.tocsc().tocoo())  # the order mmread returns a SuiteSparse file in
    row("SpMV, a column-major coo_matrix per call", lambda: kernel(A=by_columns, x=x), lambda: by_columns @ x)
    row("SpMV, CSR", lambda: kernel(A=A, x=x), lambda: a @ x)

    add = lambda: asp.evaluate("C(i,j) = A(i,j) + B(i,j)", A=A, B=Bc, format="csr")
    try:
        assert abs(add().to_scipy() - (a + b)).max() < 1e-12
    except asp.AutosparseError:
        pass
    bc = b.tocsc()
    row("CSR + CSC into CSR", add, lambda: a + bc)

    with gzip.open(DATA / "4elt.mtx.gz") as file:
        g = sp.csr_array(scipy.io.mmread(file))
    G, Gc, gc = asp.Tensor.from_scipy(g), asp.Tensor.from_scipy(g.tocsc()), g.tocsc()
    product = lambda right: asp.evaluate("C(i,j) = A(i,k) * B(k,j)", A=G, B=right, format="csr")
    assert abs(product(Gc).to_scipy() - g @ g).max() < 1e-9
    row("SpGEMM CSR × CSC into CSR (4elt)", lambda: product(Gc), lambda: g @ gc, runs=3)
    row("SpGEMM CSR × CSR into CSR (4elt)", lambda: product(G), lambda: g @ g)


if __name__ == "__main__":
    main()
