"""Threads (issue 28): the process-wide thread count (`asp.set_num_threads`, $AUTOSPARSE_NUM_THREADS, else
the cores available), and the default schedule of the kernels that scale made parallel when more than one
thread is allowed. Each parallel kernel equals the numpy reference and its one-thread kernel bit for bit
over the edge-case inputs; what does not share well stays sequential; explicit schedules run as given."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from autosparse.cin.ast import Forall, ParallelUnit, Race, walk
from autosparse.config import MAX_THREADS

from conftest import densified
from kernel_cases import CASES, run_differential

SPMV = "y(i) = A(i,j) * x(j)"
SPGEMM = "C(i,j) = A(i,k) * B(k,j)"
SDDMM = "A(i,j) = B(i,j) * C(i,k) * D(k,j)"
MTTKRP = "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)"


@pytest.fixture(autouse=True)
def process_default(monkeypatch):
    """Every test starts from the default (no set_num_threads, no environment variable) and leaves it so."""
    monkeypatch.delenv("AUTOSPARSE_NUM_THREADS", raising=False)
    asp.set_num_threads(None)
    yield
    asp.set_num_threads(None)



def parallel_outer_loop(kernel) -> bool:
    loop = kernel.cin
    return isinstance(loop, Forall) and loop.parallel is not None \
        and (loop.parallel.unit, loop.parallel.race) == (ParallelUnit.CPU_THREAD, Race.NO_RACES)


# ----- the thread count -----------------------------------------------------------------------------------

def test_the_default_is_the_cores_this_process_may_run_on():
    assert asp.num_threads() == len(os.sched_getaffinity(0))
    assert asp.compile(SPMV, {"A": "csr"}).num_threads == len(os.sched_getaffinity(0))


def test_the_environment_sets_the_default_and_set_num_threads_overrides_it(monkeypatch):
    monkeypatch.setenv("AUTOSPARSE_NUM_THREADS", " 3 ")
    assert asp.num_threads() == 3
    asp.set_num_threads(5)
    assert asp.num_threads() == 5
    assert asp.compile(SPMV, {"A": "csr"}).num_threads == 5
    asp.set_num_threads(None)
    assert asp.num_threads() == 3


def test_a_kernel_s_own_count_wins_over_the_process_s():
    asp.set_num_threads(4)
    kernel = asp.compile(SPMV, {"A": "csr"}, num_threads=1)
    assert kernel.num_threads == 1 and not parallel_outer_loop(kernel) and "#pragma omp" not in kernel.source


def test_a_kernel_takes_the_count_when_compiled():
    asp.set_num_threads(2)
    kernel = asp.compile(SPMV, {"A": "csr"})
    asp.set_num_threads(1)
    assert kernel.num_threads == 2 and parallel_outer_loop(kernel)
    assert not parallel_outer_loop(asp.compile(SPMV, {"A": "csr"}))


def test_an_explicit_parallel_schedule_runs_on_the_process_s_count():
    """A kernel's C is specialised (and memoised) for the count it runs on, not OpenMP's own default."""
    rows = "parallelize(i, cpu_thread, no_races)"
    for count in (3, 2):
        asp.set_num_threads(count)
        assert f"num_threads({count})" in asp.compile(SPMV, {"A": "csr"}, schedule=rows).source


@pytest.mark.parametrize("count", [0, -1, True, 1.5, "2", MAX_THREADS + 1])
def test_set_num_threads_refuses_what_is_not_a_thread_count(count):
    with pytest.raises(asp.ScheduleError, match="num_threads"):
        asp.set_num_threads(count)
    assert asp.num_threads() == len(os.sched_getaffinity(0))  # unchanged


@pytest.mark.parametrize("count", [1, MAX_THREADS, np.int64(3)])
def test_set_num_threads_takes_counts_from_one_to_the_most(count):
    asp.set_num_threads(count)
    assert asp.num_threads() == int(count) and type(asp.num_threads()) is int


@pytest.mark.parametrize("text", ["0", "-2", "two", "", "1.5", "²", str(MAX_THREADS + 1)])
def test_a_bad_environment_value_is_a_clear_error_where_it_is_read(monkeypatch, text):
    monkeypatch.setenv("AUTOSPARSE_NUM_THREADS", text)
    with pytest.raises(asp.ScheduleError, match="AUTOSPARSE_NUM_THREADS"):
        asp.compile(SPMV, {"A": "csr"})
    assert asp.compile(SPMV, {"A": "csr"}, num_threads=2).num_threads == 2  # not read when not needed


# ----- the default schedule made parallel -----------------------------------------------------------------

#: (kernel, expression, formats): kernels that scale, recognised by their shape, not their names.
PARALLEL = [
    ("spmv-csr", SPMV, {"A": "csr"}),
    ("spmv-dcsr", SPMV, {"A": "dcsr", "y": "d"}),  # one sparse operand stepped by the threads, split by entries
    ("spmm-csr", SPGEMM, {"A": "csr"}),
    ("spgemm-csr", SPGEMM, {"A": "csr", "B": "csr", "C": "csr"}),  # the result assembled in chunks of rows
    ("sddmm-csr", SDDMM, {"A": "csr", "B": "csr"}),
    ("mttkrp-dss", MTTKRP, {"B": "dss"}),
    ("mttkrp-csf", MTTKRP, {"B": "csf"}),
    ("ttv-csf", "A(i,j) = B(i,j,k) * c(k)", {"B": "csf", "A": "csr"}),  # CSR rows over the tensor's positions
    ("spgemm-dcsr", SPGEMM, {"A": "dcsr", "B": "csr", "C": "csr"}),  # appended in chunks over A's positions
]  # (a dense y asked for: over DCSR rows the inferred one is a sparse vector, which threads do not assemble)


@pytest.mark.parametrize("name, expression, formats", PARALLEL, ids=[p[0] for p in PARALLEL])
def test_the_default_schedule_of_a_kernel_that_scales_is_parallel_with_two_threads(name, expression, formats):
    kernel = asp.compile(expression, formats, num_threads=2)
    assert parallel_outer_loop(kernel), kernel.cin
    source = kernel.source
    assert "#pragma omp parallel" in source
    assert "num_threads(2)" in source or "const int threads = 2;" in source  # the region of a chunked assembly


@pytest.mark.parametrize("name, expression, formats", PARALLEL, ids=[p[0] for p in PARALLEL])
def test_with_one_thread_the_default_schedule_stays_sequential(name, expression, formats):
    kernel = asp.compile(expression, formats, num_threads=1)
    assert not any(isinstance(n, Forall) and n.parallel for n in _loops(kernel.cin))
    assert "#pragma omp" not in kernel.source


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("name, expression, formats", PARALLEL, ids=[p[0] for p in PARALLEL])
def test_a_parallel_default_kernel_equals_numpy_and_its_one_thread_kernel(name, expression, formats, case):
    index_dtype = np.int64 if "dcsr" in name else np.int32
    parallel = run_differential(expression, formats, case, np.float64, index_dtype, num_threads=2)
    sequential = run_differential(expression, formats, case, np.float64, index_dtype, num_threads=1)
    np.testing.assert_array_equal(densified(parallel), densified(sequential))


def test_parallel_spgemm_and_spmv_equal_scipy_on_many_uneven_rows():
    """More rows than threads, with whole rows empty: each thread's chunk lands where the one before ends."""
    rng = np.random.default_rng(7)
    a = sp.random(301, 57, density=0.08, format="csr", random_state=rng)
    a = sp.csr_matrix(a.multiply(rng.random(301)[:, None] < 0.7))
    b = sp.random(57, 211, density=0.1, format="csr", random_state=rng)
    x = rng.random(57)
    for threads in (2, 3):
        product = asp.compile(SPGEMM, {"A": "csr", "B": "csr", "C": "csr"}, num_threads=threads)(A=a, B=b)
        np.testing.assert_allclose(densified(product), (a @ b).toarray(), rtol=1e-13)
        np.testing.assert_allclose(densified(asp.compile(SPMV, {"A": "csr"}, num_threads=threads)(A=a, x=x)), a @ x,
                                   rtol=1e-13)


#: (why, expression, formats): kernels whose outermost loop does not share well, or may not be shared.
SEQUENTIAL = [
    ("an element-wise sum of vectors has no loop inside an iteration", "c(i) = a(i) + b(i)", {}),
    ("the outer loop of CSC SpMV is the reduction", SPMV, {"A": "csc"}),
    ("the outer loop of a transposed SpMV is the reduction", "y(j) = A(i,j) * x(i)", {"A": "csr"}),
    ("an order-0 result has no rows", "s() = A(i,j) * B(i,j)", {"A": "csr"}),
    ("the result's first level is sparse", "A(i,j) = B(i,j,k) * c(k)", {"B": "csf", "A": "dcsr"}),
    ("COO repeats row coordinates, which a thread must not split", SPMV, {"A": "coo"}),
    ("a sum beside a stepped operand is a merge", "y(i) = A(i,j) * x(j) + z(i)", {"A": "dcsr", "z": "s"}),
]


@pytest.mark.parametrize("why, expression, formats", SEQUENTIAL, ids=[s[0] for s in SEQUENTIAL])
def test_a_kernel_that_does_not_share_well_stays_sequential_and_correct(why, expression, formats):
    kernel = asp.compile(expression, formats, num_threads=2)
    assert not any(n.parallel for n in _loops(kernel.cin)), kernel.cin
    assert "#pragma omp" not in kernel.source
    run_differential(expression, formats, "rect", np.float64, np.int32, num_threads=2)


@pytest.mark.parametrize("schedule", ["∀i ∀j y(i) += A(i,j) * x(j)", "split(i, i0, i1, 2)", asp.Schedule()])
def test_an_explicit_schedule_runs_as_given(schedule):
    kernel = asp.compile(SPMV, {"A": "csr"}, schedule=schedule, num_threads=2)
    assert not any(n.parallel for n in _loops(kernel.cin)), kernel.cin
    assert "#pragma omp" not in kernel.source



def test_an_instrumented_kernel_counts_sequentially():
    """Its counters are shared: with threads they would race (and miss counts)."""
    a = sp.random(40, 30, density=0.2, format="csr", random_state=3)
    kernel = asp.compile(SPMV, {"A": "csr"}, num_threads=2, instrument=True)
    np.testing.assert_allclose(densified(kernel(A=a, x=np.ones(30))), a @ np.ones(30))
    assert not parallel_outer_loop(kernel) and kernel.counts == {"∀i dense": 40, "∀j over A(i,j)": a.nnz}


_WAIT_POLICY_PROBE = """
import os, numpy as np, scipy.sparse as sp, autosparse as asp
kernel = asp.compile("y(i) = A(i,j) * x(j)", {"A": "csr"}, schedule="parallelize(i, cpu_thread, no_races)",
                     num_threads=2)
kernel(A=sp.eye(3, format="csr"), x=np.ones(3))
print(os.environ.get("OMP_WAIT_POLICY"))
"""


@pytest.mark.parametrize("chosen, expected", [(None, "passive"), ("active", "active")])
def test_openmp_threads_sleep_when_idle_unless_the_user_chose(chosen, expected):
    """Spinning threads keep cores that other work on the machine needs (config.prepare_openmp)."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if chosen is not None:
        env["OMP_WAIT_POLICY"] = chosen
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.dirname(os.path.dirname(asp.__file__)),
                                                     env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, "-c", _WAIT_POLICY_PROBE], env=env, capture_output=True, text=True,
                          check=True, timeout=120)
    assert done.stdout.split()[-1] == expected


def _loops(stmt) -> list[Forall]:
    return [n for n in walk(stmt) if isinstance(n, Forall)]


def test_a_call_with_too_little_work_for_threads_runs_the_sequential_default(monkeypatch):
    """Waking a team costs more than a small kernel takes: below PARALLEL_MIN_ENTRIES stored entries the
    default schedule's call runs sequentially (same values), above it on the kernel's threads."""
    from autosparse.pipeline import kernel as pipeline_kernel

    monkeypatch.setattr(pipeline_kernel, "PARALLEL_MIN_ENTRIES", 500)
    kernel = asp.compile(SPMV, {"A": "csr"}, num_threads=2)
    assert parallel_outer_loop(kernel)  # what the kernel is: its CIN and C say so

    def threaded_calls() -> list[bool]:
        return ["omp parallel" in call.source.source for call in kernel._calls.values()]

    for n, expected in ((10, [False]), (100, [False, True])):
        m = sp.random(n, n, density=0.3, format="csr", random_state=n)
        x = np.arange(n, dtype=float)
        np.testing.assert_allclose(kernel(A=asp.Tensor.from_scipy(m), x=x), m @ x)
        np.testing.assert_allclose(kernel(A=asp.Tensor.from_scipy(m), x=x), m @ x)  # the bound call
        assert threaded_calls() == expected
