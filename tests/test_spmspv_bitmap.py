"""SpMSpV, `y(i) = A(i,j) * x(j)` with x sparse, against scipy's A @ x across x's densities (empty, one entry,
10%, every entry), A in CSR (rows pull x, found through a bitmap) and CSC (x's entries push A's columns),
1 and 2 threads, int32 and int64 indices. A bitmap holds a bit per coordinate in front of its positions
(lower/finds.py), which must let every held coordinate through: widths that are not a multiple of 64 and
coordinates on the words' edges test them, and so does a bitmap rebuilt per row (`coiterate(j, bitmap, A)`);
an Inf in A where x is absent gives no NaN (a product with an absent entry is not computed)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp

EXPRESSION = "y(i) = A(i,j) * x(j)"


def _vector(cols: int, kind: str, rng) -> np.ndarray:
    x = np.zeros(cols)
    chosen = {"empty": [], "one": [cols - 1], "all": range(cols),
              "tenth": rng.choice(cols, max(1, cols // 10), replace=False),
              "edges": [j for j in (0, 63, 64, 127, 128, cols - 1) if j < cols]}[kind]
    x[list(chosen)] = rng.random(len(chosen)) + 0.5
    return x


def _matrix(rows: int, cols: int, rng) -> sp.csr_array:
    m = sp.random_array((rows, cols), density=0.2, rng=rng, format="csr") * 2.0
    m = sp.lil_array(m)
    m[0, [j for j in (0, 63, 64, 127, 128, cols - 1) if j < cols]] = 1.5  # the bit words' edges
    return sp.csr_array(m)


@pytest.mark.parametrize("a_format", ["csr", "csc"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("kind", ["empty", "one", "tenth", "edges", "all"])
@pytest.mark.parametrize("shape,index_dtype", [((50, 130), np.int32), ((3, 200), np.int64), ((70, 1), np.int32)])
def test_matches_scipy(a_format, threads, kind, shape, index_dtype):
    rng = np.random.default_rng(shape[1] + len(kind))
    m, x = _matrix(*shape, rng), _vector(shape[1], kind, rng)
    A = asp.Tensor.from_scipy(m if a_format == "csr" else sp.csc_array(m), index_dtype=index_dtype)
    X = asp.Tensor.from_numpy(x, format="s", index_dtype=index_dtype)
    kernel = asp.compile(EXPRESSION, formats={"A": a_format, "x": "s", "y": "d"}, schedule="coiterate(j, auto)",
                         num_threads=threads)
    np.testing.assert_allclose(kernel(A=A, x=X), m @ x, rtol=1e-12, atol=0)


@pytest.mark.parametrize("schedule", ["coiterate(j, bitmap)", "coiterate(j, bitmap, A)"])
@pytest.mark.parametrize("kind", ["one", "tenth", "edges", "all"])
def test_bitmap_matches_scipy(schedule, kind):
    """x's bitmap built once (x found), and A's rebuilt for every row (x drives, A found)."""
    rng = np.random.default_rng(len(kind))
    m, x = _matrix(40, 190, rng), _vector(190, kind, rng)
    m = sp.csr_array(sp.diags_array((np.arange(40) != 5).astype(float)) @ m)  # row 5 empty: its bitmap holds nothing
    m.eliminate_zeros()
    kernel = asp.compile(EXPRESSION, formats={"A": "csr", "x": "s", "y": "d"}, schedule=schedule)
    y = kernel(A=asp.Tensor.from_scipy(m), x=asp.Tensor.from_numpy(x, format="s"))
    np.testing.assert_allclose(y, m @ x, rtol=1e-12, atol=0)
    assert "bitmap_bits" in kernel.source


@pytest.mark.parametrize("threads", [1, 2])
def test_an_inf_meeting_an_absent_entry_gives_no_nan(threads):
    m = sp.csr_array(np.array([[np.inf, 2.0, 0.0], [0.0, np.nan, 3.0], [1.0, 0.0, 0.0]]))
    x = np.array([0.0, 0.0, 4.0])
    kernel = asp.compile(EXPRESSION, formats={"A": "csr", "x": "s", "y": "d"}, schedule="coiterate(j, bitmap)",
                         num_threads=threads)
    y = kernel(A=asp.Tensor.from_scipy(m), x=asp.Tensor.from_numpy(x, format="s"))
    np.testing.assert_array_equal(y, [0.0, 12.0, 0.0])


def _rows_in_order(m: sp.csr_array, held: dict[int, float]) -> np.ndarray:
    """Each row's sum in the order its entries are stored, from +0, over the entries whose column x holds:
    the product's documented reading (an absent x entry is never read, so it meets no Inf or NaN)."""
    y = np.zeros(m.shape[0])
    for i in range(m.shape[0]):
        total = 0.0
        for p in range(m.indptr[i], m.indptr[i + 1]):
            if int(m.indices[p]) in held:
                total += float(m.data[p]) * held[int(m.indices[p])]
        y[i] = total
    return y


#: Columns 0-4 held by x (4: an explicit zero, 3: an explicit -0), 5-9 absent. Rows: Inf, -Inf and NaN meeting
#: absent entries (skipped) and held ones (Inf x 0 = NaN), negative products of zeros (-0 terms on a +0 sum),
#: a sum that overflows, Inf - Inf, and rows with nothing held or nothing stored.
NON_FINITE_ROWS = [
    {5: np.inf, 6: -np.inf, 7: np.nan, 0: 1.5},
    {5: np.nan, 1: 2.0, 9: np.inf},
    {0: np.inf, 6: 1.0},
    {4: np.inf},
    {1: np.nan, 5: 3.0},
    {4: -2.0, 3: 5.0, 8: -1.0},
    {3: 1.0},
    {0: 1e308, 1: 1e308, 7: np.inf},
    {0: np.inf, 2: -np.inf},
    {5: np.inf, 8: np.nan},
    {},
    {5: -0.0, 9: -1.0},
]
NON_FINITE_X = {0: 2.0, 1: 1.5, 2: 3.0, 3: -0.0, 4: 0.0}


@pytest.mark.parametrize("schedule", ["coiterate(j, bitmap)", "coiterate(j, auto)", None])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_inf_nan_and_signed_zeros_as_the_stored_order_gives_them(schedule, threads, index_dtype):
    """Bit for bit (signs of zeros, Inf and NaN rows included) against each row summed in stored order over
    the held entries only: any rewrite of the hits (a dense copy of x read without a branch, say) must keep
    these."""
    rows, cols = len(NON_FINITE_ROWS), 10
    indptr = np.cumsum([0] + [len(r) for r in NON_FINITE_ROWS])
    indices = np.array([j for r in NON_FINITE_ROWS for j in r], dtype=index_dtype)
    m = sp.csr_array((np.array([v for r in NON_FINITE_ROWS for v in r.values()]), indices, indptr), shape=(rows, cols))
    held = sorted(NON_FINITE_X)
    X = asp.Tensor.from_coo([held], [NON_FINITE_X[j] for j in held], (cols,), format="s", index_dtype=index_dtype)
    kernel = asp.compile(EXPRESSION, formats={"A": "csr", "x": "s", "y": "d"}, schedule=schedule, num_threads=threads)
    y = kernel(A=asp.Tensor.from_scipy(m, index_dtype=index_dtype), x=X)
    expected = _rows_in_order(m, NON_FINITE_X)
    np.testing.assert_array_equal(y, expected)
    np.testing.assert_array_equal(np.signbit(y), np.signbit(expected))
