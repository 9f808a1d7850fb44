"""A process forked after parallel kernels ran can still run kernels: libgomp's threads do not survive
`fork`, and a parallel region on several threads in the child would wait for them forever. Such a child
runs every kernel on one thread (`config.forked_after_openmp`), kernels built before the fork included.
Each child runs under `run_isolated`, which fails the test if the child raises or hangs (an alarm):
without the rule, the tests that run a kernel in the child fail by that alarm."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp

from kernel_cases import run_isolated

SPMV = "y(i) = A(i,j) * x(j)"
FORMATS = {"A": "csr", "x": "d", "y": "d"}
ROWS = "parallelize(i, cpu_thread, no_races)"

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


@pytest.fixture(scope="module")
def operands():
    rng, n = np.random.default_rng(7), 30_000
    rows, cols = np.repeat(np.arange(n), 60), rng.integers(0, n, 60 * n)  # 1.8 M entries: threads pay
    matrix = sp.csr_array((rng.random(60 * n), (rows, cols)), shape=(n, n))
    x = rng.random(n)
    return asp.Tensor.from_scipy(matrix), x, matrix @ x


def test_a_kernel_that_ran_parallel_runs_again_in_a_forked_child(operands):
    A, x, expected = operands
    kernel = asp.compile(SPMV, formats=FORMATS, schedule=ROWS, num_threads=2)
    np.testing.assert_allclose(kernel(A=A, x=x), expected)
    assert kernel.ran_parallel

    def child():
        np.testing.assert_allclose(kernel(A=A, x=x), expected)
        assert kernel.num_threads == 1

    run_isolated(child, timeout=60)
    np.testing.assert_allclose(kernel(A=A, x=x), expected)  # the parent's own kernel keeps its threads
    assert kernel.num_threads == 2 and kernel.ran_parallel


def test_the_default_schedule_and_evaluate_in_a_forked_child(operands):
    A, x, expected = operands
    kernel = asp.compile(SPMV, formats=FORMATS, num_threads=2)
    np.testing.assert_allclose(kernel(A=A, x=x), expected)
    assert kernel.ran_parallel
    np.testing.assert_allclose(asp.evaluate(SPMV, A=A, x=x, num_threads=2), expected)

    def child():
        fresh = asp.compile(SPMV, formats=FORMATS, schedule=ROWS, num_threads=2)
        for y in (kernel(A=A, x=x), fresh(A=A, x=x), asp.evaluate(SPMV, A=A, x=x, num_threads=2),
                  asp.evaluate(SPMV, A=A, x=x), A @ x):
            np.testing.assert_allclose(y, expected)
        assert (fresh.num_threads, asp.num_threads(), kernel.ran_parallel) == (1, 1, False)

    run_isolated(child, timeout=60)


def test_a_sparse_result_assembled_by_threads_in_a_forked_child():
    a = sp.random(3_000, 3_000, density=0.01, format="csr", random_state=3)
    b = sp.random(3_000, 3_000, density=0.01, format="csr", random_state=4)
    A, B, expected = asp.Tensor.from_scipy(a), asp.Tensor.from_scipy(b), (a @ b).toarray()
    kernel = asp.compile("C(i,j) = A(i,k) * B(k,j)", formats={"A": "csr", "B": "csr", "C": "csr"}, schedule=ROWS,
                         num_threads=2)
    np.testing.assert_allclose(kernel(A=A, B=B).to_numpy(), expected)

    def child():
        np.testing.assert_allclose(kernel(A=A, B=B).to_numpy(), expected)

    run_isolated(child, timeout=60)


def test_a_child_forked_before_any_openmp_kernel_keeps_its_threads():
    """In a fresh interpreter: a fork before any OpenMP kernel was loaded changes nothing."""
    program = textwrap.dedent("""
        import os, autosparse as asp
        asp.set_num_threads(2)
        pid = os.fork()
        if pid == 0:
            os._exit(0 if asp.num_threads() == 2 else 3)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), asp.num_threads())
    """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["0", "2"], done.stderr
