"""SpMSpV on threads (issue 30): `y(i) = A(i,j) * x(j)` with x sparse, under commands that only choose
co-iteration strategies (`coiterate(j, auto)`, as the benchmarks run it), shares its rows among threads by
the default schedule's rule; the table x is found in (hash or bitmap) is built once before the loops and
read by every thread. Each result is checked against numpy on dense copies, at 1 and 2 threads; conftest
runs small operands on threads (PARALLEL_MIN_ENTRIES 0) unless a test restores the shipped threshold."""

from __future__ import annotations

import numpy as np
import pytest

import autosparse as asp
from autosparse.pipeline import kernel as pipeline_kernel

EXPRESSION = "y(i) = A(i,j) * x(j)"
FORMATS = {"A": "csr", "x": "s", "y": "d"}


def _operands(rows, cols, a_density, x_kind, seed, index_dtype):
    rng = np.random.default_rng(seed)
    a = np.where(rng.random((rows, cols)) < a_density, rng.random((rows, cols)) + 0.5, 0.0)
    a[rows // 2] = 0.0  # an empty row
    x = {"empty": np.zeros(cols), "full": rng.random(cols) + 0.5,
         "one": np.eye(1, cols, cols - 1)[0] * 3.0,
         "some": np.where(rng.random(cols) < 0.2, rng.random(cols) + 0.5, 0.0)}[x_kind]
    A = asp.Tensor.from_numpy(a, format="csr", index_dtype=index_dtype)
    X = asp.Tensor.from_numpy(x, format="s", index_dtype=index_dtype)
    return a, x, A, X


def _explicit_zeros(X: asp.Tensor) -> asp.Tensor:
    """x with every stored value zero (an all-zero vector that still stores its entries)."""
    coords, values = X.to_coo()
    return asp.Tensor.from_coo(coords, np.zeros_like(values), X.shape, format="s")


@pytest.mark.parametrize("schedule", ["coiterate(j, auto)", "coiterate(j, bitmap)", "coiterate(j, hash)"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("x_kind", ["empty", "full", "one", "some"])
@pytest.mark.parametrize("shape,index_dtype", [((40, 30), np.int32), ((1, 7), np.int64), ((9, 1), np.int32)])
def test_spmspv_matches_numpy(schedule, threads, x_kind, shape, index_dtype):
    a, x, A, X = _operands(*shape, 0.3, x_kind, shape[0] * 31 + shape[1], index_dtype)
    kernel = asp.compile(EXPRESSION, formats=FORMATS, schedule=schedule, num_threads=threads)
    np.testing.assert_allclose(kernel(A=A, x=X), a @ x, rtol=1e-12, atol=0)
    assert kernel.ran_parallel == (threads > 1)
    np.testing.assert_array_equal(kernel(A=A, x=_explicit_zeros(X)), np.zeros(shape[0]))


def test_bitmap_is_built_once_before_the_parallel_loop():
    a, x, A, X = _operands(50, 40, 0.3, "some", 3, np.int32)
    kernel = asp.compile(EXPRESSION, formats=FORMATS, schedule="coiterate(j, bitmap)", num_threads=2)
    np.testing.assert_allclose(kernel(A=A, x=X), a @ x, rtol=1e-12)
    source = kernel.source
    assert kernel.ran_parallel
    assert source.index("x_l1_bitmap[x_crd1[q]] = q;") < source.index("#pragma omp parallel")
    assert source.count("x_l1_bitmap[x_crd1[q]] = q;") == 1


def test_auto_keeps_its_table_on_threads():
    """Under a parallel loop, auto may still find x by a table: x's table is built before the loops."""
    a, x, A, X = _operands(60, 200, 0.5, "some", 4, np.int32)
    kernel = asp.compile(EXPRESSION, formats=FORMATS, schedule="coiterate(j, auto)", num_threads=2)
    np.testing.assert_allclose(kernel(A=A, x=X), a @ x, rtol=1e-12)
    assert kernel.ran_parallel and "parallel" in str(kernel.chosen)


def test_a_table_that_moves_keeps_the_loop_sequential():
    """Found by a hash of A's rows while x drives (merged), A's table is rebuilt per row: one thread."""
    a, x, A, X = _operands(30, 20, 0.4, "some", 5, np.int32)
    kernel = asp.compile(EXPRESSION, formats=FORMATS, schedule="coiterate(j, hash, A)", num_threads=2)
    np.testing.assert_allclose(kernel(A=A, x=X), a @ x, rtol=1e-12)
    assert not kernel.ran_parallel


def test_loop_commands_run_as_written():
    """A schedule that orders or parallelises loops itself is not made parallel."""
    a, x, A, X = _operands(30, 20, 0.4, "some", 6, np.int32)
    kernel = asp.compile(EXPRESSION, formats=FORMATS, schedule="coiterate(j, bitmap); reorder(i, j)", num_threads=2)
    np.testing.assert_allclose(kernel(A=A, x=X), a @ x, rtol=1e-12)
    assert not kernel.ran_parallel


def test_small_operands_stay_sequential(monkeypatch):
    monkeypatch.setattr(pipeline_kernel, "PARALLEL_MIN_ENTRIES", 1 << 16)
    a, x, A, X = _operands(40, 30, 0.3, "some", 7, np.int32)
    kernel = asp.compile(EXPRESSION, formats=FORMATS, schedule="coiterate(j, auto)", num_threads=2)
    np.testing.assert_allclose(kernel(A=A, x=X), a @ x, rtol=1e-12)
    assert not kernel.ran_parallel
