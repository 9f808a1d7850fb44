"""Parallel by default (issue 30): with threads allowed, each kernel that scales runs its outermost loop on
threads without a schedule saying so — the default schedule and an autoscheduler's pick alike — where the
operands hold the work (PARALLEL_MIN_ENTRIES); one thread, or small operands, stay sequential. Each result is
checked against numpy on dense copies. `Kernel.ran_parallel` says what the last call ran."""

from __future__ import annotations

import numpy as np
import pytest

import autosparse as asp
from autosparse import api
from autosparse.pipeline import kernel as pipeline_kernel

#: The threshold as shipped (conftest runs other tests' small operands on threads by lowering it to 0).
PARALLEL_MIN_ENTRIES = 1 << 16


@pytest.fixture(autouse=True)
def _shipped_threshold(monkeypatch):
    monkeypatch.setattr(pipeline_kernel, "PARALLEL_MIN_ENTRIES", PARALLEL_MIN_ENTRIES)


def _sparse(shape, density, seed, fmt="csr"):
    """A random sparse tensor of `shape` (any order) and its dense copy."""
    rng = np.random.default_rng(seed)
    dense = np.where(rng.random(shape) < density, rng.random(shape), 0.0)
    return asp.Tensor.from_numpy(dense, format=fmt), dense


def _dense(shape, seed):
    return np.random.default_rng(seed).random(shape)


def _spmv(scale):
    A, a = _sparse((300 * scale, 300), 0.8, 1)
    x = _dense(300, 2)
    return "y(i) = A(i,j) * x(j)", {"A": "csr"}, {"A": A, "x": x}, a @ x


def _spmm(scale):
    A, a = _sparse((300 * scale, 300), 0.1, 3)
    B = _dense((300, 300 * scale), 4)
    return "C(i,k) = A(i,j) * B(j,k)", {"A": "csr"}, {"A": A, "B": B}, a @ B


def _sddmm(scale):
    A, a = _sparse((300 * scale, 300), 0.2, 5)
    B, D = _dense((300 * scale, 250), 6), _dense((250, 300), 7)
    return "C(i,j) = A(i,j) * B(i,k) * D(k,j)", {"A": "csr"}, {"A": A, "B": B, "D": D}, a * (B @ D)


def _spgemm(scale):
    A, a = _sparse((400 * scale, 400), 0.25, 8)
    B, b = _sparse((400, 400), 0.25, 9)
    return "C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr"}, {"A": A, "B": B}, a @ b


def _mttkrp(scale):
    B, b = _sparse((50 * scale, 50, 50), 0.6, 10, "sss")
    C, D = _dense((50, 8), 11), _dense((50, 8), 12)
    return "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", {"B": "sss"}, {"B": B, "C": C, "D": D}, \
        np.einsum("ikl,kj,lj->ij", b, C, D)


def _ttm(scale):
    B, b = _sparse((40 * scale, 40, 50), 0.9, 13, "sss")
    C = _dense((6, 50), 14)
    return "A(i,j,k) = B(i,j,l) * C(k,l)", {"B": "sss"}, {"B": B, "C": C}, np.einsum("ijl,kl->ijk", b, C)


def _add(scale):
    A, a = _sparse((300 * scale, 300), 0.4, 15)
    B, b = _sparse((300 * scale, 300), 0.4, 16)
    return "C(i,j) = A(i,j) + B(i,j)", {"A": "csr", "B": "csr"}, {"A": A, "B": B}, a + b


KERNELS = {"SpMV": _spmv, "SpMM": _spmm, "SDDMM": _sddmm, "SpGEMM": _spgemm, "MTTKRP": _mttkrp, "TTM": _ttm,
           "add": _add}


def _stored(operands) -> int:
    return sum(v.nnz if isinstance(v, asp.Tensor) else v.size for v in operands.values())


def _check(result, expected):
    dense = result.to_numpy() if isinstance(result, asp.Tensor) else result
    np.testing.assert_allclose(dense, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", KERNELS)
def test_kernels_that_scale_run_parallel_at_two_threads(name):
    expression, formats, operands, expected = KERNELS[name](1)
    assert _stored(operands) >= PARALLEL_MIN_ENTRIES
    kernel = asp.compile(expression, formats, num_threads=2)
    for _ in range(2):  # the first call and the warm one
        _check(kernel(**operands), expected)
        assert kernel.ran_parallel


@pytest.mark.parametrize("name", KERNELS)
def test_one_thread_stays_sequential(name):
    expression, formats, operands, expected = KERNELS[name](1)
    kernel = asp.compile(expression, formats, num_threads=1)
    _check(kernel(**operands), expected)
    assert not kernel.ran_parallel


@pytest.mark.parametrize("name", ["SpMV", "SpGEMM", "add"])
def test_small_operands_stay_sequential(name):
    expression, formats, _, _ = KERNELS[name](1)
    kernel = asp.compile(expression, formats, num_threads=2)
    A, a = _sparse((6, 6), 0.3, 17)
    operands = {"SpMV": {"A": A, "x": np.arange(6.0)}, "SpGEMM": {"A": A, "B": A}, "add": {"A": A, "B": A}}[name]
    expected = {"SpMV": a @ np.arange(6.0), "SpGEMM": a @ a, "add": a + a}[name]
    _check(kernel(**operands), expected)
    assert not kernel.ran_parallel


@pytest.mark.parametrize("shape", [(0, 300), (1, 1)])
def test_empty_and_size_1_operands_at_two_threads(shape):
    kernel = asp.compile("C(i,j) = A(i,j) + B(i,j)", {"A": "csr", "B": "csr"}, num_threads=2)
    A, a = _sparse(shape, 0.5, 18)
    _check(kernel(A=A, B=A), a + a)


def test_the_process_thread_count_makes_the_default_parallel():
    expression, formats, operands, expected = _spmv(1)
    try:
        asp.set_num_threads(2)
        two = asp.compile(expression, formats)
        asp.set_num_threads(1)
        one = asp.compile(expression, formats)
    finally:
        asp.set_num_threads(None)
    _check(two(**operands), expected)
    _check(one(**operands), expected)
    assert two.ran_parallel and not one.ran_parallel


def _front(name):
    expression, formats, operands, expected = KERNELS[name](1)
    full = {**formats, **{n: "d" * v.ndim for n, v in operands.items() if isinstance(v, np.ndarray)}}
    return expression, full, operands, expected, asp.autoschedule(expression, full)


def test_an_autoscheduled_pick_runs_parallel():
    expression, formats, operands, expected, front = _front("SpMV")
    pick = front.select(**operands)
    kernel = asp.compile(expression, formats, schedule=pick, num_threads=2)
    _check(kernel(**operands), expected)
    assert kernel.ran_parallel
    one = asp.compile(expression, formats, schedule=pick, num_threads=1)
    _check(one(**operands), expected)
    assert not one.ran_parallel


@pytest.mark.filterwarnings("ignore::autosparse.PerformanceWarning")
def test_candidates_run_parallel_where_their_outer_loop_shares_well():
    """Not every candidate can: one whose outer loop is over B's columns writes every row of C in each
    iteration. Those whose CIN says parallel run so, and every one computes right."""
    expression, formats, operands, expected, front = _front("SpGEMM")
    ran = []
    for cand in list(front)[:8]:
        kernel = asp.compile(expression, formats, schedule=cand, num_threads=2)
        _check(kernel(**operands), expected)
        assert kernel.ran_parallel == ("@parallel" in str(kernel.cin))
        ran.append(kernel.ran_parallel)
    assert any(ran)


def test_schedule_auto_runs_its_pick_parallel(monkeypatch):
    expression, formats, operands, expected = _spmv(1)
    kernels = []
    real = api._kernel
    monkeypatch.setattr(api, "_kernel", lambda *args: kernels.append(real(*args)) or kernels[-1])
    try:
        asp.set_num_threads(2)
        for _ in range(4):  # past a trial's calls, to the decided pick
            _check(asp.evaluate(expression, schedule="auto", **operands), expected)
    finally:
        asp.set_num_threads(None)
    assert kernels and kernels[-1].ran_parallel


def test_schedule_auto_keeps_small_operands_sequential(monkeypatch):
    """Choosing co-iteration per call resolves the CIN for the call's threads, not the kernel's."""
    A, a = _sparse((8, 8), 0.4, 19)
    x = np.arange(8.0)
    kernels = []
    real = api._kernel
    monkeypatch.setattr(api, "_kernel", lambda *args: kernels.append(real(*args)) or kernels[-1])
    try:
        asp.set_num_threads(2)
        for _ in range(4):
            _check(asp.evaluate("y(i) = A(i,j) * x(j)", schedule="auto", A=A, x=x), a @ x)
    finally:
        asp.set_num_threads(None)
    assert kernels and not any(kernel.ran_parallel for kernel in kernels)


@pytest.mark.parametrize("result", ["dds", "ddh", "dss"])
def test_element_wise_results_threads_cannot_split_stay_sequential(result):
    """A dense level over a compressed one (`dds` from `dss`) shares the operand's positions, which threads
    cannot split by rows: sequential; compressed all the way down, threads write rows."""
    A, a = _sparse((60, 40, 40), 0.9, 20, "dss")  # 86,000 entries: past PARALLEL_MIN_ENTRIES
    kernel = asp.compile("B(i,j,k) = A(i,j,k)", {"A": "dss", "B": result}, num_threads=2)
    _check(kernel(A=A), a)
    assert kernel.ran_parallel == (result == "dss")
