"""Division by a dense operand, a scalar or a literal, against numpy's true division on dense copies.

The quotient takes the dividend's pattern (0 / b is 0); a divisor with absent entries is refused. numpy's
`/` is true division, so integer operands give float64; a stored entry divided by zero is inf or nan."""

from __future__ import annotations

import numpy as np
import pytest

import autosparse as asp
from autosparse.notation import Div, parse
from conftest import densified

FORMATS = ("dense", "csr", "csc", "dcsr", "coo")



def matrix(dtype, shape=(4, 5), seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.integers(-9, 10, shape).astype(dtype)
    return np.where(rng.random(shape) < 0.4, values, 0).astype(dtype)


def test_parses_as_division_and_prints_back():
    assignment = parse("C(i,j) = A(i,j) * b(i) / d(j) / 2 - -e(i) / (f(j) * g(j))")
    assert parse(str(assignment)) == assignment
    assert isinstance(parse("y(i) = a(i) / b(i)").rhs, Div)
    assert parse("y(i) = a(i) * b(i) / c(i)").rhs == Div(parse("y(i) = a(i) * b(i)").rhs, parse("y(i) = c(i)").rhs)


def test_a_reduction_in_the_divisor_stays_inside_it():
    assert str(parse("y(i) = a(i) / B(i,j)")) == "y(i) = a(i) / sum(j, B(i,j))"
    assert str(parse("y(i) = A(i,j) / d(i)")) == "y(i) = A(i,j) / d(i)"  # Σ_j A / d = (Σ_j A) / d


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("expression, divisors, reference", [
    ("C(i,j) = A(i,j) / d(j)", {"d": np.arange(1.0, 6.0)}, lambda A: A / np.arange(1.0, 6.0)),
    ("C(i,j) = A(i,j) / d(i)", {"d": np.array([2.0, -1.0, 4.0, 0.5])},
     lambda A: A / np.array([2.0, -1.0, 4.0, 0.5])[:, None]),
    ("C(i,j) = A(i,j) / s", {"s": 4.0}, lambda A: A / 4.0),
    ("C(i,j) = A(i,j) / 2", {}, lambda A: A / 2),
], ids=["by-column", "by-row", "by-scalar", "by-literal"])
def test_matrix_divided(expression, divisors, reference, fmt):
    A = matrix(np.float64)
    operand = asp.Tensor.from_numpy(A, format=fmt)
    got = asp.evaluate(expression, A=operand, format=fmt, **divisors)
    np.testing.assert_allclose(densified(got), reference(A), rtol=1e-15)
    if fmt != "dense":
        assert got.nnz == operand.nnz  # the dividend's pattern


@pytest.mark.parametrize("dtype, expected_dtype", [(np.float64, np.float64), (np.float32, np.float32),
                                                   (np.int64, np.float64), (np.complex128, np.complex128)])
@pytest.mark.parametrize("fmt", ("dense", "csr"))
def test_true_division_dtype(dtype, expected_dtype, fmt):
    A, d = matrix(dtype), np.array([3, -2, 7, 4, 5], dtype=dtype)
    got = asp.evaluate("C(i,j) = A(i,j) / d(j)", A=asp.Tensor.from_numpy(A, format=fmt), d=d, format=fmt)
    assert got.dtype == expected_dtype == (A / d).dtype
    np.testing.assert_allclose(densified(got), A / d, rtol=1e-6 if dtype == np.float32 else 1e-15)


def test_integer_literal_divides_truly():
    a = np.array([1, 2, 3, -7], dtype=np.int64)
    got = asp.evaluate("y(i) = a(i) / 2", a=a)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(densified(got), a / 2)


def test_reduced_quotients_match_numpy():
    A, d, x = matrix(np.float64, (6, 3), seed=3), np.arange(1.0, 4.0), np.arange(2.0, 8.0)
    csr = asp.Tensor.from_numpy(A, format="csr")
    np.testing.assert_allclose(densified(asp.evaluate("y(i) = A(i,j) / d(j)", A=csr, d=d)), (A / d).sum(1))
    np.testing.assert_allclose(densified(asp.evaluate("y(j) = A(i,j) * x(i) / d(j)", A=csr, x=x, d=d)), x @ A / d)
    np.testing.assert_allclose(asp.evaluate("s() = A(i,j) / 4", A=csr), A.sum() / 4)
    got = asp.evaluate("y(i) = x(i) / sum(j, D(i,j))", x=x, D=np.abs(A) + 1 / 3)
    np.testing.assert_allclose(densified(got), x / (np.abs(A) + 1 / 3).sum(1))


def test_a_sum_divided_keeps_the_union():
    A, B = matrix(np.float64, seed=1), matrix(np.float64, seed=2)
    d = np.arange(1.0, 6.0)
    got = asp.evaluate("C(i,j) = (A(i,j) + B(i,j)) / d(j)", A=asp.Tensor.from_numpy(A, format="csr"),
                       B=asp.Tensor.from_numpy(B, format="csr"), d=d, format="csr")
    np.testing.assert_allclose(densified(got), (A + B) / d)


@pytest.mark.parametrize("fmt", ("csr", "coo"))
def test_stored_entries_divided_by_zero_are_inf_or_nan(fmt):
    A = np.array([[1.0, 0.0, -2.0], [0.0, 0.0, 0.0], [0.0, 3.0, 0.0]])
    A_t = asp.Tensor.from_coo(np.array([[0, 0, 2, 1], [0, 2, 1, 1]]), np.array([1.0, -2.0, 3.0, 0.0]), (3, 3),
                              format=fmt)  # (1,1) an explicit zero: 0 / 0 is nan
    d = np.array([0.0, 0.0, 0.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = A / d
    got = densified(asp.evaluate("C(i,j) = A(i,j) / d(j)", A=A_t, d=d, format=fmt))
    stored = np.zeros((3, 3), bool)
    stored[[0, 0, 2, 1], [0, 2, 1, 1]] = True
    np.testing.assert_array_equal(got[stored], expected[stored])  # inf, -inf, inf, nan
    assert not got[~stored].any()  # absent entries stay absent: 0 / b is 0
    literal = densified(asp.evaluate("C(i,j) = A(i,j) / 0", A=A_t, format=fmt))
    np.testing.assert_array_equal(literal[stored], expected[stored])


@pytest.mark.parametrize("A", [np.zeros((3, 4)), np.zeros((0, 4)), np.zeros((1, 1)) + 5.0,
                               np.eye(1, 4) * 3.0], ids=["all-zero", "empty", "size-1", "single-entry"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_edge_shapes(A, fmt):
    d = np.arange(1.0, A.shape[1] + 1)
    got = asp.evaluate("C(i,j) = A(i,j) / d(j)", A=asp.Tensor.from_numpy(A, format=fmt), d=d, format=fmt)
    np.testing.assert_array_equal(densified(got), A / d)


@pytest.mark.parametrize("fmt", ("csr", "csc", "dcsr", "coo"))
def test_a_sparse_divisor_is_refused(fmt):
    A = asp.Tensor.from_numpy(matrix(np.float64), format=fmt)
    B = asp.Tensor.from_numpy(matrix(np.float64, seed=4), format=fmt)
    with pytest.raises(asp.ScheduleError, match="divisor stored at every coordinate"):
        asp.evaluate("C(i,j) = A(i,j) / B(i,j)", A=A, B=B, format=fmt)
    with pytest.raises(asp.ScheduleError, match="divisor stored at every coordinate"):
        asp.evaluate("y(i) = A(i,j) / (d(i) + B(i,j))", A=A, B=B, d=np.ones(4))


def test_the_autoschedulers_refuse_division_clearly():
    with pytest.raises(asp.ScheduleError, match="schedule=None"):
        asp.evaluate("y(i) = a(i) / d(i)", a=np.ones(3), d=np.ones(3), schedule="auto")
