"""Tensor as an array: @ + - * / and unary -, .T / transpose, sum, astype, numpy's functions and ufuncs,
and scipy.sparse on either side — each one compiled kernel, checked against scipy.sparse and numpy on the
same data; a sparse tensor is never densified implicitly."""

from __future__ import annotations

import operator
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from autosparse.api.arrays import ArrayOperations
from autosparse.tensor import operations
from conftest import densified

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
FORMATS = ["csr", "csc", "coo", "dcsr", "dense"]


def dense(value) -> np.ndarray:
    """An operand or a result as a numpy array, for comparison."""
    return value.toarray() if sp.issparse(value) else densified(value)


def matrix(case: str, shape=(7, 5), seed: int = 0) -> sp.csr_array:
    """Integer-valued entries, so every sum and product is exact."""
    rng = np.random.default_rng(seed)
    if case == "empty":
        return sp.csr_array(shape)
    if case == "single":
        return sp.csr_array(([3.0], ([shape[0] - 1], [0])), shape=shape)
    if case == "zeros":  # stored explicit zeros only
        return sp.csr_array((np.zeros(3), ([0, 1, shape[0] - 1], [0, 2, shape[1] - 1])), shape=shape)
    values = rng.integers(-4, 5, size=shape) * (rng.random(shape) < 0.35)
    return sp.csr_array(values.astype(float))


def tensor(m, fmt: str) -> asp.Tensor:
    if fmt == "dense":
        return asp.Tensor.from_numpy(m.toarray())
    return asp.Tensor.from_scipy(m, format=fmt)


def pairs():
    """Every pair of operand formats: opposite storage orders meet through a conversion (tests/test_orders.py)."""
    return [pytest.param(a, b, id=f"{a}-{b}") for a in FORMATS for b in FORMATS]


def check(result, expected, sparse: bool) -> None:
    np.testing.assert_allclose(dense(result), dense(expected), rtol=1e-12, atol=1e-12)
    if sparse:  # the result's pattern is bounded by sparse operands: it stays sparse
        assert isinstance(result, asp.Tensor) and not result.format.is_dense, result


# ----- element-wise and products over format pairs ---------------------------------------------------------

ELEMENTWISE = {"+": operator.add, "-": operator.sub, "*": operator.mul}


@pytest.mark.parametrize("op", sorted(ELEMENTWISE))
@pytest.mark.parametrize("left, right", pairs())
def test_elementwise_against_scipy(op, left, right):
    m, n = matrix("random", seed=1), matrix("random", seed=2)
    result = ELEMENTWISE[op](tensor(m, left), tensor(n, right))
    expected = m.multiply(n) if op == "*" else ELEMENTWISE[op](m, n)
    sparse_operands = [fmt != "dense" for fmt in (left, right)]
    check(result, expected, sparse=any(sparse_operands) if op == "*" else all(sparse_operands))


@pytest.mark.parametrize("left, right", pairs())
def test_matmul_against_scipy(left, right):
    m, n = matrix("random", (7, 5), seed=3), matrix("random", (5, 6), seed=4)
    check(tensor(m, left) @ tensor(n, right), m @ n, sparse="dense" not in (left, right))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", ["empty", "single", "zeros", "random"])
def test_every_operator_on_edge_cases(fmt, case):
    m = matrix(case, seed=5)
    a, x, sparse = tensor(m, fmt), np.arange(1.0, 6.0), fmt != "dense"
    check(a * 2, 2 * m, sparse)
    check(2.5 * a, 2.5 * m, sparse)
    check(a / 4, m / 4, sparse)
    check(-a, -m, sparse)
    check(a * x, m.multiply(x), sparse)
    check(a @ x, m @ x, sparse=False)
    check(np.arange(7.0) @ a, np.arange(7.0) @ m, sparse=False)
    check(a + a, m + m, sparse)
    check(a.T, m.T, sparse)
    assert a.sum() == pytest.approx(m.sum()) and isinstance(a.sum(), float)


@pytest.mark.parametrize("shape", [(1, 1), (1, 5), (6, 1), (0, 4), (3, 0)])
def test_size_one_and_empty_dimensions(shape):
    m = matrix("random", shape, seed=6) if 0 not in shape else sp.csr_array(shape)
    a = tensor(m, "csr")
    check(a + a, m + m, sparse=True)
    check(a * a, m.multiply(m), sparse=True)
    check(a @ np.ones(shape[1]), m @ np.ones(shape[1]), sparse=False)
    check(a.T @ a, m.T @ m, sparse=True)
    np.testing.assert_allclose(dense(a.sum(axis=0)), m.sum(axis=0))


def test_vector_products():
    a, b = np.arange(1.0, 6.0), np.array([0, 2.0, 0, -1, 3])
    sa, sb = asp.Tensor.from_numpy(a, "s"), asp.Tensor.from_numpy(b, "s")
    assert sa @ sb == pytest.approx(a @ b) and isinstance(sa @ sb, float)
    assert sa @ b == pytest.approx(a @ b)
    check(sa * sb, a * b, sparse=True)
    check(sa + sb, a + b, sparse=True)
    m = matrix("random", (5, 5), seed=7)
    check(tensor(m, "csr") @ sb, m @ b, sparse=False)  # CSR's rows are a dense level: a dense vector
    check(tensor(m, "dcsr") @ sb, m @ b, sparse=True)  # DCSR's rows bound the result: a sparse vector (SpMSpV)


# ----- scalars, broadcasting, dtypes --------------------------------------------------------------------------

def test_broadcasting_as_numpy():
    m = matrix("random", seed=8)
    a, d = tensor(m, "csr"), m.toarray()
    row, column = np.arange(1.0, 6.0), np.arange(1.0, 8.0).reshape(7, 1)
    check(a * row, d * row, sparse=True)
    check(row * a, d * row, sparse=True)
    check(a * column, d * column, sparse=True)
    check(a * row.reshape(1, 5), d * row, sparse=True)
    check(a + row, d + row, sparse=False)
    check(a - column, d - column, sparse=False)
    check(a + d, d + d, sparse=False)
    check(d - a, d - d, sparse=False)
    check(a + 1, d + 1, sparse=False)
    check(1 - a, 1 - d, sparse=False)
    check(a * [1, 2, 3, 4, 5], d * row, sparse=True)


@pytest.mark.parametrize("bad", [np.ones(4), np.ones((7, 4)), np.ones((2, 7, 5))])
def test_shapes_that_do_not_broadcast_raise(bad):
    a = tensor(matrix("random", seed=9), "csr")
    with pytest.raises(asp.ShapeError):
        a + bad if bad.ndim < 3 else a @ bad


def test_sparse_operand_does_not_broadcast_its_extent_one_modes():
    row = tensor(matrix("random", (1, 5), seed=10), "csr")
    with pytest.raises(asp.ShapeError, match="do not broadcast"):
        row + tensor(matrix("random", seed=11), "csr")


def test_matmul_shapes_are_checked():
    a = tensor(matrix("random", seed=12), "csr")
    with pytest.raises(asp.ShapeError, match="matrix product"):
        a @ np.ones(7)
    with pytest.raises(asp.ShapeError, match="order 1 or 2"):
        a @ 2
    with pytest.raises(asp.ShapeError, match="order 1 or 2"):
        a @ np.ones((5, 2, 2))


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.complex128])
def test_python_numbers_are_weakly_typed_as_in_numpy(dtype):
    d = (matrix("random", seed=13).toarray() * 2).astype(dtype)
    a = asp.Tensor.from_numpy(d, "csr")
    for result, expected in ((a * 2, d * 2), (3 + a, 3 + d), (a * 0.5, d * 0.5), (a / 2, d / 2)):
        assert result.dtype == expected.dtype
        np.testing.assert_allclose(dense(result), expected, rtol=1e-6)
    assert (a * np.float64(2)).dtype == (d * np.float64(2)).dtype


def test_division():
    m = matrix("random", seed=14)
    a = tensor(m, "csr")
    check(a / 3, m / 3, sparse=True)
    assert (tensor(m.astype(np.int64), "csr") / 2).dtype == np.float64
    d = np.arange(1.0, 6.0)  # a dense divisor broadcast along the rows, as numpy's
    check(a / d, m.multiply(1 / d), sparse=True)
    with pytest.raises(asp.ScheduleError, match="divisor"):  # x / 0 wherever a sparse divisor stores nothing
        a / a


# ----- transpose, sum, astype ------------------------------------------------------------------------------

def test_transpose_is_a_view_with_permuted_modes():
    a = tensor(matrix("random", seed=15), "csr")
    t = a.T
    assert t.format == asp.Format("csc") and t.shape == (5, 7)
    assert t.levels[1]["crd"] is a.levels[1]["crd"] and t.vals is a.vals
    np.testing.assert_array_equal(t.to_numpy(), a.to_numpy().T)
    assert t.T.format == asp.Format("csr")


@pytest.mark.parametrize("fmt", ["sss", "coo", "dsd", "s1s2s0"])
@pytest.mark.parametrize("axes", [None, (1, 2, 0), (0, 2, 1), (-1, 0, 1)])
def test_transpose_of_tensors_as_numpy(fmt, axes):
    d = np.random.default_rng(16).integers(0, 3, (3, 4, 5)).astype(float)
    t = asp.Tensor.from_numpy(d, fmt)
    got = t.transpose(axes) if axes else t.transpose()
    np.testing.assert_array_equal(got.to_numpy(), np.transpose(d, axes))
    np.testing.assert_array_equal(np.transpose(t, axes).to_numpy(), np.transpose(d, axes))
    with pytest.raises(asp.ShapeError):
        t.transpose(0, 1)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "dense"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1)])
def test_matrix_sum_against_scipy(fmt, axis):
    m = matrix("random", seed=17)
    got, expected = tensor(m, fmt).sum(axis=axis), m.sum(axis=axis)
    np.testing.assert_allclose(dense(got), expected)
    np.testing.assert_allclose(dense(np.sum(tensor(m, fmt), axis=axis)), expected)


def test_sum_over_trailing_levels_stays_sparse():
    rng = np.random.default_rng(18)
    d = rng.integers(1, 3, (3, 4, 5)).astype(float) * (rng.random((3, 4, 5)) < 0.2)
    t = asp.Tensor.from_numpy(d, "csf")
    kept = t.sum(axis=2)
    assert isinstance(kept, asp.Tensor) and kept.format == asp.Format("ss")
    np.testing.assert_allclose(kept.to_numpy(), d.sum(axis=2))
    np.testing.assert_allclose(dense(t.sum(axis=(0, 2))), d.sum(axis=(0, 2)))
    with pytest.raises(asp.ShapeError):
        t.sum(axis=3)
    with pytest.raises(asp.ShapeError):
        t.sum(axis=(1, 1))


def test_astype_casts_values_and_shares_indices():
    a = tensor(matrix("random", seed=20), "csr")
    for dtype in (np.float32, np.int64, np.complex128):
        cast = a.astype(dtype)
        assert cast.dtype == dtype and cast.levels[1]["crd"] is a.levels[1]["crd"]
        np.testing.assert_array_equal(cast.to_numpy(), a.to_numpy().astype(dtype))
    assert a.astype(np.float64) is a
    with pytest.raises(asp.FormatError, match="float64"):
        a.astype(np.int8)


# ----- numpy's protocols -------------------------------------------------------------------------------------

def test_numpy_functions_and_ufuncs_route_to_kernels():
    m, n = matrix("random", seed=21), matrix("random", seed=22)
    a, b, x = tensor(m, "csr"), tensor(n, "csr"), np.arange(5.0)
    check(np.dot(a, x), m @ x, sparse=False)
    check(np.dot(a, b.T), m @ n.T, sparse=True)
    check(np.dot(a, 3), 3 * m, sparse=True)
    check(np.matmul(a, x), m @ x, sparse=False)
    check(np.add(a, b), m + n, sparse=True)
    check(np.subtract(a, b), m - n, sparse=True)
    check(np.multiply(a, b), m.multiply(n), sparse=True)
    check(np.multiply(x, a), m.multiply(x), sparse=True)
    check(np.negative(a), -m, sparse=True)
    check(np.transpose(a), m.T, sparse=True)
    check(np.divide(a, 2), m / 2, sparse=True)
    assert np.sum(a) == pytest.approx(m.sum())
    check(x @ a.T, x @ m.T, sparse=False)  # ndarray on the left: numpy asks the tensor


def test_sparse_tensors_are_never_densified_implicitly():
    a = tensor(matrix("random", seed=23), "csr")
    for densify in (np.asarray, np.array, np.sin, np.mean, lambda t: np.sum(t, keepdims=True)):
        with pytest.raises(asp.FormatError, match=r"to_numpy\(\)"):
            densify(a)


def test_dense_tensors_still_convert():
    d = matrix("random", seed=24).toarray()
    t = asp.Tensor.from_numpy(d)
    np.testing.assert_array_equal(np.asarray(t), d)
    np.testing.assert_allclose(np.exp(t), np.exp(d))
    assert np.mean(t) == pytest.approx(d.mean())


def test_equality_and_truth_are_refused_ordering_computes():
    a = tensor(matrix("random", seed=25), "csr")
    for compare in (operator.eq, operator.ne):
        with pytest.raises(asp.AutosparseError, match="np.equal"):
            compare(a, a)
    d = a.to_numpy()
    for compare in (operator.lt, operator.le, operator.gt, operator.ge):
        np.testing.assert_array_equal(np.asarray(dense(compare(a, 0.5)), bool), compare(d, 0.5))
    assert (a == None) is False and (a != "csr") is True  # noqa: E711 -- not array operands: identity
    assert len({a, a, a.T}) == 2
    with pytest.raises(asp.AutosparseError, match="truth value"):
        bool(a)
    assert bool(asp.Tensor.from_numpy(np.asarray(2.0))) and not asp.Tensor.from_numpy(np.asarray(0.0))


def test_other_operands_are_left_to_python():
    a = tensor(matrix("random", seed=26), "csr")
    with pytest.raises(TypeError):
        a + "1"
    with pytest.raises(TypeError):
        a @ None


# ----- scipy.sparse on either side --------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["csr_array", "csc_array", "coo_array", "csr_matrix"])
def test_scipy_operands_on_either_side(kind):
    m, n = matrix("random", seed=27), matrix("random", seed=28)
    s, a = getattr(sp, kind)(n), tensor(m, "csr")
    check(a + s, m + n, sparse=True)
    check(s + a, m + n, sparse=True)
    check(s - a, n - m, sparse=True)
    check(a * s, m.multiply(n), sparse=True)
    check(s * a, m.multiply(n), sparse=True)  # element-wise: the tensor's meaning, even for scipy matrices
    check(a @ s.T, m @ n.T, sparse=True)
    check(s @ a.T, n @ m.T, sparse=True)
    check(s.T @ a, n.T @ m, sparse=True)


# ----- the hook and the expressions ------------------------------------------------------------------------

def test_operators_are_one_expression_each():
    seen = []
    ops = ArrayOperations(lambda expression, operands: seen.append(expression) or (lambda **named: None))
    a, b = tensor(matrix("random", seed=29), "csr"), tensor(matrix("random", seed=30), "csc")
    x = np.ones(5)
    for name, operands, axis in (("matmul", (a, b.T), None), ("matmul", (a, x), None), ("matmul", (x, b.T), None),
                                 ("add", (a, a), None), ("multiply", (a, x), None), ("multiply", (2, a), None),
                                 ("negative", (b,), None), ("sum", (a,), (1,)), ("sum", (a,), None),
                                 ("add", (a, x), None), ("divide", (a, x), None)):
        ops(name, operands, axis)
    assert seen == ["C(i,j) = A(i,k) * B(k,j)", "C(i) = A(i,j) * B(j)", "C(j) = A(i) * B(i,j)",
                    "C(i,j) = A(i,j) + B(i,j)", "C(i,j) = A(i,j) * B(j)", "C(i,j) = A() * B(i,j)", "C(i,j) = -A(i,j)",
                    "C(i) = A(i,j)", "C() = A(i,j)", "C(i,j) = A(i,j) + B(j)", "C(i,j) = A(i,j) / B(j)"]


def test_operators_infer_their_result_formats_as_evaluate_does():
    a, b = tensor(matrix("random", seed=29), "csr"), tensor(matrix("random", seed=30), "csc")
    x = np.ones(5)
    assert (a @ b.T).format == asp.Format("ds~") and (a.T @ b).format == asp.Format("d1s0~")  # as scipy's A @ B
    assert (-b).format == asp.Format("csc") and (a * x).format == asp.Format("csr")
    assert isinstance(a @ x, np.ndarray) and isinstance(a + x, np.ndarray) and isinstance(a.sum(1), np.ndarray)
    assert isinstance(a.sum(), float)


def test_operator_spellings_equal_evaluate():
    m, n = matrix("random", seed=31), matrix("random", (5, 6), seed=32)
    a, b, x = tensor(m, "csr"), tensor(n, "csr"), np.arange(5.0)
    np.testing.assert_array_equal(dense(a @ x), dense(asp.evaluate("y(i) = A(i,j) * x(j)", A=a, x=x)))
    np.testing.assert_array_equal(dense(a @ b), dense(asp.evaluate("C(i,j) = A(i,k) * B(k,j)", A=a, B=b, format="csr")))
    np.testing.assert_array_equal(dense(a + a), dense(asp.evaluate("C(i,j) = A(i,j) + B(i,j)", A=a, B=a, format="csr")))


def test_without_the_hook_operators_say_so(monkeypatch):
    monkeypatch.setattr(operations, "_installed", [])
    with pytest.raises(asp.AutosparseError, match="import autosparse"):
        tensor(matrix("random", seed=33), "csr") @ np.ones(5)


def test_every_operation_has_an_expression():
    from autosparse.api.arrays import _BUILDERS

    assert operations.OPERATIONS <= set(_BUILDERS)  # the builders serve autosparse.array's functions too


# ----- shipped matrices --------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", ["bcsstk13.mtx.gz", "mbeacxc.mtx.gz"])
def test_operators_on_shipped_matrices(name):
    if not (DATA / name).exists():
        pytest.skip(f"{DATA / name} is not here")
    a = asp.read(DATA / name)
    m = a.to_scipy()
    x = np.random.default_rng(34).random(m.shape[1])
    np.testing.assert_allclose(dense(a @ x), m @ x, rtol=1e-10)
    np.testing.assert_allclose(dense(np.dot(a, x)), m @ x, rtol=1e-10)
    check(a @ a, m @ m, sparse=True)
    check(a * a, m.multiply(m), sparse=True)
    check(a - 2 * a, m - 2 * m, sparse=True)
    assert np.sum(a) == pytest.approx(m.sum(), rel=1e-10)
    cancelling = 1e-12 * abs(m).sum(axis=1).max()  # a stiffness matrix's rows sum to nearly zero
    np.testing.assert_allclose(dense(a.sum(axis=1)), m.sum(axis=1), rtol=1e-10, atol=cancelling)
    check(m @ a, m @ m, sparse=True)
