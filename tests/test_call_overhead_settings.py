"""The settings a warm call reads cheaply (issue 30, round 2: per-call overhead) still take effect when they
change: the environment's memory limit and thread count are read on every call from the table behind
`os.environ` (so `monkeypatch.setenv`, `os.environ[...] =` and `del` are all seen), a Format's hash is
computed once but never pickled (string hashes differ between processes), a Tensor's array addresses are
looked up once but never pickled, and an operator's warm call takes the kernel's warm path."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from autosparse.errors import MemoryLimitError, ScheduleError
from autosparse.format import Format

SPMV = "y(i) = A(i,j) * x(j)"


def _spmv_operands(rows: int = 1000) -> tuple[asp.Tensor, np.ndarray, np.ndarray]:
    matrix = sp.random(rows, 5, density=0.2, format="csr", random_state=1)
    x = np.arange(5.0)
    return asp.Tensor.from_scipy(matrix), x, matrix @ x


def test_a_memory_limit_set_in_the_environment_refuses_a_warm_call(monkeypatch):
    monkeypatch.delenv("AUTOSPARSE_MEMORY_LIMIT", raising=False)
    kernel = asp.compile(SPMV, {"A": "csr", "x": "d", "y": "d"})
    A, x, expected = _spmv_operands()
    np.testing.assert_allclose(kernel(A=A, x=x), expected)
    np.testing.assert_allclose(kernel(A=A, x=x), expected)
    assert kernel.warm_calls == 1
    monkeypatch.setenv("AUTOSPARSE_MEMORY_LIMIT", "1000")  # the dense result needs 8,000 bytes
    with pytest.raises(MemoryLimitError, match="1,000 bytes"):
        kernel(A=A, x=x)
    os.environ["AUTOSPARSE_MEMORY_LIMIT"] = "1e6"  # written directly, not through monkeypatch
    np.testing.assert_allclose(kernel(A=A, x=x), expected)
    del os.environ["AUTOSPARSE_MEMORY_LIMIT"]
    np.testing.assert_allclose(kernel(A=A, x=x), expected)
    assert asp.memory_limit() > 10**6


def test_a_bad_memory_limit_in_the_environment_is_reported_on_the_next_call(monkeypatch):
    kernel = asp.compile(SPMV, {"A": "csr", "x": "d", "y": "d"})
    A, x, _ = _spmv_operands()
    kernel(A=A, x=x)
    monkeypatch.setenv("AUTOSPARSE_MEMORY_LIMIT", "lots")
    with pytest.raises(MemoryLimitError, match="'lots'"):
        kernel(A=A, x=x)


def test_the_environments_thread_count_is_read_when_it_changes(monkeypatch):
    monkeypatch.setenv("AUTOSPARSE_NUM_THREADS", "3")
    assert asp.num_threads() == 3
    os.environ["AUTOSPARSE_NUM_THREADS"] = "1"
    assert asp.num_threads() == 1
    assert asp.compile(SPMV, {"A": "csr"}).num_threads == 1
    monkeypatch.setenv("AUTOSPARSE_NUM_THREADS", "0")
    with pytest.raises(ScheduleError, match="AUTOSPARSE_NUM_THREADS"):
        asp.num_threads()
    monkeypatch.delenv("AUTOSPARSE_NUM_THREADS")
    assert asp.num_threads() == len(os.sched_getaffinity(0))


def test_evaluate_follows_the_environments_thread_count(monkeypatch):
    A, x, expected = _spmv_operands()
    kernels = []
    for threads in ("1", "2", "1"):
        monkeypatch.setenv("AUTOSPARSE_NUM_THREADS", threads)
        for _ in range(2):  # built (or found) by the first call, found warm by the second
            np.testing.assert_allclose(asp.evaluate("w(i) = A(i,j) * x(j)", A=A, x=x), expected)
        kernels.append(asp.api._warm.last[1])
    assert [kernel.num_threads for kernel in kernels] == [1, 2, 1]
    assert kernels[0] is kernels[2]


@pytest.mark.parametrize("spelling", ["csr", "d1s0", "uq", "dsh", "ds~"])
def test_a_formats_hash_is_its_own_in_another_process(spelling):
    """Pickled after its hash was taken, a Format unpickled in a process with another string-hash seed
    hashes as that process's own spelling of it does: the cached hash stays behind."""
    fmt = Format(spelling)
    assert hash(fmt) == hash(fmt) == hash(Format(spelling))
    copy = pickle.loads(pickle.dumps(fmt))
    assert copy == fmt and hash(copy) == hash(fmt) and {fmt: 1}[copy] == 1
    child = ("import pickle, sys; from autosparse.format import Format; "
             "fmt = pickle.loads(sys.stdin.buffer.read()); "
             f"print(hash(fmt) == hash(Format({spelling!r})), {{Format({spelling!r}): 1}}.get(fmt))")
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run([sys.executable, "-c", child], input=pickle.dumps(fmt), capture_output=True,
                              env=env, check=True)
        assert done.stdout.split() == [b"True", b"1"]


def test_a_tensors_addresses_are_its_own_after_a_copy():
    """Addresses are looked up once per Tensor; a pickled copy has arrays elsewhere and looks up its own."""
    A, x, expected = _spmv_operands()
    kernel = asp.compile(SPMV, {"A": "csr", "x": "d", "y": "d"})
    kernel(A=A, x=x)
    copy = pickle.loads(pickle.dumps(A))
    assert copy.address(1, "crd") != A.address(1, "crd")
    assert copy.address(1, "crd") == copy.levels[1]["crd"].ctypes.data
    assert A.address(-1, "vals") == A.vals.ctypes.data
    np.testing.assert_allclose(kernel(A=copy, x=x), expected)


def test_an_operators_repeated_call_takes_the_warm_paths():
    A, x, expected = _spmv_operands()
    for _ in range(2):  # built (or found) by the first call, found warm by the second
        np.testing.assert_allclose(A @ x, expected)
    kernel = asp.api.operators.warm.last[1]
    before, operator_calls = kernel.warm_calls, asp.api.operators.warm_calls
    for scale in (2.0, 3.0):
        np.testing.assert_allclose(A @ (x * scale), expected * scale)
    assert asp.api.operators.warm.last[1] is kernel and kernel.warm_calls == before + 2
    assert asp.api.operators.warm_calls == operator_calls + 2


@pytest.mark.parametrize("other", [2, 2.5, [1.0, 2.0, 3.0, 4.0, 5.0], np.float32(2)])
def test_operators_on_numbers_and_lists_still_convert_them(other):
    """The operator's shortcut takes Tensors and arrays as they are; anything else is converted as before."""
    A, _, _ = _spmv_operands(7)
    dense = A.to_numpy()
    if isinstance(other, list):
        np.testing.assert_allclose(A @ other, dense @ np.asarray(other))
    else:
        np.testing.assert_allclose((A * other).to_numpy(), dense * other)
        assert (A * other).dtype == (dense * other).dtype
