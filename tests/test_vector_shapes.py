"""(n,1) and (1,n) numpy arrays where the expression reads a vector: numpy users' column and row vectors
are that vector (squeezed, no copy); any other array of the wrong order is a ShapeError naming the
operand. Checked against numpy on the squeezed vector."""

from __future__ import annotations

import numpy as np
import pytest

import autosparse as asp
from conftest import densified



def matrix(shape=(4, 3)) -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.where(rng.random(shape) < 0.5, rng.standard_normal(shape), 0)


@pytest.mark.parametrize("shape", [(3, 1), (1, 3)], ids=["column", "row"])
@pytest.mark.parametrize("fmt", ("dense", "csr", "csc", "coo"))
def test_a_column_or_row_vector_is_the_vector(shape, fmt):
    A = matrix()
    x = np.arange(1.0, 4.0).reshape(shape)
    got = asp.evaluate("y(i) = A(i,j) * x(j)", A=asp.Tensor.from_numpy(A, format=fmt), x=x)
    np.testing.assert_allclose(densified(got), A @ x.ravel())


def test_repeated_calls_of_a_compiled_kernel():
    A, x = matrix(), np.arange(1.0, 4.0).reshape(3, 1)
    kernel = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"})
    operand = asp.Tensor.from_numpy(A, format="csr")
    for _ in range(3):  # the second call takes the bound fast path
        np.testing.assert_allclose(densified(kernel(A=operand, x=x)), A @ x.ravel())


@pytest.mark.parametrize("x, expected", [(np.ones((1, 1)), 1.0), (np.arange(4.0).reshape(1, 4), 6.0),
                                         (np.zeros((0, 1)), 0.0)], ids=["size-1", "row", "empty"])
def test_reductions_of_column_and_row_vectors(x, expected):
    assert asp.evaluate("s() = x(i)", x=x) == expected


@pytest.mark.parametrize("x, message", [
    (np.ones((3, 2)), r"vector of shape \(n,\) for x as the expression reads it, but found shape \(3, 2\)$"),
    (np.ones((3, 1, 1)), r"found shape \(3, 1, 1\): pass x.ravel\(\)"),
])
def test_other_shapes_are_refused_naming_the_operand(x, message):
    with pytest.raises(asp.ShapeError, match=message):
        asp.evaluate("y(i) = A(i,j) * x(j)", A=matrix(), x=x)


def test_a_matrix_operand_is_not_squeezed():
    with pytest.raises(asp.ShapeError, match="array of 2 modes for A"):
        asp.evaluate("y(i) = A(i,j) * x(j)", A=np.ones(3), x=np.ones(3))
