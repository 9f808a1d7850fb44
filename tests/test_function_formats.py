"""autosparse.array's functions beyond + and * on every format, on one thread and on the default schedule's
threads, against numpy on dense copies: the default schedule never picks a parallel loop its own lowering
refuses (a loop over a COO or DCSR operand's rows that must also visit the rows it does not store), and
logical results (comparisons, logical_*, any, all) hold truth values 0/1 in every format, eager and lazy;
a product over a fill of 0 is 0 wherever its slice has an absent entry."""

from __future__ import annotations

import numpy as np
import pytest

import autosparse as asp
from autosparse.pipeline import kernel as pipeline_kernel

xp = asp.array

FORMATS = ["dense", "csr", "csc", "dcsr", "coo"]

#: Rows of every kind: empty (the last), one entry, an explicit zero, negative values, several entries.
DENSE = np.array([[0.0, 1.5, 0.0, -2.0, 0.0],
                  [0.2, 0.0, 0.0, 0.0, 0.0],
                  [0.0, 0.0, 3.0, 0.5, -0.7],
                  [0.0, 0.0, 0.0, 0.0, 0.0]])
OTHER = np.array([[0.5, 0.0, 0.0, -2.0, 1.0],
                  [0.0, 0.0, 0.0, 0.0, 0.0],
                  [0.0, 2.0, 3.0, 0.0, -1.0],
                  [0.0, 0.0, 0.0, 4.0, 0.0]])

BINARY = ["minimum", "maximum", "less", "greater_equal", "not_equal", "logical_and", "logical_or"]


@pytest.fixture(params=["one thread", "threads"])
def threads(request, monkeypatch):
    """The default threshold (these small kernels run on one thread), or none: the default schedule's
    parallel loops, as real inputs get them."""
    if request.param == "threads":
        monkeypatch.setattr(pipeline_kernel, "PARALLEL_MIN_ENTRIES", 0)
    return request.param


def dense(value) -> np.ndarray:
    return value.to_numpy() if isinstance(value, asp.Tensor) else np.asarray(value)


def check(result, expected: np.ndarray) -> None:
    """`result` equals numpy's `expected`; a sparse logical result holds exactly 0 and 1 (a Tensor stores
    no bool), a dense one is numpy's bool."""
    values = dense(result)
    if expected.dtype == bool and isinstance(result, asp.Tensor):
        assert set(np.unique(values)) <= {0.0, 1.0}, values
        values = values.astype(bool)
    assert values.dtype == expected.dtype
    np.testing.assert_array_equal(values, expected)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", BINARY)
def test_binary_functions_with_a_number_and_a_tensor(name, fmt, threads):
    a, b = asp.Tensor.from_numpy(DENSE, fmt), asp.Tensor.from_numpy(OTHER, fmt)
    check(getattr(xp, name)(a, 0.5), getattr(np, name)(DENSE, 0.5))
    check(getattr(xp, name)(a, b), getattr(np, name)(DENSE, OTHER))


@pytest.mark.parametrize("fmt", FORMATS)
def test_logical_not_and_where(fmt, threads):
    a, b = asp.Tensor.from_numpy(DENSE, fmt), asp.Tensor.from_numpy(OTHER, fmt)
    check(xp.logical_not(a), np.logical_not(DENSE))
    check(xp.where(a, b, 2.0), np.where(DENSE, OTHER, 2.0))
    check(xp.where(a, 2.0, b), np.where(DENSE, 2.0, OTHER))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("word", ["any", "all"])
def test_any_and_all_over_each_axis_eager_and_lazy(word, fmt, threads):
    a = asp.Tensor.from_numpy(DENSE, fmt)
    for axis in (0, 1, None, ()):
        expected = getattr(np, word)(DENSE, axis=axis)
        check(getattr(xp, word)(a, axis=axis), expected)
        (lazy,) = asp.compute(getattr(xp, word)(asp.lazy(a), axis=axis))
        check(lazy, expected)


@pytest.mark.parametrize("fmt", ["csr", "coo"])
@pytest.mark.parametrize("word", ["any", "all"])
def test_any_and_all_of_size_one_and_all_fill_operands(word, fmt):
    for array in (np.array([[0.0, 2.5, 0.0]]), np.array([[0.5], [0.0], [-1.0]]), np.zeros((2, 3))):
        for axis in (0, 1, ()):
            check(getattr(xp, word)(asp.Tensor.from_numpy(array, fmt), axis=axis), getattr(np, word)(array, axis=axis))


@pytest.mark.parametrize("fmt", FORMATS)
def test_prod_over_fill_0_is_0_where_a_slice_has_an_absent_entry(fmt, threads):
    full = np.array([[0.0, 1.5, 0.0], [0.2, 2.0, 3.0], [0.0, 0.0, 0.0], [4.0, 0.5, -1.0]])  # row 1 and 3 full
    a = asp.Tensor.from_numpy(full, fmt)
    for axis in (0, 1, None):
        np.testing.assert_array_equal(dense(xp.prod(a, axis=axis)), np.prod(full, axis=axis))
    (lazy,) = asp.compute(xp.prod(asp.lazy(a), axis=1) * 2)
    np.testing.assert_array_equal(dense(lazy), np.prod(full, axis=1) * 2)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0)])
def test_prod_over_an_empty_dimension_is_the_identity(shape):
    a = asp.Tensor.from_numpy(np.zeros(shape), "csr")
    for axis in (0, 1, None):
        np.testing.assert_array_equal(dense(xp.prod(a, axis=axis)), np.prod(np.zeros(shape), axis=axis))
    sparse_result = asp.Kernel("C(i) = prod(j, A(i,j))", {"A": "csr", "C": "s"})(A=a)
    np.testing.assert_array_equal(dense(sparse_result), np.prod(np.zeros(shape), axis=1))
