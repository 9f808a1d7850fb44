"""A repeated index in one access reads a diagonal (numpy.einsum's "ii->i", "ii", "iij->ij"), against numpy on
dense copies across dense, CSR, CSC, DCSR and COO operands and float64, float32, int64 values."""

from __future__ import annotations

import numpy as np
import pytest

import autosparse as asp
from autosparse.notation import Diagonal, parse, split_diagonals
from conftest import densified

FORMATS = ("dense", "csr", "csc", "dcsr", "coo")
DTYPES = (np.float64, np.float32, np.int64)



def array(shape, dtype=np.float64, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.integers(-9, 10, shape).astype(dtype)
    return np.where(rng.random(shape) < 0.5, values, 0).astype(dtype)


def test_the_rewrite_pairs_each_repetition_with_an_identity():
    rewritten, diagonals = split_diagonals(parse("y(i) = A(i,i,i) + B(i,j) * x(j)"))
    assert rewritten == parse("y(i) = sum(i_1, sum(i_2, A(i,i_1,i_2) * I1(i,i_1) * I2(i,i_2))) + B(i,j) * x(j)")
    assert diagonals == (Diagonal("I1", "A", (0, 1)), Diagonal("I2", "A", (0, 2)))
    assert split_diagonals(parse("y(i) = A(i,j) * x(j)"))[1] == ()


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_diagonal_trace_and_scaled_diagonal(fmt, dtype):
    A, x = array((6, 6), dtype), np.arange(1, 7).astype(dtype)
    A[2, 2] = 0  # an absent diagonal entry
    T = asp.Tensor.from_numpy(A, format=fmt)
    diagonal = asp.evaluate("d(i) = A(i,i)", A=T)
    np.testing.assert_array_equal(densified(diagonal), np.diag(A))
    assert densified(diagonal).dtype == A.dtype
    assert asp.evaluate("s() = A(i,i)", A=T) == np.trace(A)
    np.testing.assert_array_equal(densified(asp.evaluate("y(i) = A(i,i) * x(i)", A=T, x=x)), np.diag(A) * x)
    np.testing.assert_array_equal(densified(asp.einsum("ii->i", T)), np.einsum("ii->i", A))
    assert asp.einsum("ii", T) == np.einsum("ii", A)


@pytest.mark.parametrize("fmt", ("ddd", "sss", "dss", "ucq", "s2s1s0"))
def test_order_three(fmt):
    B = array((4, 4, 3))
    T = asp.Tensor.from_numpy(B, format=fmt)
    np.testing.assert_array_equal(densified(asp.einsum("iij->ij", T)), np.einsum("iij->ij", B))
    np.testing.assert_array_equal(densified(asp.einsum("iji->ij", asp.Tensor.from_numpy(array((4, 3, 4)), format=fmt))),
                                  np.einsum("iji->ij", array((4, 3, 4))))
    C = array((3, 3, 3), seed=1)
    np.testing.assert_array_equal(densified(asp.einsum("iii->i", asp.Tensor.from_numpy(C, format=fmt))),
                                  np.einsum("iii->i", C))


def test_diagonal_in_a_sum_and_a_sparse_result():
    A, B = array((5, 5)), array((5, 5), seed=1)
    x = np.arange(1.0, 6.0)
    csr = asp.Tensor.from_numpy(A, format="csr")
    got = asp.evaluate("y(i) = A(i,i) + B(i,j) * x(j)", A=csr, B=asp.Tensor.from_numpy(B, format="csr"), x=x)
    np.testing.assert_array_equal(densified(got), np.diag(A) + B @ x)
    sparse = asp.evaluate("d(i) = A(i,i)", A=csr, format="s")
    np.testing.assert_array_equal(densified(sparse), np.diag(A))
    assert sparse.nnz == np.count_nonzero(np.diag(A))
    np.testing.assert_array_equal(densified(asp.evaluate("C(i,j) = A(i,i) * B(i,j)", A=csr, B=B)), np.diag(A)[:, None] * B)


@pytest.mark.parametrize("A", [np.zeros((4, 4)), np.zeros((0, 0)), np.full((1, 1), 7.0), np.diag([0.0, 3.0, 0.0])],
                         ids=["all-zero", "empty", "size-1", "single-entry"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_edge_cases(A, fmt):
    T = asp.Tensor.from_numpy(A, format=fmt)
    np.testing.assert_array_equal(densified(asp.evaluate("d(i) = A(i,i)", A=T)), np.diag(A))
    assert asp.evaluate("s() = A(i,i)", A=T) == np.trace(A)


@pytest.mark.parametrize("fmt", ("csr", "coo"))
def test_explicit_zeros_on_the_diagonal_are_read(fmt):
    T = asp.Tensor.from_coo(np.array([[0, 1, 1], [0, 1, 0]]), np.array([0.0, 2.0, 5.0]), (2, 2), format=fmt)
    np.testing.assert_array_equal(densified(asp.evaluate("d(i) = A(i,i)", A=T)), [0.0, 2.0])


def test_a_compiled_kernel_serves_repeated_calls_and_sizes():
    kernel = asp.compile("d(i) = A(i,i)", formats={"A": "csr"})
    for n in (3, 3, 5, 3):
        A = array((n, n), seed=n)
        np.testing.assert_array_equal(densified(kernel(A=asp.Tensor.from_numpy(A, format="csr"))), np.diag(A))


def test_mistakes_are_clear():
    with pytest.raises(asp.ShapeError, match="modes 0 and 1 of A to have one extent"):
        asp.evaluate("d(i) = A(i,i)", A=np.ones((2, 3)))
    with pytest.raises(asp.ParseError, match="distinct indices in the output"):
        asp.einsum("i->ii", np.ones(2))
    with pytest.raises(asp.ScheduleError, match="reads a diagonal"):
        asp.evaluate("d(i) = A(i,i)", A=np.eye(3), schedule="auto")
    with pytest.raises(ValueError):  # numpy refuses the same
        np.einsum("ii->i", np.ones((2, 3)))
