"""Repeat calls take a short path: a specialisation bound to the operands' formats, shapes and dtypes,
which only gathers buffer addresses. These tests check that what the short path skips cannot go stale:
new operand objects and values, arrays changed in place, strided arrays, a changed memory limit."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from conftest import densified


def _csr(seed: int, shape=(7, 5)) -> tuple[asp.Tensor, np.ndarray]:
    m = sp.random(*shape, density=0.4, format="csr", random_state=seed)
    return asp.Tensor.from_scipy(m), m.toarray()


def test_repeat_calls_read_each_call_operands():
    kernel = asp.compile("y(i) = A(i,j) * x(j)", {"A": "csr"})
    for seed in range(4):
        A, a = _csr(seed)
        x = np.arange(5.0) + seed
        np.testing.assert_allclose(densified(kernel(A=A, x=x)), a @ x)
    assert len(kernel._bound) == 1  # one signature: the short path served the repeats


def test_an_array_changed_in_place_is_read_again():
    kernel = asp.compile("y(i) = A(i,j) * x(j)", {"A": "csr"})
    A, a = _csr(1)
    x = np.ones(5)
    first = densified(kernel(A=A, x=x))
    x[:] = 3.0
    np.testing.assert_allclose(densified(kernel(A=A, x=x)), a @ x)
    np.testing.assert_allclose(first, a @ np.ones(5))


def test_new_shapes_dtypes_and_strided_arrays_take_the_general_path():
    kernel = asp.compile("y(i) = A(i,j) * x(j)", {"A": "csr"})
    A, a = _csr(2)
    kernel(A=A, x=np.ones(5))
    strided = np.arange(10.0)[::2]
    np.testing.assert_allclose(densified(kernel(A=A, x=strided)), a @ strided)
    B, b = _csr(3, shape=(4, 9))
    np.testing.assert_allclose(densified(kernel(A=B, x=np.ones(9))), b @ np.ones(9))
    y = kernel(A=A, x=np.ones(5, dtype=np.float32))
    assert y.dtype == np.float64
    np.testing.assert_allclose(densified(y), a @ np.ones(5))
    coo = A.to_format("coo")
    np.testing.assert_allclose(densified(kernel(A=coo, x=np.ones(5))), a @ np.ones(5))


def test_sparse_results_of_repeat_calls_are_independent():
    kernel = asp.compile("C(i,j) = A(i,j) + B(i,j)", {"A": "csr", "B": "csr", "C": "csr"})
    A, a = _csr(4)
    B, b = _csr(5)
    first = kernel(A=A, B=B)
    second = kernel(A=B, B=B)
    np.testing.assert_allclose(first.to_numpy(), a + b)
    np.testing.assert_allclose(second.to_numpy(), 2 * b)


def test_a_lowered_memory_limit_is_enforced_on_repeat_calls():
    kernel = asp.compile("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "dense", "C": "dense"})
    A, a = _csr(6)
    B = np.ones((5, 3))
    kernel(A=A, B=B)
    try:
        asp.set_memory_limit(64)
        with pytest.raises(asp.MemoryLimitError):
            kernel(A=A, B=B)
    finally:
        asp.set_memory_limit(None)
    np.testing.assert_allclose(densified(kernel(A=A, B=B)), a @ B)


def test_results_are_read_only():
    """A sparse result is a Tensor, immutable; a dense one is a numpy array the caller owns."""
    kernel = asp.compile("C(i,j) = A(i,j) * 2", {"A": "csr"})
    A, _ = _csr(7)
    C = kernel(A=A)
    with pytest.raises(ValueError):
        C.vals[0] = 1.0
