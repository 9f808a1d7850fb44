"""Tensor operators' warm path (api/arrays.py, issue 30 round 3): a repeated `A @ x`, `A @ B`, `A + B`,
`A * B` or `-A` finds its kernel by the operation, the operands' kinds and (where the operands hold the work
for threads) the thread count, and calls it at once. Any change the key covers (a Tensor's format, dtype,
index dtype or shape, an array's shape, the threads of a large call) builds afresh; what it leaves to the
kernel (an array's dtype and strides) the kernel checks on every call; errors are raised as on a cold call.
Results against numpy on dense copies."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from autosparse.errors import AutosparseError, ShapeError

OPERATORS = asp.api.operators


def _tensor(shape=(30, 20), density=0.2, seed=0, fmt="csr", dtype=np.float64, index_dtype=None) -> asp.Tensor:
    matrix = sp.random(*shape, density=density, format="csr", random_state=seed, dtype=dtype)
    return asp.Tensor.from_scipy(matrix, format=fmt, index_dtype=index_dtype)


def _dense(value):
    return value.to_numpy() if isinstance(value, asp.Tensor) else value


def _forget_warm_kernels() -> None:
    OPERATORS.warm.clear()
    OPERATORS.warm.last = None, None


def _warm_after(call, expected, times: int = 3) -> None:
    """`call` repeated: every call after the first takes the operators' warm path, and computes `expected`."""
    np.testing.assert_allclose(_dense(call()), expected)
    before = OPERATORS.warm_calls
    for _ in range(times):
        np.testing.assert_allclose(_dense(call()), expected)
    assert OPERATORS.warm_calls == before + times


@pytest.mark.parametrize("index_dtype", (np.int32, np.int64))
def test_every_operator_repeated_is_warm(index_dtype):
    A, B = _tensor(seed=1, index_dtype=index_dtype), _tensor(seed=2, index_dtype=index_dtype)
    C = _tensor((20, 30), seed=3, index_dtype=index_dtype)
    x, row = np.arange(20.0), np.linspace(0, 1, 20)
    a, b, c = A.to_numpy(), B.to_numpy(), C.to_numpy()
    _warm_after(lambda: A @ x, a @ x)
    _warm_after(lambda: x @ C, x @ c)
    _warm_after(lambda: A @ C, a @ c)
    _warm_after(lambda: A + B, a + b)
    _warm_after(lambda: A - B, a - b)
    _warm_after(lambda: A * B, a * b)
    _warm_after(lambda: A * row, a * row)
    _warm_after(lambda: -A, -a)


def test_new_operand_objects_of_the_same_kind_are_warm_and_read_afresh():
    A, x = _tensor(seed=4), np.arange(20.0)
    A @ x
    for seed in (5, 6):
        other, y = _tensor(seed=seed), np.random.default_rng(seed).random(20)
        before = OPERATORS.warm_calls
        np.testing.assert_allclose(other @ y, other.to_numpy() @ y)
        assert OPERATORS.warm_calls == before + 1


@pytest.mark.parametrize("change", ["format", "dtype", "index dtype", "shape"])
def test_a_changed_tensor_kind_takes_the_cold_path(change):
    _forget_warm_kernels()  # other tests' keys may be this one's
    A, x = _tensor(seed=7), np.arange(20.0)
    np.testing.assert_allclose(A @ x, A.to_numpy() @ x)
    A @ x
    other = {"format": lambda: _tensor(seed=7, fmt="csc"), "dtype": lambda: _tensor(seed=7, dtype=np.float32),
             "index dtype": lambda: _tensor(seed=7, index_dtype=np.int64),
             "shape": lambda: _tensor((31, 20), seed=7)}[change]()
    before = OPERATORS.warm_calls
    result = other @ x
    assert OPERATORS.warm_calls == before  # a key of its own: built, not found
    np.testing.assert_allclose(result, other.to_numpy() @ x, rtol=1e-6)
    assert result.dtype == np.result_type(other.dtype, x.dtype)


@pytest.mark.parametrize("x", [np.arange(20, dtype=np.float32), np.arange(20, dtype=np.int64),
                               np.arange(40.0)[::2], np.arange(20.0).astype(np.complex128)])
def test_an_array_of_another_dtype_or_strides_is_checked_by_the_kernel(x):
    A = _tensor(seed=8)
    A @ np.arange(20.0)
    A @ np.arange(20.0)
    result = A @ x  # the operator's key holds (same shape), the kernel's signature does not
    np.testing.assert_allclose(result, A.to_numpy() @ x, rtol=1e-6)
    assert result.dtype == np.result_type(A.dtype, x.dtype)


def test_bad_shapes_after_a_warm_call_raise_as_before():
    A, x = _tensor(seed=9), np.arange(20.0)
    A @ x
    A @ x
    with pytest.raises(ShapeError):
        A @ np.arange(21.0)
    with pytest.raises(ShapeError):
        A + _tensor((30, 21), seed=9)
    with pytest.raises(ShapeError):
        A @ np.ones((20, 2, 2))
    np.testing.assert_allclose(A @ x, A.to_numpy() @ x)


def test_a_bad_dtype_after_a_warm_call_raises_as_before():
    A, x = _tensor(seed=10), np.arange(20.0)
    A @ x
    A @ x
    with pytest.raises((AutosparseError, TypeError)):
        A @ np.array(["a"] * 20)
    np.testing.assert_allclose(A @ x, A.to_numpy() @ x)


def test_broadcast_operands_are_squeezed_on_every_call():
    """An array broadcast along an axis of extent 1 is squeezed by the builder: never kept warm."""
    A, column = _tensor(seed=11), np.arange(30.0).reshape(30, 1)
    for _ in range(3):
        before = OPERATORS.warm_calls
        np.testing.assert_allclose(_dense(A * column), A.to_numpy() * column)
        assert OPERATORS.warm_calls == before


def test_a_changed_thread_count_builds_for_large_operands(monkeypatch):
    """Operands with the work for threads key the process's thread count: a changed count finds its own
    kernel; small ones run on one thread whatever the kernel was built for, and stay warm."""
    _forget_warm_kernels()
    monkeypatch.delenv("AUTOSPARSE_NUM_THREADS", raising=False)
    large, x = _tensor((2000, 2000), density=0.02, seed=12), np.arange(2000.0)  # 80,000 entries
    assert large.nnz >= asp.pipeline.kernel.PARALLEL_MIN_ENTRIES
    small, y = _tensor(seed=13), np.arange(20.0)
    try:
        for count in (2, 1, 2):
            asp.set_num_threads(count)
            np.testing.assert_allclose(large @ x, large.to_numpy() @ x)
            before = OPERATORS.warm_calls
            np.testing.assert_allclose(large @ x, large.to_numpy() @ x)
            assert OPERATORS.warm_calls == before + 1
            kernel = OPERATORS.warm.last[1]
            assert kernel.num_threads == count and kernel.ran_parallel == (count > 1)
            small @ y
            before = OPERATORS.warm_calls
            np.testing.assert_allclose(small @ y, small.to_numpy() @ y)
            assert OPERATORS.warm_calls == before + 1
    finally:
        asp.set_num_threads(None)


def test_numbers_and_lists_repeat_warm_as_the_arrays_made_of_them_and_scipy_operands_take_the_general_path():
    """A number or a list is the array the builders make of it (a number weakly typed) before the warm key is
    looked up, so `2 * A` in a loop is a warm call; a scipy matrix is converted by each call's general path."""
    A = _tensor(seed=14)
    s = sp.random(20, 5, density=0.3, format="csr", random_state=1)
    warm = []
    for _ in range(2):
        before = OPERATORS.warm_calls
        np.testing.assert_allclose((2 * A).to_numpy(), 2 * A.to_numpy())
        np.testing.assert_allclose(A @ list(range(20)), A.to_numpy() @ np.arange(20))
        warm.append(OPERATORS.warm_calls - before)
        before = OPERATORS.warm_calls
        np.testing.assert_allclose(_dense(A @ s), A.to_numpy() @ s.toarray())
        assert OPERATORS.warm_calls == before
    assert warm[-1] == 2  # the first round may find kernels earlier tests left warm
    assert (2 * A.astype(np.float32)).dtype == np.float32  # typed weakly, as numpy 2 types it


@pytest.mark.parametrize("shape", [(1, 1), (0, 4), (4, 0), (5, 1)])
def test_edge_shapes_repeat_warm(shape):
    A = asp.Tensor.from_numpy(np.arange(np.prod(shape), dtype=float).reshape(shape) % 3, format="csr")
    x = np.ones(shape[1])
    _warm_after(lambda: A @ x, A.to_numpy() @ x)
    _warm_after(lambda: A + A, 2 * A.to_numpy())
    empty = asp.Tensor.from_numpy(np.zeros(shape), format="csr")
    _warm_after(lambda: empty * A, np.zeros(shape))
