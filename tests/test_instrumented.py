"""Instrumented kernels count loop iterations exactly: the noise-free measure of work that cost models
are checked against. Expected counts are computed from the inputs with plain Python/numpy."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

import autosparse as asp


def _matrix(rows, cols, density, seed, fmt):
    m = sp.random(rows, cols, density=density, format="csr", random_state=seed)
    return asp.Tensor.from_scipy(m, format=fmt), m


def test_spmv_inner_loop_runs_once_per_entry():
    A, m = _matrix(40, 30, 0.2, 1, "csr")
    k = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"}, instrument=True)
    k(A=A, x=np.ones(30))
    assert k.counts == {"∀i dense": 40, "∀j over A(i,j)": m.nnz}


def test_gustavson_inner_loop_runs_once_per_product():
    A, a = _matrix(30, 25, 0.15, 2, "csr")
    B, b = _matrix(25, 35, 0.15, 3, "csr")
    k = asp.compile("C(i,j) = A(i,k) * B(k,j)", formats={"A": "csr", "B": "csr", "C": "csr"}, instrument=True)
    C = k(A=A, B=B)
    row_lengths = np.diff(b.indptr)
    assert k.counts["∀j over B(k,j)"] == int(row_lengths[a.indices].sum())
    assert k.counts["∀k over A(i,k)"] == a.nnz
    assert k.counts["∀j over w(j)"] == C.nnz  # the workspace holds each row of C once


def test_inner_product_merge_runs_over_the_union_until_one_side_ends():
    A, a = _matrix(20, 30, 0.2, 4, "csr")
    B, b = _matrix(30, 15, 0.2, 5, "csc")
    k = asp.compile("C(i,j) = A(i,k) * B(k,j)", formats={"A": "csr", "B": "csc", "C": "csr"}, instrument=True,
                    schedule="∀i ∀j ∀k C(i,j) += A(i,k) * B(k,j)")  # the default schedule converts B to CSR
    k(A=A, B=B)
    bc = b.tocsc()
    expected = 0
    for i in range(20):
        row = set(a.indices[a.indptr[i]:a.indptr[i + 1]].tolist())
        for j in range(15):
            column = set(bc.indices[bc.indptr[j]:bc.indptr[j + 1]].tolist())
            if row and column:
                end = min(max(row), max(column))
                expected += len({k for k in row | column if k <= end})
    assert k.counts["∀k merge"] == expected


def test_uninstrumented_kernels_report_nothing():
    A, _ = _matrix(5, 5, 0.5, 6, "csr")
    k = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"})
    k(A=A, x=np.ones(5))
    assert k.counts is None
    assert "counters[" not in k.source


def test_an_instrumented_call_runs_on_one_thread_whatever_it_is_allowed():
    """Counters are shared between threads, so an instrumented call runs the sequential specialisation
    even where two threads are allowed (the parallel one lost increments now and then)."""
    A, a = _matrix(300, 250, 0.05, 6, "csr")
    B, b = _matrix(250, 280, 0.05, 7, "csr")
    k = asp.compile("C(i,j) = A(i,k) * B(k,j)", formats={"A": "csr", "B": "csr", "C": "csr"}, instrument=True,
                    num_threads=2)
    for _ in range(3):
        C = k(A=A, B=B)
        assert k.counts["∀i dense"] == 300 and k.counts["∀k over A(i,k)"] == a.nnz
        assert k.counts["∀j over B(k,j)"] == int(np.diff(b.indptr)[a.indices].sum())
    np.testing.assert_allclose(C.to_numpy(), (a @ b).toarray())
    assert all("#pragma omp" not in call.source.source for call in k._calls.values())
