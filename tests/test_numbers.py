"""Numbers that do not fit (issue 26 §3): literals reach C as constants that read back as exactly the value
numpy computes with, or are refused (RangeError, an OverflowError as numpy's is); int64 kernels wrap on
overflow as numpy's int64 arrays do; schedule integers and num_threads are checked before any C is written.
Every value is compared with numpy applied to the same Python scalar."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from conftest import densified
from autosparse.config import MAX_THREADS
from autosparse.cin import parse_cin
from autosparse.cin.ast import MAX_UNROLL
from autosparse.codegen.literals import c_literal
from autosparse.codegen.printer import operand
from autosparse.notation import Assignment, parse
from autosparse.runtime.compiler import compile_flags
from autosparse.notation.ast import Literal
from autosparse.schedule import Schedule

from kernel_cases import expect_schedule_error

INT64_MIN, INT64_MAX = -2**63, 2**63 - 1
SPMV = "y(i) = A(i,j) * x(j)"


def _with_literal(expression: str, value) -> Assignment:
    """`expression` (whose right side is `left op literal`) with the literal replaced by `value`: the
    parser cannot spell inf, NaN, a negative literal or a complex one."""
    assignment = parse(expression)
    return replace(assignment, rhs=replace(assignment.rhs, right=Literal(value)))


def _numpy(expression: str, a: np.ndarray, value) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return a * value if "*" in expression else a - value


def _operand(dtype) -> np.ndarray:
    values = np.array([1.0, -3.0, 0.5, 7.0, 2.0**52 + 1])
    if np.dtype(dtype).kind == "i":
        values = np.array([1, -3, 2, INT64_MAX, INT64_MIN])
    return values.astype(dtype)


# ----- literals ------------------------------------------------------------------------------------------------

#: (value dtype of the operand, literal): float, int and complex literals at the edges of what C can spell
LITERALS = [
    (np.float64, 0.1), (np.float64, 1e23), (np.float64, 5e-324), (np.float64, 1.7976931348623157e308),
    (np.float64, float("inf")), (np.float64, float("-inf")), (np.float64, float("nan")), (np.float64, -2.5),
    (np.float64, 2**70), (np.float64, 2**53 + 1), (np.float64, INT64_MIN), (np.float64, -7),
    (np.float32, 0.1), (np.float32, 1e40), (np.float32, 16_777_217), (np.float32, -1e-45),
    (np.float32, 2**60 + 2**36 + 1),  # numpy rounds it to a double first, then to float32 (to 2**60)
    (np.int64, 3), (np.int64, INT64_MAX), (np.int64, INT64_MIN), (np.int64, -5),
    (np.int64, 0.1), (np.int64, 2**70 + 0.0),
    (np.complex128, 1 + 2j), (np.complex128, -0.5 - 1e300j), (np.complex128, 2**70),
]


@pytest.mark.parametrize("expression", ["y(i) = a(i) * 2", "y(i) = a(i) - 2"])
@pytest.mark.parametrize("dtype, value", LITERALS, ids=lambda v: np.dtype(v).name if isinstance(v, type) else repr(v))
def test_literal_computes_what_numpy_computes(expression, dtype, value):
    a = _operand(dtype)
    expected = _numpy(expression, a, value)
    result = densified(asp.Kernel(_with_literal(expression, value))(a=a))
    assert result.dtype == expected.dtype
    np.testing.assert_array_equal(result, expected)


def test_a_literal_beyond_int64_in_the_text_is_the_double_numpy_uses():
    """`99999999999999999999999 * x(i)` is 1e23 · x (pasted unchecked it was 2.0e17 · x)."""
    x = np.array([1.0, -2.0, 3.0])
    result = densified(asp.evaluate("y(i) = 99999999999999999999999 * x(i)", x=x))
    np.testing.assert_array_equal(result, 99999999999999999999999 * x)


@pytest.mark.parametrize("dtype, value", [(np.int64, 2**63), (np.int64, INT64_MIN - 1), (np.float64, 10**400),
                                          (np.int64, 10**5000)], ids=["2**63", "-2**63-1", "10**400", "10**5000"])
def test_a_literal_its_kernel_cannot_hold_is_refused_as_numpy_refuses_it(dtype, value):
    a = _operand(dtype)
    with pytest.raises(OverflowError):
        a * value
    with pytest.raises(asp.RangeError) as raised:
        asp.Kernel(_with_literal("y(i) = a(i) * 2", value))(a=a)
    assert isinstance(raised.value, OverflowError)
    assert "literal" in str(raised.value)


@pytest.mark.parametrize("value, value_type, spelled", [
    (3, "int64_t", "INT64_C(3)"),
    (-5, "int64_t", "(-INT64_C(5))"),
    (INT64_MIN, "int64_t", "INT64_MIN"),
    (INT64_MAX, "int64_t", "INT64_C(9223372036854775807)"),
    (3, "double", "3.0"),
    (2**70, "double", "1.1805916207174113e+21"),
    (-0.0, "double", "(-0.0)"),
    (0.1, "float", "((float)0.1)"),
    (float("-inf"), "double", "(-INFINITY)"),
    (float("nan"), "float", "((float)NAN)"),
    (complex(1, float("inf")), "double _Complex", "CMPLX(1.0, INFINITY)"),
    (2, "double _Complex", "CMPLX(2.0, 0.0)"),
])
def test_literal_spelling(value, value_type, spelled):
    assert operand(c_literal(value, value_type)) == spelled


# ----- int64 arithmetic wraps as numpy's does ------------------------------------------------------------------

def test_int64_elementwise_overflow_wraps_like_numpy():
    a = np.array([INT64_MAX, INT64_MIN, 2**62, -7], dtype=np.int64)
    b = np.array([2, -1, 4, 3], dtype=np.int64)
    c = np.array([INT64_MIN, 1, -1, INT64_MAX], dtype=np.int64)
    result = densified(asp.evaluate("y(i) = -a(i) * b(i) - c(i)", a=a, b=b, c=c))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(result, -a * b - c)


@pytest.mark.parametrize("openmp", [False, True])
@pytest.mark.parametrize("sanitize", [False, True])
@pytest.mark.parametrize("contract", [False, True])
def test_int64_overflow_is_defined_behaviour_in_every_kernel_build(openmp, sanitize, contract):
    """Equal values above may be luck: without -fwrapv a signed overflow is undefined, and the optimiser
    may assume it never happens."""
    assert "-fwrapv" in compile_flags(openmp, sanitize, contract)


def test_int64_sparse_reduction_overflow_wraps_like_numpy():
    dense = np.array([[INT64_MAX, 0, 2**62], [0, INT64_MIN, 0], [3, 5, INT64_MAX]], dtype=np.int64)
    x = np.array([3, -2, 4], dtype=np.int64)
    y = densified(asp.evaluate(SPMV, A=sp.csr_array(dense), x=x))
    np.testing.assert_array_equal(y, dense @ x)
    total = asp.evaluate("s() = a(i) * b(i)", a=dense.ravel(), b=np.repeat(x, 3))
    assert total == int(np.sum(dense.ravel() * np.repeat(x, 3)))


# ----- schedule integers ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("schedule, words", [
    (f"split(i, i0, i1, {2**70})", ["split(i)", "positive integer", str(INT64_MAX)]),
    (f"split(i, i0, i1, {2**63})", ["split(i)", "positive integer"]),
    (f"divide(i, i0, i1, {2**63})", ["divide(i)", "positive integer"]),
    (f"bound(i, ib, {2**63}, max_constraint)", ["bound(i)", "positive integer"]),
    (f"unroll(i, {MAX_UNROLL + 1})", ["unroll(i)", str(MAX_UNROLL)]),
    ("unroll(i, 0)", ["unroll(i)", "positive integer"]),
    (Schedule().split("i", "i0", "i1", 2**70), ["split(i)", "positive integer"]),
])
def test_schedule_integer_out_of_range_is_a_schedule_error(schedule, words):
    expect_schedule_error(SPMV, {"A": "csr"}, schedule, words)


@pytest.mark.parametrize("schedule", [f"split(i, i0, i1, {INT64_MAX})", f"bound(i, ib, {INT64_MAX}, max_constraint)",
                                      f"split(i, i0, i1, {INT64_MAX}); reorder(i1, i0)",
                                      f"unroll(i, {MAX_UNROLL})"])
def test_schedule_integer_at_the_limit_computes_spmv(schedule):
    """The tile count ⌈N / s⌉ must not overflow for s near 2⁶³ (N + s - 1 would)."""
    matrix = sp.random(5, 4, density=0.5, format="csr", random_state=3)
    x = np.arange(1.0, 5.0)
    y = densified(asp.compile(SPMV, {"A": "csr"}, schedule=schedule)(A=matrix, x=x))
    np.testing.assert_allclose(y, matrix @ x)


@pytest.mark.parametrize("factor", [str(MAX_UNROLL + 1), "0", "1.5"])
def test_cin_unroll_factor_out_of_range_is_a_parse_error(factor):
    text = f"∀i @unroll({factor}) y(i) = x(i)"
    with pytest.raises(asp.ParseError) as raised:
        parse_cin(text, {"x": asp.Format("d"), "y": asp.Format("d")})
    assert raised.value.column == text.index(factor) + 1


# ----- num_threads ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("threads", [0, -1, True, 1.5, "2", MAX_THREADS + 1, 100_000])
def test_num_threads_out_of_range_is_refused_before_compiling(threads):
    with pytest.raises(asp.ScheduleError, match="num_threads"):
        asp.compile(SPMV, {"A": "csr"}, schedule="parallelize(i, cpu_thread, no_races)", num_threads=threads)


def test_num_threads_is_checked_by_distributed_evaluation():
    from autosparse.distributed.evaluate import prepare

    with pytest.raises(asp.ScheduleError, match="num_threads"):
        prepare(SPMV, parts=2, num_threads=MAX_THREADS + 1, A=sp.eye(4, format="csr"), x=np.ones(4))


@pytest.mark.parametrize("threads", [MAX_THREADS, np.int64(3)])
def test_num_threads_in_range_run(threads):
    matrix = sp.random(40, 30, density=0.2, format="csr", random_state=5)
    x = np.ones(30)
    kernel = asp.compile(SPMV, {"A": "csr"}, schedule="parallelize(i, cpu_thread, no_races)", num_threads=threads)
    assert f"num_threads({int(threads)})" in kernel.source
    np.testing.assert_allclose(densified(kernel(A=matrix, x=x)), matrix @ x)
