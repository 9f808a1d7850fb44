"""The list workspace of Gustavson's SpGEMM puts each row's touched columns in order before appending
them: insertion sort for short rows, a two-level bitmap read back in order when the row's range spans
fewer 4,096-coordinate blocks than it has entries (dense or sparse in that range, full words, the last
coordinate), and a radix sort when few entries are spread wide. Each case builds
rows that take one of those paths and compares the result's arrays with scipy's canonical product.
Values a producer left behind are never cleared, so a consumer that locates the workspace must read the
coordinates this producer did not touch as zero."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from conftest import densified


def _product_with_rows(rng, columns_per_row: list[np.ndarray], cols: int):
    """A and B (CSR) such that row i of A @ B holds exactly the given columns, reached in scrambled
    order: the columns are dealt at random to three rows of B (each sorted), which row i of A combines,
    plus a fourth row repeating some of them so that the workspace adds."""
    a_rows, b_rows = [], []
    for columns in columns_per_row:
        deal = rng.integers(0, 3, size=len(columns))
        parts = [columns[deal == d] for d in range(3)] + [columns[: len(columns) // 2]]
        a_rows.append(np.arange(len(b_rows), len(b_rows) + 4))
        b_rows.extend(parts)
    a = _csr(a_rows, len(b_rows), rng)
    b = _csr(b_rows, cols, rng)
    return a, b


def _csr(rows: list[np.ndarray], cols: int, rng) -> sp.csr_array:
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    indices = np.concatenate(rows).astype(np.int64)
    return sp.csr_array((rng.random(len(indices)) + 0.5, indices, indptr), shape=(len(rows), cols))


def _spread(rng, count: int, low: int, high: int) -> np.ndarray:
    return np.sort(rng.choice(np.arange(low, high), size=count, replace=False))


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("case", ["short", "dense-in-range", "full-words", "bitmap", "wide-range", "mixed"])
def test_gustavson_rows_come_out_sorted(case, index_dtype):
    rng = np.random.default_rng(len(case))
    cols = 300_000
    rows = {
        "short": [_spread(rng, n, 0, cols) for n in (0, 1, 2, 31, 32)],
        "dense-in-range": [_spread(rng, n, 1000, 1000 + 2 * n) for n in (33, 64, 500)],
        "full-words": [np.arange(64, 192), np.arange(cols - 64, cols), np.arange(0, 4096 * 2 + 1)],
        "bitmap": [_spread(rng, n, 5000, 5000 + 65_000) for n in (33, 100, 1000)] + [_spread(rng, 5000, 0, cols)],
        "wide-range": [_spread(rng, n, 0, cols) for n in (33, 50, 73)],
        "mixed": [np.array([0, cols - 1]), _spread(rng, 40, 0, 64), _spread(rng, 40, 0, cols), np.array([7])],
    }[case]
    a, b = _product_with_rows(rng, rows, cols)
    kernel = asp.compile("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": "csr"})
    C = kernel(A=asp.Tensor.from_scipy(a, index_dtype=index_dtype), B=asp.Tensor.from_scipy(b, index_dtype=index_dtype))
    expected = sp.csr_array(a @ b)
    expected.sort_indices()
    pos, crd = C.levels[1]["pos"], C.levels[1]["crd"]
    np.testing.assert_array_equal(pos, expected.indptr)
    np.testing.assert_array_equal(crd, expected.indices)
    np.testing.assert_allclose(C.vals, expected.data)


@pytest.mark.parametrize("result", ["csr", "dd"])
@pytest.mark.parametrize("seed", range(4))
def test_a_located_workspace_reads_untouched_coordinates_as_zero(seed, result):
    """Rows of A @ B at 20% density leave many columns untouched that earlier rows touched, while D
    has entries there: with stale values read, C differs from (A @ B) * D."""
    rng = np.random.default_rng(seed)
    a = sp.random_array((30, 20), density=0.2, format="csr", rng=rng)
    b = sp.random_array((20, 25), density=0.2, format="csr", rng=rng)
    d = sp.random_array((30, 25), density=0.3, format="csr", rng=rng)
    kernel = asp.compile("C(i,j) = D(i,j) * (A(i,k) * B(k,j))",
                         {"A": "csr", "B": "csr", "D": "csr", "C": result},
                         schedule="∀i where(∀j C(i,j) = D(i,j) * w(j@locate), ∀k ∀j w(j) += A(i,k) * B(k,j))")
    C = kernel(A=asp.Tensor.from_scipy(a), B=asp.Tensor.from_scipy(b), D=asp.Tensor.from_scipy(d))
    np.testing.assert_allclose(densified(C), (a @ b).toarray() * d.toarray())


@pytest.mark.parametrize("seed", range(3))
def test_a_where_nested_in_a_producer_is_sized_by_its_own_entries(seed):
    """Row-at-a-time B·C·Dᵀ: w holds row i of B·C, t row i of (B·C)·Dᵀ. The bound phase sizes C by
    bounding t's entries; w, the inner where's temporary, must still be filled (its list is stepped to
    bound t), not bounded in turn."""
    rng = np.random.default_rng(seed)
    b, c, d = (sp.random_array((n, m), density=0.35, format="csr", rng=rng) for n, m in ((7, 6), (6, 8), (9, 8)))
    kernel = asp.compile("A(i,j) = B(i,k) * C(k,l) * D(j,l)", {"B": "csr", "C": "csr", "D": "csc", "A": "csr"},
                         schedule="∀i where(∀j A(i,j) = t(j), "
                                  "where(∀l ∀j t(j) += D(j,l@locate) * w(l), ∀k ∀l w(l) += B(i,k) * C(k@locate,l)))")
    A = kernel(B=asp.Tensor.from_scipy(b), C=asp.Tensor.from_scipy(c), D=asp.Tensor.from_scipy(d, format="csc"))
    np.testing.assert_allclose(densified(A), (b @ c @ d.T).toarray())


@pytest.mark.parametrize("entries, n", [(40, 50), (3000, 100_000), (20_000, 3_000)])
def test_a_hashed_workspace_reads_back_its_entries_in_order(entries, n):
    """Outer products scatter into a 2-D hash table (keys i·n + j); the consumer steps its entries sorted:
    by rank sort when few (34 products of 40-entry operands), else by radix passes over the key
    range: 8-bit digits, five passes, for 96 products spread over 10¹⁰ keys; 11-bit ones for 132,413
    products, the table growing from 16 slots to 2¹⁸."""
    rng = np.random.default_rng(entries)
    a = sp.random_array((n, n), density=entries / n**2, format="csc", rng=rng)
    b = sp.random_array((n, n), density=entries / n**2, format="csr", rng=rng)
    kernel = asp.compile("C(i,j) = A(i,k) * B(k,j)", {"A": "d1s0", "B": "csr", "C": "dcsr", "w": "hh"},
                         schedule="where(∀i ∀j C(i,j) = w(i,j), ∀k ∀i ∀j w(i,j) += A(i,k) * B(k,j))")
    C = kernel(A=asp.Tensor.from_scipy(a, format="d1s0"), B=asp.Tensor.from_scipy(b))
    expected = sp.coo_array(a @ b)
    coords, values = C.to_coo()
    order = np.lexsort((expected.col, expected.row))
    np.testing.assert_array_equal(coords, np.stack([expected.row[order], expected.col[order]]))
    np.testing.assert_allclose(values, expected.data[order])
