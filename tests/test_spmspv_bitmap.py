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
