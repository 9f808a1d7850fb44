"""A scoped sum under an element-wise consumer that keeps an index one of its operands does not use
(`maximum(sum(k, A(i,k) * B(k,j)), 0)`, GCN's fused step) is a row workspace filled by one walk of the
row of A, not a scalar that walks it again for every j (cin/concretize.py, `_rewalks`). The kernels
against numpy on dense copies, over formats, fills and edge inputs; the chosen CIN where it is claimed."""

from __future__ import annotations

import numpy as np
import pytest

import autosparse as asp
from autosparse.cin.rewrite import bounded
from autosparse.notation import Access, parse

INF = np.inf

RELU = "C(i,j) = maximum(sum(k, A(i,k) * B(k,j)), 0)"
SCALED = "C(i,j) = d(i) * sum(k, A(i,k) * B(k,j)) + E(i,j)"
EXP = "C(i,j) = exp(sum(k, A(i,k) * B(k,j)))"
MIN_PLUS = "C(i,j) = minimum(E(i,j), min(k, A(i,k) + B(k,j)))"

# expression, numpy on dense copies, A's fill, the fill of B and E
PROGRAMS = [
    (RELU, lambda A, B, d, E: np.maximum(A @ B, 0), 0.0, 0.0),
    (SCALED, lambda A, B, d, E: d[:, None] * (A @ B) + E, 0.0, 0.0),
    (EXP, lambda A, B, d, E: np.exp(A @ B), 0.0, 0.0),
    (MIN_PLUS, lambda A, B, d, E: np.minimum(E, np.min(A[:, :, None] + B[None, :, :], axis=1, initial=INF)), INF, INF),
]


def _filled(rng, shape, density, fill):
    """A dense array of `fill` with about `density` of its entries small random values (some explicit 0s)."""
    stored = rng.random(shape) < density
    return np.where(stored, rng.integers(-4, 5, shape) / 4, fill)


def _operands(case, rng, a_fill, b_fill, n=6, m=5, p=4):
    """A (n×m), B (m×p), d (n), E (n×p) for an input case: random, empty, one entry, size-1 dimensions."""
    if case == "size-1":
        n, p = 1, 1
    A = _filled(rng, (n, m), {"random": 0.4, "size-1": 0.6}.get(case, 0.0), a_fill)
    if case == "one-entry":
        A[n // 2, m - 1] = 1.5
    return A, _filled(rng, (m, p), 0.5, b_fill), rng.integers(-2, 3, n) / 2.0, _filled(rng, (n, p), 0.4, b_fill)


def _tensor(array, fmt, fill):
    return array if fmt == "dense" else asp.Tensor.from_numpy(array, fmt, fill=fill)


def _dense(result):
    return result.to_numpy() if isinstance(result, asp.Tensor) else np.asarray(result)


@pytest.mark.parametrize("text, expected, a_fill, b_fill", PROGRAMS)
@pytest.mark.parametrize("a_format", ["csr", "dcsr", "dense"])
@pytest.mark.parametrize("b_format", ["dense", "csr"])
@pytest.mark.parametrize("case", ["random", "empty", "one-entry", "size-1"])
def test_a_scoped_sum_under_an_element_wise_consumer_matches_numpy(text, expected, a_fill, b_fill, a_format,
                                                                   b_format, case):
    rng = np.random.default_rng(len(case) + 7 * len(text))
    A, B, d, E = _operands(case, rng, a_fill, b_fill)
    operands = {"A": _tensor(A, a_format, a_fill), "B": _tensor(B, b_format, b_fill), "d": d,
                "E": _tensor(E, b_format, b_fill)}
    named = {name: value for name, value in operands.items() if f"{name}(" in text}
    for threads in (1, 2):
        result = asp.evaluate(text, num_threads=threads, **named)
        np.testing.assert_allclose(_dense(result), expected(A, B, d, E), rtol=1e-12)


def _cin(text, formats):
    return str(asp.compile(expression=text, formats=formats, num_threads=1).cin)


@pytest.mark.parametrize("a_format", ["csr", "dcsr", "dense"])
@pytest.mark.parametrize("b_format", ["dense", "csr"])
@pytest.mark.parametrize("c_format", ["dense", "csr"])
def test_the_row_of_a_is_walked_once_into_a_row_workspace(a_format, b_format, c_format):
    """Located by a consumer writing the whole row (a dense result); stepped, its touched coordinates alone,
    into a result that stores the row sparsely, which would otherwise hold every coordinate of it."""
    cin = _cin(RELU, {"A": a_format, "B": b_format, "C": c_format})
    read = "t(j@locate)" if c_format == "dense" else "t(j)"
    assert cin == f"∀i where(∀j C(i,j) = maximum({read}, 0), ∀k ∀j t(j) += A(i,k) * B(k,j))"


@pytest.mark.parametrize("b_format", ["csr", "dense"])
def test_a_sparse_result_of_a_row_workspace_holds_the_coordinates_the_walk_reached(b_format):
    """`q @ B` over or-and with q sparse (a push step of BFS) and relu(A @ B) into CSR: as many stored entries
    as the product reaches, not the whole dimension."""
    rng = np.random.default_rng(9)
    B = np.where(rng.random((40, 30)) < 0.1, 1.0, 0.0)
    q = asp.Tensor.from_coo(np.array([[3, 17]]), np.ones(2), (40,), format="s")
    pushed = asp.evaluate("C(i) = any(j, logical_and(T0(j), T1(j,i)))", T0=q, T1=_tensor(B, b_format, 0.0))
    reached = (B[3] + B[17]) != 0
    np.testing.assert_array_equal(_dense(pushed) != 0, reached)
    if b_format == "csr":  # a dense B makes a dense result
        assert pushed.nnz == reached.sum()
    A = np.where(rng.random((20, 40)) < 0.1, rng.standard_normal((20, 40)), 0.0)
    relu = asp.evaluate(RELU, format="csr", A=_tensor(A, "csr", 0.0), B=_tensor(B, "csr", 0.0))
    np.testing.assert_allclose(_dense(relu), np.maximum(A @ B, 0))
    assert relu.nnz == np.count_nonzero((A != 0).astype(int) @ (B != 0).astype(int))


@pytest.mark.parametrize("text", [RELU, SCALED])
def test_the_row_workspace_is_a_plain_array_swept_by_the_consumer(text):
    """No mark check per store: the consumer's loop over j runs over the whole row anyway (`+ E(i,j)` with
    E sparse merges E's row into that loop; it does not bound it)."""
    formats = {"A": "csr", "B": "dense", "C": "dense", "d": "d", "E": "csr"}
    used = {name: fmt for name, fmt in formats.items() if f"{name}(" in text}
    source = asp.compile(expression=text, formats=used, num_threads=1).source
    assert "t_vals[j_] += " in source and "t_mark" not in source


@pytest.mark.parametrize("text, bound", [("a(i) * b(i)", True), ("a(i) * x(i)", True), ("a(i) + x(i)", False),
                                         ("a(i) - b(i)", True), ("maximum(x(i), 0)", False),
                                         ("maximum(a(i), x(i))", True), ("-(a(i) + 2)", False)])
def test_bounded_holds_for_a_factor_and_for_both_terms(text, bound):
    rhs = parse(f"y(i) = {text}").rhs
    assert bounded(rhs, lambda leaf: isinstance(leaf, Access) and leaf.tensor in "ab") is bound


def test_the_min_plus_row_workspace_starts_at_the_reductions_identity():
    cin = asp.compile(expression=MIN_PLUS, formats={"A": "csr", "B": "dense", "E": "dense", "C": "dense"},
                      num_threads=1).cin
    assert str(cin) == "∀i where(∀j C(i,j) = minimum(E(i,j), t(j@locate)), ∀k ∀j t(j) min= A(i,k) + B(k,j))"


@pytest.mark.parametrize("text, formats, expected", [
    # every operand of the sum uses the only index it keeps: nothing is walked again
    ("y(i) = maximum(sum(j, A(i,j) * x(j)), 0)", {"A": "csr", "x": "d", "y": "d"},
     "∀i where(y(i) = maximum(t(), 0), ∀j t() += A(i,j) * x(j))"),
    # x sparse misses i, but A's rows come first in any producer: a workspace over i would gain nothing
    ("y(i) = maximum(sum(j, A(i,j) * x(j)), 0)", {"A": "csr", "x": "s", "y": "d"},
     "∀i where(y(i) = maximum(t(), 0), ∀j t() += A(i,j) * x(j))"),
    # a sparse factor bounds the consumer's j (SDDMM-like): the scalar is computed at its entries only
    ("C(i,j) = E(i,j) * sum(k, A(i,k) * B(k,j))", {"A": "csr", "B": "dense", "E": "csr", "C": "csr"},
     "∀i ∀j where(C(i,j) = E(i,j) * t(), ∀k t() += A(i,k) * B(k,j))"),
    # the sparse operand uses every index the consumer keeps: SpMV plus a vector, as before
    ("y(i) = sum(j, A(i,j) * x(j)) + z(i)", {"A": "csr", "x": "d", "z": "d", "y": "d"},
     "∀i where(y(i) = t() + z(i), ∀j t() += A(i,j) * x(j))"),
])
def test_the_scalar_stays_where_no_row_is_walked_again(text, formats, expected):
    assert _cin(text, formats) == expected
