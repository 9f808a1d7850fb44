"""The warm path of a call (issue 30: per-call overhead): a kernel's second call with operands of the same
signature takes the first call's bound specialisation (`Kernel.warm_calls` counts it), and `evaluate` or an
operator called again takes the kernel it built without parsing or re-checking names. These tests check that
the path is taken, and that any change it must not skip — a new shape, dtype, index dtype, format, strides,
operand names or memory limit — is checked again and still computes what numpy computes."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from autosparse import api
from autosparse.errors import AutosparseError, MemoryLimitError, ShapeError

SPMV = "y(i) = A(i,j) * x(j)"


def _csr(shape=(7, 5), seed=0, density=0.4, index_dtype=None) -> tuple[asp.Tensor, np.ndarray]:
    m = sp.random(*shape, density=density, format="csr", random_state=seed)
    return asp.Tensor.from_scipy(m) if index_dtype is None else asp.Tensor.from_scipy(m, index_dtype=index_dtype), \
        m.toarray()


@pytest.fixture
def spmv():
    return asp.compile(SPMV, {"A": "csr", "x": "d", "y": "d"})


def test_the_second_call_is_warm(spmv):
    A, a = _csr()
    x = np.arange(5.0)
    np.testing.assert_allclose(spmv(A=A, x=x), a @ x)
    assert spmv.warm_calls == 0
    np.testing.assert_allclose(spmv(A=A, x=x), a @ x)
    assert spmv.warm_calls == 1


def test_new_operand_objects_of_the_same_signature_are_warm_and_read_afresh(spmv):
    for seed in range(4):
        A, a = _csr(seed=seed)
        x = np.arange(5.0) * seed
        np.testing.assert_allclose(spmv(A=A, x=x), a @ x)
    assert spmv.warm_calls == 3


@pytest.mark.parametrize("change", ["shape", "value dtype", "array dtype", "index dtype", "format", "strides",
                                    "read-only", "empty", "all-zero", "single entry", "size 1"])
def test_a_changed_operand_is_checked_again_and_computes_right(spmv, change):
    A, a = _csr()
    x = np.arange(5.0)
    spmv(A=A, x=x)
    if change == "shape":
        A, a = _csr((3, 9), seed=1)
        x = np.arange(9.0)
    elif change == "value dtype":
        A = asp.Tensor.from_scipy(sp.csr_matrix(a.astype(np.float32)))
    elif change == "array dtype":
        x = np.arange(5, dtype=np.int64)
    elif change == "index dtype":
        A, a = _csr(index_dtype=np.int64)
    elif change == "format":
        with pytest.warns(asp.PerformanceWarning):
            A = asp.Tensor.from_scipy(sp.csc_matrix(a))
            np.testing.assert_allclose(spmv(A=A, x=x), a @ x)
    elif change == "strides":
        x = np.arange(10.0)[::2]
    elif change == "read-only":
        x = x.copy()
        x.flags.writeable = False
    elif change == "empty":
        A, a = _csr((0, 5))
    elif change == "all-zero":
        A, a = asp.Tensor.from_scipy(sp.csr_matrix((7, 5))), np.zeros((7, 5))
    elif change == "single entry":
        a = np.zeros((7, 5))
        a[3, 2] = 2.5
        A = asp.Tensor.from_scipy(sp.csr_matrix(a))
    else:
        A, a = _csr((1, 1), density=1.0)
        x = np.array([4.0])
    before = spmv.warm_calls
    y = spmv(A=A, x=x)
    np.testing.assert_allclose(y, a @ x)
    assert y.shape == (a.shape[0],)
    if change not in ("empty", "all-zero", "single entry", "read-only"):  # another signature: the full path
        assert spmv.warm_calls == before
    np.testing.assert_allclose(spmv(A=A, x=x), a @ x)  # and the repeat of the new signature


def test_a_mutated_array_is_read_on_the_warm_path(spmv):
    A, a = _csr()
    x = np.ones(5)
    spmv(A=A, x=x)
    x[:] = np.arange(5.0)
    np.testing.assert_allclose(spmv(A=A, x=x), a @ x)
    assert spmv.warm_calls == 1


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.int32, np.float16, np.complex64])
def test_an_array_of_a_dtype_kernels_convert_calls_warm(spmv, dtype):
    """A bool or small-int array (BFS's frontier, a comparison's result) is converted as the general path
    converts it, and the call is warm from the second on: each one took the general path before."""
    A, a = _csr()
    x = (np.arange(5) % 2).astype(dtype) if dtype is np.bool_ else np.arange(1, 6).astype(dtype)
    for calls in range(3):
        got = spmv(A=A, x=x)
        np.testing.assert_allclose(got, a @ x.astype(np.complex128 if dtype is np.complex64 else np.float64),
                                   rtol=1e-6)
        assert spmv.warm_calls == calls
    x[1] = 0  # read afresh on a warm call, as any array is
    np.testing.assert_allclose(spmv(A=A, x=x), a @ x.astype(np.complex128 if dtype is np.complex64 else np.float64),
                               rtol=1e-6)


def test_an_array_of_a_dtype_no_kernel_takes_is_refused_warm_or_not(spmv):
    A, _ = _csr()
    spmv(A=A, x=np.ones(5))
    for _ in range(2):
        with pytest.raises(AutosparseError, match="uint64"):
            spmv(A=A, x=np.ones(5, dtype=np.uint64))


def test_bad_input_after_a_warm_call_raises_as_before(spmv):
    A, _ = _csr()
    x = np.ones(5)
    spmv(A=A, x=x)
    spmv(A=A, x=x)
    with pytest.raises(ShapeError):
        spmv(A=A, x=np.ones(6))
    with pytest.raises(AutosparseError, match="Expected operands"):
        spmv(A=A)
    with pytest.raises(AutosparseError, match="Expected operands"):
        spmv(A=A, x=x, z=x)


def test_a_lowered_memory_limit_refuses_a_warm_call(spmv):
    A, _ = _csr((1000, 5), density=0.1)
    x = np.ones(5)
    spmv(A=A, x=x)
    asp.set_memory_limit(1000)
    try:
        with pytest.raises(MemoryLimitError):
            spmv(A=A, x=x)
    finally:
        asp.set_memory_limit(None)
    assert spmv.warm_calls == 0


def test_dense_results_of_warm_calls_are_the_callers_and_independent(spmv):
    A, a = _csr()
    x = np.ones(5)
    first, second = spmv(A=A, x=x), spmv(A=A, x=x)
    first[:] = -1.0
    np.testing.assert_allclose(second, a @ x)
    assert second.flags.writeable


@pytest.mark.parametrize("threads", [1, 2])
def test_warm_compute_gives_a_tensor_and_a_transposed_dense_result_its_axes(threads):
    kernel = asp.compile("C(i,k) = A(i,j) * B(j,k)", {"A": "csr", "B": "dd", "C": "d1d0"}, num_threads=threads)
    A, a = _csr()
    b = np.arange(15.0).reshape(5, 3)
    for _ in range(2):
        np.testing.assert_allclose(kernel(A=A, B=b), a @ b)
        computed = kernel.compute(A=A, B=b)
        assert isinstance(computed, asp.Tensor) and not computed.vals.flags.writeable
        np.testing.assert_allclose(computed.to_numpy(), a @ b)
    assert kernel.warm_calls == 3


def test_an_order_0_result_is_a_number_on_the_warm_path():
    kernel = asp.compile("s() = A(i,j) * B(i,j)", {"A": "csr", "B": "dd"})
    A, a = _csr()
    b = np.arange(35.0).reshape(7, 5)
    assert kernel(A=A, B=b) == pytest.approx((a * b).sum())
    assert kernel.compute(A=A, B=b) == pytest.approx((a * b).sum())
    assert kernel.warm_calls == 1


@pytest.mark.parametrize("threads", [1, 2])
def test_sparse_results_of_warm_calls(threads):
    kernel = asp.compile("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": "csr"}, num_threads=threads)
    A, a = _csr((6, 6), seed=2)
    B, b = _csr((6, 6), seed=3)
    results = [kernel(A=A, B=B) for _ in range(3)]
    assert kernel.warm_calls == 2
    for C in results:
        np.testing.assert_allclose(C.to_numpy(), a @ b)


def _counting_kernel_builds(monkeypatch) -> list:
    built = []
    real = api._kernel
    monkeypatch.setattr(api, "_kernel", lambda *args: built.append(args) or real(*args))
    return built


def test_a_repeated_evaluate_takes_the_kernel_it_built(monkeypatch):
    built = _counting_kernel_builds(monkeypatch)
    A, a = _csr(seed=4)
    first_round = None
    for scale in (1.0, 2.0, 3.0):
        x = np.arange(5.0) * scale
        np.testing.assert_allclose(asp.evaluate(SPMV, A=A, x=x), a @ x)
        np.testing.assert_allclose(asp.evaluate(SPMV, operands={"A": A, "x": x}), a @ x)
        np.testing.assert_allclose(A @ x, a @ x)
        first_round = len(built) if first_round is None else first_round
    # keywords, operands= and the operator's own text: at most one build each (none where an earlier test
    # built it), and none on the repeats
    assert len(built) == first_round <= 3


@pytest.mark.parametrize("second", ["csc tensor", "dense tensor", "array", "ten times the entries", "scipy"])
def test_evaluate_on_operands_of_another_kind_builds_for_them(monkeypatch, second):
    A, a = _csr((40, 40), seed=5, density=0.02)
    x = np.arange(40.0)
    asp.evaluate(SPMV, A=A, x=x)
    built = _counting_kernel_builds(monkeypatch)
    other = {"csc tensor": lambda: A.to_format("csc"), "dense tensor": lambda: asp.Tensor.from_numpy(a),
             "array": lambda: a, "ten times the entries": lambda: _csr((40, 40), seed=6, density=0.3)[0],
             "scipy": lambda: sp.csr_matrix(a)}[second]()
    dense = other.to_numpy() if isinstance(other, asp.Tensor) else other
    dense = dense.toarray() if sp.issparse(dense) else dense
    np.testing.assert_allclose(asp.evaluate(SPMV, A=other, x=x), dense @ x)
    assert len(built) == 1


def test_evaluate_checks_operand_names_on_every_call():
    A, _ = _csr()
    x = np.ones(5)
    asp.evaluate(SPMV, A=A, x=x)
    with pytest.raises(AutosparseError, match="Expected the operands"):
        asp.evaluate(SPMV, A=A, x=x, z=x)
    with pytest.raises(AutosparseError):
        asp.evaluate(SPMV, A=A)
    with pytest.raises(AutosparseError, match="both in operands= and as keywords"):
        asp.evaluate(SPMV, operands={"A": A, "x": x}, x=x)


def test_evaluate_follows_a_changed_thread_count(monkeypatch):
    A, a = _csr()
    x = np.ones(5)
    built = _counting_kernel_builds(monkeypatch)
    try:
        for threads in (1, 2, 1, 2):
            asp.set_num_threads(threads)
            np.testing.assert_allclose(asp.evaluate("v(i) = A(i,j) * x(j)", A=A, x=x), a @ x)
    finally:
        asp.set_num_threads(None)
    assert len(built) == 2  # one build per thread count, then warm calls
