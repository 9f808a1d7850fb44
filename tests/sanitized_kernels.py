"""A slice of the kernel grid for the sanitizer run: not collected by default (its name is not test_*).

test_sanitizer.py runs this module in a Python that has AddressSanitizer's runtime preloaded and
AUTOSPARSE_SANITIZE=1, so every kernel below is built with ASan and UBSan and any out-of-bounds access
or undefined behaviour on valid input ends the run with a report. The slice covers each expression
family once per level kind (dense, compressed, singleton/COO, hashed) with empty, size-1 and
explicit-zero inputs, a few hand-scheduled kernels (threads, workspaces, tiles, positions, searches)
and autoscheduled ones; the values are checked against numpy as in test_kernels.py. Compiling
dominates its time, so each entry is a distinct kernel and the cases reuse it.
"""

from __future__ import annotations

import numpy as np
import pytest

import autosparse as asp
from kernel_cases import (_peer_math_guard, build_operand, check_result, cyclic, format_id,  # noqa: F401
                          make_inputs, read_statement, reference, run_differential)

CASES = ("empty", "size-1", "explicit-zero")

SPMV = "y(i) = A(i,j) * x(j)"
SPGEMM = "C(i,j) = A(i,k) * B(k,j)"

# (expression, formats): every family, each level kind among its operands and results
UNSCHEDULED = (
    ("B(i,j) = A(i,j)", {"A": "coo", "B": "csr"}),
    ("B(i,j) = A(i,j)", {"A": "dh", "B": "dcsr"}),
    ("B(i,j) = A(i,j)", {"A": "csc", "B": "coo"}),
    ("B(i,j) = A(i,j)", {"A": "csr", "B": "dh"}),
    ("C(i,j) = A(i,j) + B(i,j)", {"A": "csr", "B": "coo", "C": "dcsr"}),
    ("C(i,j) = A(i,j) + B(i,j)", {"A": "dh", "B": "dense", "C": "csr"}),
    ("C(i,j) = A(i,j) - B(i,j)", {"A": "dcsr", "B": "sd", "C": "dense"}),
    ("C(i,j) = A(i,j) * B(i,j)", {"A": "coo", "B": "dh", "C": "coo"}),
    ("C(i,j) = A(i,j) * B(i,j)", {"A": "csr", "B": "dcsr", "C": "csr"}),
    ("D(i) = A(i) * B(i) + C(i)", {"A": "s", "B": "h", "C": "u", "D": "s"}),
    ("a() = b(i) * c(i)", {"b": "u", "c": "h"}),
    (SPMV, {"A": "csr", "x": "d", "y": "d"}),
    (SPMV, {"A": "coo", "x": "s", "y": "s"}),
    (SPMV, {"A": "dh", "x": "u", "y": "d"}),
    (SPMV, {"A": "dcsc", "x": "d", "y": "d"}),
    ("C(i,k) = A(i,j) * B(j,k)", {"A": "dcsr", "B": "dense", "C": "csr"}),
    (SPGEMM, {"A": "csr", "B": "csr", "C": "csr"}),
    (SPGEMM, {"A": "coo", "B": "dcsr", "C": "dense"}),
    (SPGEMM, {"A": "dh", "B": "csr", "C": "dcsr"}),
    (SPGEMM, {"A": "csc", "B": "csc", "C": "csc"}),
    ("A(i,j) = B(i,j) * C(i,k) * D(k,j)", {"B": "csr", "C": "dense", "D": "d1d0", "A": "csr"}),
    ("A(i,j) = B(i,j) * C(i,k) * D(k,j)", {"B": "coo", "C": "dense", "D": "dense", "A": "coo"}),
    ("A(i,j) = B(i,j,k) * c(k)", {"B": "csf", "c": "s", "A": "dcsr"}),
    ("A(i,j) = B(i,j,k) * c(k)", {"B": "ddh", "c": "d", "A": "csr"}),
    ("A(i,j,k) = B(i,j,l) * C(k,l)", {"B": "coo", "C": "csr", "A": "csf"}),
    ("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", {"B": "csf", "C": "dense", "D": "dense", "A": "dense"}),
    ("a() = B(i,j,k) * C(i,j,k)", {"B": "csf", "C": "ddh"}),
    ("A(i,j) = 2 * B(i,j)", {"B": "coo", "A": "csr"}),
    # sums scoped to part of the right-hand side: a register, a dense and a hashed workspace per where
    ("y(i) = A(i,j) * x(j) + z(i)", {"A": "csr", "z": "s", "y": "s"}),
    ("a(i) = b(i) + C(j,i) + d(i)", {"C": "csr", "b": "u", "a": "s"}),
    ("C(i,j) = A(i,k) * B(k,j) + D(i,j)", {"A": "csr", "B": "csr", "D": "coo", "C": "csr"}),
    ("C(i,j) = D(i,j) + A(j,k) * B(k,i)", {"A": "csr", "B": "csr", "D": "csr", "C": "csr"}),
)

# (expression, formats, schedule): code paths that only schedules reach
SCHEDULED = (
    (SPMV, {"A": "csr"}, "parallelize(i, cpu_thread, no_races)"),
    (SPMV, {"A": "csr"}, "collapse(i, j, f); pos(f, fp, A(i,j)); split(fp, p0, p1, 4); "
                         "parallelize(p0, cpu_thread, atomics)"),
    (SPMV, {"A": "csr", "x": "s", "y": "s"}, "coiterate(j, gallop)"),
    (SPMV, {"A": "csr", "x": "s", "y": "s"}, "coiterate(j, hash)"),
    (SPGEMM, {"A": "csr", "B": "csr", "C": "csr"}, "precompute(A(i,k) * B(k,j), j, jw, h)"),
    (SPGEMM, {"A": "csr", "B": "csr", "C": "csr"}, "parallelize(i, cpu_thread, no_races)"),
    (SPGEMM, {"A": "csr", "B": "dense", "C": "dense"}, "split(i, i0, i1, 2); parallelize(i0, cpu_thread, no_races)"),
    ("y(i) = A(i,j) * x(j) + z(i)", {"A": "csr"}, "parallelize(i, cpu_thread, no_races)"),
)

# (expression, formats, model): every candidate on the autoscheduler's frontier (small frontiers only)
AUTOSCHEDULED = (
    (SPGEMM, {"A": "csr", "B": "csr", "C": "csr"}, "asymptotic"),
    (SPMV, {"A": "csr", "x": "s", "y": "s"}, "asymptotic"),
    ("y(i) = A(i,j) * x(j) + z(i)", {"A": "csr"}, "asymptotic"),
    ("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", {"B": "csf", "A": "dense"}, "sparseauto"),
)


def _frontier(expression: str, formats: dict, model: str) -> list:
    return list(asp.autoschedule(expression, formats=formats, model=model))


def _params():
    for expression, formats in UNSCHEDULED:
        assert not cyclic(expression, formats) or asp.notation.parse(expression).scoped, (expression, formats)
        ident = format_id(formats, read_statement(expression).lhs.name)
        yield from (pytest.param(expression, formats, None, case, id=f"{ident}-{case}") for case in CASES)
    for expression, formats, schedule in SCHEDULED:
        ident = f"{format_id(formats, read_statement(expression).lhs.name)}-{schedule}"
        yield from (pytest.param(expression, formats, schedule, case, id=f"{ident}-{case}") for case in CASES)
    for expression, formats, model in AUTOSCHEDULED:
        ident = format_id(formats, read_statement(expression).lhs.name)
        for n, candidate in enumerate(_frontier(expression, formats, model)):
            yield from (pytest.param(expression, formats, candidate, case, id=f"{ident}-{model}{n}-{case}")
                        for case in CASES)


@pytest.mark.parametrize("expression, formats, schedule, case", list(_params()))
def test_sanitized_kernel_matches_numpy(expression, formats, schedule, case):
    run_differential(expression, formats, case, np.float64, np.int32, schedule=schedule, num_threads=2)


@pytest.mark.parametrize("case", CASES)
def test_sanitized_selection_matches_numpy(case):
    """evaluate(..., schedule="auto"): the candidate selected for the inputs, co-iterating as `auto` picks."""
    statement = read_statement(SPGEMM)
    inputs = make_inputs(statement, case, np.float64)
    operands = {name: build_operand(inputs, name, "csr", np.int32, case == "explicit-zero") for name in "AB"}
    expected = reference(statement, inputs.arrays, inputs.extents)
    result = asp.evaluate(SPGEMM, format="csr", schedule="auto", **operands)
    check_result(result, expected, np.abs(expected), np.float64, "csr", np.dtype(np.int32))
