"""Scheduling commands (Senanayake et al. §4): each schedule of a kernel computes what the default schedule
computes (checked against the numpy reference on dense copies, over the edge-case inputs and both index
dtypes), prints the CIN the command defines, and each broken precondition is a ScheduleError naming the
command, the variable and the rule."""

from __future__ import annotations

import numpy as np
import pytest

import autosparse as asp
from conftest import densified
from autosparse.schedule import Schedule

from kernel_cases import CASES, expect_schedule_error, run_differential, stratified

SPGEMM = "C(i,j) = A(i,k) * B(k,j)"
MTTKRP = "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)"
SDDMM = "A(i,j) = B(i,j) * C(i,k) * D(k,j)"

#: (expression, formats, schedule text, the CIN it must give)
SCHEDULES = [
    ("y(i) = A(i,j) * x(j)", {"A": "csr"}, "reorder(i, j)", "∀i ∀j y(i) += A(i,j) * x(j)"),
    ("y(i) = A(i,j) * x(j)", {"A": "csc"}, "reorder(j, i)", "∀j ∀i y(i) += A(i,j) * x(j)"),
    ("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "C": "dense"}, "reorder(i, j, k)",
     "∀i ∀j ∀k C(i,j) += A(i,k) * B(k,j)"),
    (SPGEMM, {"A": "csr", "B": "csr", "C": "csr"}, "precompute(A(i,k) * B(k,j), j, j)",
     "∀i where(∀j C(i,j) = w(j), ∀k ∀j w(j) += A(i,k) * B(k,j))"),
    (SPGEMM, {"A": "csr", "B": "csr", "C": "csr"}, "precompute(A(i,k) * B(k,j), j, jw, h)",
     "∀i where(∀j C(i,j) = w(j), ∀k ∀jw w(jw) += A(i,k) * B(k,jw))"),
    (SPGEMM, {"A": "csr", "B": "csr", "C": "dense"}, "precompute(A(i,k) * B(k,j), j, j)",
     "∀i where(∀j C(i,j) = w(j), ∀k ∀j w(j) += A(i,k) * B(k,j))"),
    (MTTKRP, {"B": "csf", "A": "dense"}, "precompute(B(i,k,l) * D(l,j), j, j)",
     "∀i ∀k where(∀j A(i,j) += C(k,j) * w(j), ∀l ∀j w(j) += B(i,k,l) * D(l,j))"),
    (SDDMM, {"B": "csr", "A": "csr"}, "reorder(i, j, k)", "∀i ∀j ∀k A(i,j) += B(i,j) * C(i,k) * D(k,j)"),
]


@pytest.mark.parametrize("expression, formats, schedule, cin", SCHEDULES,
                         ids=[f"{e.split('=')[0].strip()}-{s}" for e, _, s, _ in SCHEDULES])
def test_a_schedule_gives_its_cin(expression, formats, schedule, cin):
    kernel = asp.compile(expression, formats=formats, schedule=schedule)
    assert str(kernel.cin) == cin


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("expression, formats, schedule, cin", SCHEDULES,
                         ids=[f"{e.split('=')[0].strip()}-{s}" for e, _, s, _ in SCHEDULES])
def test_a_schedule_computes_the_expression(expression, formats, schedule, cin, case, index_dtype):
    run_differential(expression, formats, case, np.float64, index_dtype, schedule=schedule)


def test_text_and_chained_schedules_are_the_same_value():
    text = Schedule.parse("reorder(i, k, j); precompute(A(i,k) * B(k,j), j, j, h)")
    chained = Schedule().reorder("i", "k", "j").precompute("A(i,k) * B(k,j)", "j", "j", "h")
    assert text == chained
    assert Schedule.parse(str(text)) == text


def test_a_schedule_value_and_its_text_compile_alike():
    formats = {"A": "csr", "B": "csr", "C": "csr"}
    by_text = asp.compile(SPGEMM, formats=formats, schedule="precompute(A(i,k) * B(k,j), j, j)")
    by_value = asp.compile(SPGEMM, formats=formats, schedule=Schedule().precompute("A(i,k) * B(k,j)", "j", "j"))
    assert by_text.cin == by_value.cin


@pytest.mark.parametrize("expression, formats, schedule, words", [
    ("y(i) = A(i,j) * x(j)", {"A": "csr"}, "reorder(j, i)", ["reorder(j, i)", "A(i,j)", "order i, j"]),
    ("y(i) = A(i,j) * x(j)", {"A": "csr"}, "reorder(i, q)", ["reorder(i, q)", "no loop over q"]),
    ("y(i) = A(i,j) * x(j)", {"A": "csr"}, "reorder(i, i)", ["reorder(i, i)", "distinct"]),
    (SPGEMM, {"A": "csr", "B": "csr", "C": "csr"}, "precompute(A(i,k) * B(k,j), j, j); reorder(i, k)",
     ["reorder(i, k)", "not directly nested"]),
    (SPGEMM, {"A": "csr", "B": "csr", "C": "csr"}, "precompute(A(i,k) * C(k,j), j, j)",
     ["precompute", "reads no C(k,j)"]),
    ("y(i) = A(i,j) * x(j) * z(j)", {"A": "csr"}, "precompute(x(j) * z(j), i, i)",
     ["precompute(i)", "does not vary with i"]),
    # found by the random command sequences: a one-index temporary cannot hold what varies with j too
    (SPGEMM, {"A": "csr"}, "precompute(A(i,k) * B(k,j), i, iw)", ["precompute(i)", "also varies with j"]),
    (SPGEMM, {"A": "csr"}, "precompute(A(i,k) * B(k,j), k, kw)", ["precompute(k)", "also varies with j"]),
    (SPGEMM, {"A": "csr", "B": "csr", "C": "csr"}, "precompute(A(i,k) * B(k,j), q, q)",
     ["precompute(q)", "not inside a loop over q"]),
    (SPGEMM, {"A": "csr", "B": "csr", "C": "csr"}, "precompute(A(i,k) * B(k,j), j, j, s)",
     ["precompute", "dense or hashed"]),
    ("y(i) = A(i,j) * x(j)", {"A": "csr"}, "loopfuse(i, 0, 0)", ["loopfuse", "expected a path"]),
    ("y(i) = A(i,j) * x(j)", {"A": "csr"}, "unroll(i, 0)", ["unroll(i", "positive"]),
])
def test_broken_preconditions_are_schedule_errors(expression, formats, schedule, words):
    expect_schedule_error(expression, formats, schedule, words)


@pytest.mark.parametrize("schedule, column", [("reorder(i j)", 11), ("frobnicate(i)", 1), ("reorder(i)", 1)])
def test_malformed_schedule_text_is_a_parse_error_with_its_column(schedule, column):
    with pytest.raises(asp.ParseError) as raised:
        Schedule.parse(schedule)
    assert raised.value.column == column


# ----- parallelize ----------------------------------------------------------------------------------------

#: (expression, formats, schedule): parallel loops over whole dimensions, with each race strategy
PARALLEL = [
    ("y(i) = A(i,j) * x(j)", {"A": "csr"}, "parallelize(i, cpu_thread, no_races)"),
    ("y(i) = A(i,j) * x(j)", {"A": "csc"}, "parallelize(j, cpu_thread, atomics)"),
    ("y(i) = A(i,j) * x(j)", {"A": "csc"}, "parallelize(j, cpu_thread, temporary)"),
    ("y(i) = A(i,j) * x(j)", {"A": "csr"}, "parallelize(j, cpu_thread, atomics)"),  # over a row's positions
    ("y(i) = A(i,j) * x(j)", {"A": "csr"}, "parallelize(i, cpu_vector, no_races)"),
    ("s() = a(i) * b(i)", {}, "parallelize(i, cpu_thread, temporary)"),
    ("s() = a(i) * b(i)", {}, "parallelize(i, cpu_thread, atomics)"),
    ("s() = a(i) * b(i)", {}, "parallelize(i, cpu_vector, temporary)"),
    ("C(i,j) = A(i,k) * B(k,j)", {"A": "csr"}, "parallelize(i, cpu_thread, no_races)"),
    ("C(i,j) = A(i,k) * B(k,j)", {"A": "csr"}, "reorder(i, j, k); parallelize(j, cpu_thread, no_races)"),
    (SDDMM, {"B": "csr", "A": "csr"}, "parallelize(i, cpu_thread, no_races)"),
    (SDDMM, {"B": "csr", "A": "csr"}, "parallelize(k, cpu_thread, temporary)"),  # counted, then summed
    (MTTKRP, {"B": "dss"}, "parallelize(i, cpu_thread, no_races)"),
    ("A(i,j) = B(i,j,k) * c(k)", {"B": "dss", "A": "ds"}, "unroll(k, 4); parallelize(i, cpu_thread, no_races)"),
    ("A(i,j) = B(i,j,k) * c(k)", {"B": "dss", "A": "ds"}, "parallelize(i, cpu_thread, atomics)"),  # stored once
]


def _parallel_grid() -> list:
    """Each schedule on every case, both index dtypes and every thread count by default (a stratified sample of
    their combinations); the rest under `-m grid`."""
    return [pytest.param(expression, formats, schedule, *p.values, marks=p.marks,
                         id=f"{expression.split('=')[0].strip()}-{schedule}-{p.values[0]}-"
                            f"{np.dtype(p.values[1]).name}-{p.values[2]}")
            for n, (expression, formats, schedule) in enumerate(PARALLEL)
            for p in stratified((CASES, (np.int32, np.int64), (None, 1, 3)), len(CASES), f"parallel-{n}")]


@pytest.mark.parametrize("expression, formats, schedule, case, index_dtype, threads", _parallel_grid())
def test_a_parallel_schedule_computes_the_expression(expression, formats, schedule, case, index_dtype, threads):
    """Up to reassociation (atomics, temporary): the inputs are multiples of 1/8, so sums are exact."""
    kernel = asp.compile(expression, formats=formats, schedule=schedule, num_threads=threads)
    assert "#pragma omp" in kernel.source
    run_differential(expression, formats, case, np.float64, index_dtype, schedule=schedule, num_threads=threads)


def test_parallel_loops_are_static_openmp_loops_with_the_requested_threads():
    kernel = asp.compile("y(i) = A(i,j) * x(j)", {"A": "csr"}, schedule="parallelize(i, cpu_thread, no_races)",
                         num_threads=2)
    assert "#pragma omp parallel num_threads(2)" in kernel.source and "i_first" in kernel.source  # rows by work
    assert "schedule(runtime)" not in kernel.source
    assert str(kernel.cin) == "∀i @parallel(cpu_thread, no_races) ∀j y(i) += A(i,j) * x(j)"
    atomic = asp.compile("y(i) = A(i,j) * x(j)", {"A": "csc"}, schedule="parallelize(j, cpu_thread, atomics)")
    assert "#pragma omp atomic" in atomic.source
    reduced = asp.compile("y(i) = A(i,j) * x(j)", {"A": "csc"}, schedule="parallelize(j, cpu_thread, temporary)")
    assert "y_copies + (size_t)omp_get_thread_num() * (1 * i_dim)" in reduced.source
    assert "#pragma omp critical" in reduced.source
    unrolled = asp.compile("y(i) = A(i,j) * x(j)", {"A": "csr"}, schedule="unroll(j, 4)")
    assert "#pragma GCC unroll 4" in unrolled.source


def test_no_races_and_temporary_are_deterministic():
    rng = np.random.default_rng(5)
    A = asp.Tensor.from_numpy(rng.random((300, 200)) * (rng.random((300, 200)) < 0.1), format="csc")
    x = rng.random(200)
    for schedule in ("parallelize(j, cpu_thread, temporary)",):
        kernel = asp.compile("y(i) = A(i,j) * x(j)", {"A": "csc"}, schedule=schedule, num_threads=2)
        first = densified(kernel(A=A, x=x))
        for _ in range(5):
            np.testing.assert_array_equal(densified(kernel(A=A, x=x)), first)


@pytest.mark.parametrize("expression, formats, schedule, words", [
    ("y(i) = A(i,j) * x(j)", {"A": "csr"}, "parallelize(j, cpu_thread, no_races)",
     ["parallelize(j)", "no_races over a reduction"]),
    ("y(i) = A(i,j) * x(j)", {"A": "csr"}, "parallelize(i, cpu_thread, no_races); reorder(i, j)",
     ["no command may follow"]),
    ("y(i) = A(i,j) * x(j)", {"A": "csr"}, "parallelize(i, cpu_vector, atomics)", ["SIMD", "atomics"]),
    ("y(i) = A(i,j) * x(j)", {"A": "csr"}, "parallelize(i, gpu_block, no_races)", ["cpu_thread"]),
    ("y(i) = A(i,j) * x(j)", {"A": "csr"}, "parallelize(i, cpu_thread, sometimes)", ["no_races"]),
    ("y(i) = A(i,j) * x(j)", {"A": "csr"}, "parallelize(i, cpu_thread, no_races); parallelize(i, cpu_thread, "
     "no_races)", ["no command may follow"]),
    ("C(i,j) = A(i,j) + B(i,j)", {"A": "csr", "B": "csr", "C": "dense"}, "parallelize(j, cpu_thread, no_races)",
     ["parallelize(j", "sparse positions"]),
    ("y(i) = a(i) + b(i)", {"b": "s"}, "parallelize(i, cpu_thread, no_races)", ["parallelize(i", "co-iterates b(i)"]),
])
def test_broken_parallel_preconditions_are_schedule_errors(expression, formats, schedule, words):
    expect_schedule_error(expression, formats, schedule, words)


@pytest.mark.parametrize("threads", [0, -1, 1.5, True, "2"])
def test_num_threads_must_be_a_positive_integer(threads):
    with pytest.raises(asp.ScheduleError):
        asp.compile("y(i) = A(i,j) * x(j)", {"A": "csr"}, num_threads=threads)
