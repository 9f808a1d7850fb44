"""Kernels of functions, non-sum reductions and fills (min-plus, max-times, masks), against numpy on dense
copies built with the operands' fills: `np.where(stored, values, fill)`."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import autosparse as asp
from autosparse.cin import parse_cin
from autosparse.cin.ast import accesses, assignments
from autosparse.cin.rewrite import without
from autosparse.errors import ScheduleError

INF = np.inf
MIN_PLUS = "y(i) = min(j, A(i,j) + x(j))"


def test_a_min_assignment_prints_and_parses_back_with_its_fills():
    text = "∀i ∀j y(i) min= A(i,j) + x(j)"
    stmt = parse_cin(text, {"y": "d", "A": "csr", "x": "d"}, {"A": INF, "y": INF})
    (assign,) = assignments(stmt)
    assert str(stmt) == text
    assert (assign.reduce, assign.accumulate, assign.lhs.tensor.fill) == ("minimum", True, INF)
    assert accesses(assign.rhs)[0].tensor.fill == INF


def test_without_folds_absent_fills_through_the_laws():
    formats = {"y": "s", "A": "s", "B": "s"}
    (plus,) = assignments(parse_cin("∀i y(i) = A(i) + B(i)", formats, {"A": INF, "B": INF, "y": INF}))
    a, b = accesses(plus.rhs)
    assert without(plus, [a]) is None  # +inf annihilates +: the result keeps its fill
    (most,) = assignments(parse_cin("∀i y(i) = maximum(A(i), B(i))", formats))
    a, b = accesses(most.rhs)
    assert str(without(most, [a])) == "y(i) = maximum(0, B(i))"  # 0 is no identity of maximum
    assert without(most, [a, b]) is None
    (shifted,) = assignments(parse_cin("∀i y(i) = exp(A(i))", formats))
    assert str(without(shifted, accesses(shifted.rhs))) == "y(i) = 1.0"  # exp(0) is not y's fill


def _filled(rng, shape, density, fill, low=-2.0, high=3.0):
    """A dense array of `fill` with about `density` of its entries random values."""
    stored = rng.random(shape) < density
    return np.where(stored, rng.uniform(low, high, shape).round(2), fill)


def _dense(result):
    return result.to_numpy() if isinstance(result, asp.Tensor) else np.asarray(result)


def _check(text, expected, num_threads=1, **operands):
    result = asp.evaluate(text, num_threads=num_threads, **operands)
    np.testing.assert_allclose(_dense(result), expected)
    return result


@pytest.mark.parametrize("fmt", ["dense", "csr", "csc", "dcsr", "coo"])
@pytest.mark.parametrize("threads", [1, 2])
def test_min_plus_spmv(fmt, threads):
    rng = np.random.default_rng(1)
    A, x = _filled(rng, (7, 5), 0.4, INF), rng.uniform(0, 2, 5)
    A[2] = INF  # a row of fills only: its minimum is the fill
    _check(MIN_PLUS, np.min(A + x, axis=1), threads, A=asp.Tensor.from_numpy(A, fmt, fill=INF), x=x)


def test_min_plus_spmv_with_a_sparse_vector_of_fill_inf():
    rng = np.random.default_rng(2)
    A, x = _filled(rng, (6, 8), 0.5, INF), _filled(rng, 8, 0.5, INF)
    result = _check(MIN_PLUS, np.min(A + x, axis=1), A=asp.Tensor.from_numpy(A, "csr", fill=INF),
                    x=asp.Tensor.from_numpy(x, "s", fill=INF))
    assert not isinstance(result, asp.Tensor) or result.fill == INF


@pytest.mark.parametrize("shape", [(1, 1), (3, 1), (1, 4), (0, 3), (3, 0)])
def test_min_plus_spmv_of_size_one_and_empty_dimensions(shape):
    rng = np.random.default_rng(3)
    A, x = _filled(rng, shape, 0.5, INF), rng.uniform(0, 2, shape[1])
    expected = np.min(A + x, axis=1) if shape[1] else np.full(shape[0], INF)
    _check(MIN_PLUS, expected, A=asp.Tensor.from_numpy(A, "csr", fill=INF), x=x)


@pytest.mark.parametrize("entries", [[], [(1, 2, -1.5)]])
def test_min_plus_spmv_of_no_entry_and_of_one(entries):
    A = np.full((3, 4), INF)
    for i, j, v in entries:
        A[i, j] = v
    x = np.arange(4.0)
    _check(MIN_PLUS, np.min(A + x, axis=1), A=asp.Tensor.from_numpy(A, "dcsr", fill=INF), x=x)


def test_min_plus_spmv_reads_a_stored_fill_as_its_value():
    A = asp.Tensor.from_coo([[0, 0, 1], [0, 1, 1]], [INF, 2.0, INF], (2, 3), "csr", fill=INF)
    assert A.nnz == 3
    _check(MIN_PLUS, [3.0, INF], A=A, x=np.ones(3))


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.floats(0, 1), st.integers(0, 2**32 - 1),
       st.sampled_from(["csr", "dcsr", "coo"]), st.sampled_from([np.int32, np.int64]))
def test_min_plus_spmv_on_random_inputs(m, n, density, seed, fmt, index_dtype):
    rng = np.random.default_rng(seed)
    A, x = _filled(rng, (m, n), density, INF), rng.uniform(-1, 1, n)
    _check(MIN_PLUS, np.min(A + x, axis=1), A=asp.Tensor.from_numpy(A, fmt, index_dtype, fill=INF), x=x)


@pytest.mark.parametrize("fmt", ["csr", "dcsr", "dense"])
def test_max_times_spmv_counts_the_absent_zeros(fmt):
    rng = np.random.default_rng(4)
    A, x = _filled(rng, (6, 5), 0.5, 0.0, -3.0, -1.0), rng.uniform(1, 2, 5)
    A[1] = -1.0  # a full row of negative products: its maximum is below the fill
    _check("y(i) = max(j, A(i,j) * x(j))", np.max(A * x, axis=1), A=asp.Tensor.from_numpy(A, fmt), x=x)


@pytest.mark.parametrize("fmts", [("csr", "csr"), ("dcsr", "coo"), ("csr", "dense")])
def test_element_wise_maximum_over_fill_0_is_a_union(fmts):
    rng = np.random.default_rng(5)
    A, B = _filled(rng, (5, 4), 0.4, 0.0), _filled(rng, (5, 4), 0.4, 0.0)
    result = _check("C(i,j) = maximum(A(i,j), B(i,j))", np.maximum(A, B), A=asp.Tensor.from_numpy(A, fmts[0]),
                    B=asp.Tensor.from_numpy(B, fmts[1]))
    assert not isinstance(result, asp.Tensor) or result.fill == 0


def test_element_wise_minimum_over_fill_inf_keeps_it():
    rng = np.random.default_rng(6)
    A, B = _filled(rng, (4, 6), 0.4, INF), _filled(rng, (4, 6), 0.4, INF)
    result = _check("C(i,j) = minimum(A(i,j), B(i,j))", np.minimum(A, B),
                    A=asp.Tensor.from_numpy(A, "csr", fill=INF), B=asp.Tensor.from_numpy(B, "csr", fill=INF))
    assert isinstance(result, asp.Tensor) and result.fill == INF


@pytest.mark.parametrize("fmt", ["csr", "coo", "dense"])
def test_abs(fmt):
    rng = np.random.default_rng(7)
    A = _filled(rng, (4, 5), 0.5, 0.0)
    _check("C(i,j) = abs(A(i,j))", np.abs(A), A=asp.Tensor.from_numpy(A, fmt))


def test_where_picks_by_a_condition_of_fill_0():
    rng = np.random.default_rng(8)
    M, A, B = (_filled(rng, (5, 5), 0.5, 0.0) for _ in range(3))
    _check("C(i,j) = where(M(i,j), A(i,j), B(i,j))", np.where(M != 0, A, B),
           M=asp.Tensor.from_numpy(M, "csr"), A=asp.Tensor.from_numpy(A, "csr"), B=asp.Tensor.from_numpy(B, "csr"))


@pytest.mark.parametrize("fmts", [("csr", "csr", "csr"), ("dcsr", "csr", "dense"), ("csr", "dense", "csr")])
def test_masked_spgemm(fmts):
    rng = np.random.default_rng(9)
    M, A, B = _filled(rng, (5, 6), 0.3, 0.0), _filled(rng, (5, 4), 0.5, 0.0), _filled(rng, (4, 6), 0.5, 0.0)
    M[0, 0] = 0.5  # a stored entry counts whatever its value: the mask is M's pattern
    _check("C(i,j) = pattern(M(i,j)) * A(i,k) * B(k,j)", (M != 0) * (A @ B), M=asp.Tensor.from_numpy(M, fmts[0]),
           A=asp.Tensor.from_numpy(A, fmts[1]), B=asp.Tensor.from_numpy(B, fmts[2]))


def test_complemented_masks():
    """`logical_not(pattern(M))` has fill 1: M does not bound the loops, its entries only cancel terms."""
    rng = np.random.default_rng(10)
    M, A, B = _filled(rng, (5, 6), 0.5, 0.0), _filled(rng, (5, 6), 0.6, 0.0), _filled(rng, (6, 6), 0.5, 0.0)
    mask = asp.Tensor.from_numpy(M, "csr")
    _check("C(i,j) = logical_not(pattern(M(i,j))) * A(i,j)", (M == 0) * A, M=mask, A=asp.Tensor.from_numpy(A, "csr"))
    _check("C(i,j) = logical_not(pattern(M(i,j))) * A(i,k) * B(k,j)", (M == 0) * (A @ B), M=mask,
           A=asp.Tensor.from_numpy(A, "csr"), B=asp.Tensor.from_numpy(B, "csr"))


def test_hand_written_min_cin_compiles():
    rng = np.random.default_rng(11)
    A, x = _filled(rng, (5, 4), 0.5, INF), rng.uniform(0, 1, 4)
    kernel = asp.Kernel(MIN_PLUS, {"A": "csr", "x": "d", "y": "d"}, schedule="∀i ∀j y(i) min= A(i,j) + x(j)",
                        fills={"A": INF})
    assert "min=" in str(kernel.cin)
    np.testing.assert_allclose(_dense(kernel(A=asp.Tensor.from_numpy(A, "csr", fill=INF), x=x)), np.min(A + x, 1))


def test_atomics_with_a_minimum_are_refused_naming_the_rule():
    kernel = asp.Kernel(MIN_PLUS, {"A": "csc", "x": "d", "y": "d"}, fills={"A": INF},
                        schedule="∀j @parallel(cpu_thread, atomics) ∀i y(i) min= A(i,j) + x(j)")
    with pytest.raises(ScheduleError, match="race=atomics only for sums.*minimum"):
        kernel.source


@pytest.mark.parametrize("fill", [1.0, INF])
def test_a_sum_over_a_fill_it_does_not_drop_visits_every_entry(fill):
    A = np.array([[1.0, fill, 2.0], [fill, fill, fill]])
    _check("y(i) = sum(j, A(i,j))", A.sum(1), A=asp.Tensor.from_numpy(A, "csr", fill=fill))


@pytest.mark.parametrize("schedule, fmt", [("parallelize(i, cpu_thread, no_races)", "csr"),
                                           ("parallelize(j, cpu_thread, temporary)", "dense")])
def test_min_plus_spmv_on_two_threads(schedule, fmt):
    rng = np.random.default_rng(12)
    A, x = _filled(rng, (9, 40), 0.3, INF), rng.uniform(0, 2, 40)
    kernel = asp.Kernel(MIN_PLUS, {"A": fmt, "x": "d"}, schedule=schedule, num_threads=2, fills={"A": INF})
    assert "omp" in kernel.source
    np.testing.assert_allclose(_dense(kernel(A=asp.Tensor.from_numpy(A, fmt, fill=INF), x=x)), np.min(A + x, 1))


def test_prod_over_a_fill_of_1_and_the_logical_reductions():
    rng = np.random.default_rng(13)
    A = _filled(rng, (5, 6), 0.5, 1.0, 0.5, 2.0)
    _check("y(i) = prod(j, A(i,j))", np.prod(A, 1), A=asp.Tensor.from_numpy(A, "csr", fill=1.0))
    M, q = (rng.random((5, 6)) < 0.3) * 1.0, (rng.random(6) < 0.5) * 1.0
    M[4] = 1.0  # a full row: all() holds there
    operands = dict(A=asp.Tensor.from_numpy(M, "csr"), q=asp.Tensor.from_numpy(q, "s"))
    _check("y(i) = any(j, logical_and(A(i,j), q(j)))", np.any(np.logical_and(M, q), 1), **operands)
    _check("y(i) = all(j, A(i,j))", np.all(M, 1), A=operands["A"])


def test_a_loop_skips_the_fills_that_annihilate_and_visits_those_that_do_not():
    """min-plus over +inf steps A's entries; max-times over 0 must see the absent zeros: a dense j loop."""
    sparse = asp.Kernel(MIN_PLUS, {"A": "csr", "x": "d"}, fills={"A": INF}, num_threads=1).source
    dense = asp.Kernel("y(i) = max(j, A(i,j) * x(j))", {"A": "csr", "x": "d"}, num_threads=1).source
    assert "j_ < j_dim" not in sparse and "j_ < j_dim" in dense


@pytest.mark.parametrize("fmts", [("csr", "csr"), ("dcsr", "dcsr"), ("csr", "dense")])
def test_min_plus_spgemm_through_a_workspace_of_fill_inf(fmts):
    rng = np.random.default_rng(14)
    A, B = _filled(rng, (6, 5), 0.4, INF), _filled(rng, (5, 7), 0.4, INF)
    _check("C(i,j) = min(k, A(i,k) + B(k,j))", np.min(A[:, :, None] + B[None, :, :], axis=1),
           A=asp.Tensor.from_numpy(A, fmts[0], fill=INF), B=asp.Tensor.from_numpy(B, fmts[1], fill=INF))


def test_minimum_and_maximum_propagate_nan_as_numpy_does():
    A = np.array([[np.nan, 1.0, INF], [2.0, INF, np.nan]])
    B = np.array([[0.5, np.nan, INF], [INF, 3.0, 1.0]])
    operands = dict(A=asp.Tensor.from_numpy(A, "csr", fill=INF), B=asp.Tensor.from_numpy(B, "csr", fill=INF))
    _check("C(i,j) = minimum(A(i,j), B(i,j))", np.minimum(A, B), **operands)
    _check("C(i,j) = maximum(A(i,j), B(i,j))", np.maximum(A, B), **operands)


@pytest.mark.parametrize("fmt", ["csr", "dense"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_min_and_max_reductions_propagate_nan_wherever_it_stands_in_a_row(fmt, dtype):
    """A reduction's accumulation is the function's C (`isunordered(a, b) ? a + b : ...`): a NaN first, last or
    between entries is kept, as numpy's minimum.reduce keeps it, and a row without one takes its least value."""
    A = np.array([[np.nan, 1.0, 2.0, INF], [2.0, np.nan, 0.5, INF], [3.0, 1.0, -1.0, np.nan], [4.0, 1.0, -2.0, INF],
                  [INF, INF, INF, INF]], dtype=dtype)
    x = np.array([0.0, 1.0, -0.5, 2.0], dtype=dtype)
    tensor = asp.Tensor.from_numpy(A, fmt, fill=INF)
    _check("y(i) = min(j, A(i,j) + x(j))", np.min(A + x, axis=1), A=tensor, x=x)
    below = np.where(A == INF, -INF, A)
    _check("y(i) = max(j, A(i,j))", np.max(below, axis=1), A=asp.Tensor.from_numpy(below, fmt, fill=-INF))


@pytest.mark.parametrize("fmt", ["csc", "coo"])
def test_min_plus_spmv_on_threads_with_copies_of_the_result(fmt):
    """Columns (or entries) dealt to threads write every row: each thread's copy starts at +inf, the
    copies are combined by the minimum."""
    rng = np.random.default_rng(15)
    A, x = _filled(rng, (12, 30), 0.3, INF), rng.uniform(0, 2, 30)
    loop = "j" if fmt == "csc" else "i"
    cin = f"∀{loop} @parallel(cpu_thread, temporary) ∀{'i' if loop == 'j' else 'j'} y(i) min= A(i,j) + x(j)"
    kernel = asp.Kernel(MIN_PLUS, {"A": fmt, "x": "d", "y": "d"}, schedule=cin, num_threads=2, fills={"A": INF})
    assert "omp critical" in kernel.source
    np.testing.assert_allclose(_dense(kernel(A=asp.Tensor.from_numpy(A, fmt, fill=INF), x=x)), np.min(A + x, 1))


@pytest.mark.parametrize("fmt", ["s", "dense"])
def test_a_sparse_divisor_of_a_fill_other_than_0_divides_by_it(fmt):
    A, B = np.array([0.0, 1.0, 0.0, 3.0, 4.0]), np.array([2.0, 2.0, 5.0, 2.0, 8.0])
    _check("y(i) = A(i) / B(i)", A / B, A=asp.Tensor.from_numpy(A, fmt), B=asp.Tensor.from_numpy(B, "s", fill=2.0))
    with pytest.raises(ScheduleError, match="divisions by zero"):
        asp.evaluate("y(i) = A(i) / B(i)", A=asp.Tensor.from_numpy(A, fmt), B=asp.Tensor.from_numpy(B - 2.0, "s"))


def test_a_logical_or_with_an_absent_operand_is_still_0_or_1():
    A, B = np.array([[0.0, 3.0, 0.0, 2.0]]), np.array([[0.0, 0.0, 5.0, 4.0]])
    _check("C(i,j) = logical_or(A(i,j), B(i,j))", np.logical_or(A, B), A=asp.Tensor.from_numpy(A, "csr"),
           B=asp.Tensor.from_numpy(B, "csr"))
