"""Parallel row loops dealt by work (issue 30, round 3): a parallel loop over the rows of CSR-like operands
gives each thread a contiguous run of rows holding about an equal share of rows plus stored entries (a
binary search in the operands' pos), so skewed rows do not leave one thread most of the work. Each kernel
whose loop is dealt so is checked against numpy on dense copies at 1, 2 and 3 threads (more threads than
rows included), on skewed inputs (one dense row, empty rows, a single entry), uniform ones, empty and
size-1 matrices and ones with no rows, with int32 and int64 indices."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp

THREADS = (1, 2, 3)
SPMV = "y(i) = A(i,j) * x(j)"
SPMV_Z = "y(i) = A(i,j) * x(j) + z(i)"
SPMM = "C(i,k) = A(i,j) * B(j,k)"
SDDMM = "C(i,j) = A(i,j) * B(i,k) * D(k,j)"
SPGEMM = "C(i,j) = A(i,k) * B(k,j)"
ADD = "C(i,j) = A(i,j) + B(i,j)"


def _skewed(rows, cols, seed):
    """Row 0 dense, every third row empty, the rest with a few entries."""
    rng = np.random.default_rng(seed)
    dense = np.where(rng.random((rows, cols)) < 0.1, rng.random((rows, cols)), 0.0)
    dense[0] = rng.random(cols) + 0.5
    dense[1::3] = 0.0
    return dense


def _uniform(rows, cols, seed):
    rng = np.random.default_rng(seed)
    return np.where(rng.random((rows, cols)) < 0.2, rng.random((rows, cols)), 0.0)


def _single(rows, cols, seed):
    dense = np.zeros((rows, cols))
    dense[rows - 1, cols // 2] = 2.5
    return dense


SHAPES = {"skewed": (_skewed, 40, 30), "uniform": (_uniform, 37, 23), "single entry": (_single, 5, 4),
          "empty": (lambda r, c, s: np.zeros((r, c)), 6, 5), "no rows": (lambda r, c, s: np.zeros((r, c)), 0, 5),
          "size 1": (_uniform, 1, 1),
          "fewer rows than threads": (_skewed, 2, 7)}


def _csr(dense, index_dtype, explicit_zero=False):
    matrix = sp.csr_array(dense)
    if explicit_zero and matrix.nnz:
        matrix.data[0] = 0.0
    matrix.indptr, matrix.indices = matrix.indptr.astype(index_dtype), matrix.indices.astype(index_dtype)
    return asp.Tensor.from_scipy(matrix), matrix.toarray()


CASES = [(shape, dtype) for shape in SHAPES for dtype in (np.int32, np.int64)]


def _operand(shape, dtype, seed, explicit_zero=False):
    make, rows, cols = SHAPES[shape]
    return _csr(make(rows, cols, seed), dtype, explicit_zero)


def _run(expression, formats, operands, threads):
    """The result of the default kernel on `threads` threads, checked to have run on them (conftest lets
    small operands run in parallel)."""
    kernel = asp.compile(expression, formats, num_threads=threads)
    result = kernel(**operands)
    assert kernel.ran_parallel == (threads > 1)
    return result


def _values(result):
    return result.to_numpy() if isinstance(result, asp.Tensor) else np.asarray(result)


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("shape, dtype", CASES)
def test_spmv_and_spmv_plus_z(shape, dtype, threads):
    A, a = _operand(shape, dtype, 1, explicit_zero=True)
    rng = np.random.default_rng(2)
    x, z = rng.random(a.shape[1]), rng.random(a.shape[0])
    np.testing.assert_allclose(_values(_run(SPMV, {"A": "csr"}, {"A": A, "x": x}, threads)), a @ x)
    np.testing.assert_allclose(_values(_run(SPMV_Z, {"A": "csr"}, {"A": A, "x": x, "z": z}, threads)), a @ x + z)


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("shape, dtype", CASES)
def test_spmm(shape, dtype, threads):
    A, a = _operand(shape, dtype, 3)
    B = np.random.default_rng(4).random((a.shape[1], 5))
    np.testing.assert_allclose(_values(_run(SPMM, {"A": "csr"}, {"A": A, "B": B}, threads)), a @ B)


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("shape, dtype", CASES)
def test_sddmm(shape, dtype, threads):
    A, a = _operand(shape, dtype, 5)
    rng = np.random.default_rng(6)
    B, D = rng.random((a.shape[0], 3)), rng.random((3, a.shape[1]))
    result = _run(SDDMM, {"A": "csr", "C": "csr"}, {"A": A, "B": B, "D": D}, threads)
    np.testing.assert_allclose(_values(result), a * (B @ D))


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("result_format", ["csr", "ds~"])
@pytest.mark.parametrize("shape, dtype", CASES)
def test_spgemm_sorted_and_unsorted(shape, dtype, result_format, threads):
    A, a = _operand(shape, dtype, 7)
    B, b = _csr(_skewed(a.shape[1], 9, 8), dtype)
    result = _run(SPGEMM, {"A": "csr", "B": "csr", "C": result_format}, {"A": A, "B": B}, threads)
    np.testing.assert_allclose(_values(result), a @ b)
    product = result.to_scipy()
    assert product.indptr[-1] == len(product.indices) == len(product.data)  # exactly sized, no gap between rows


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("shape, dtype", CASES)
def test_add(shape, dtype, threads):
    A, a = _operand(shape, dtype, 9)
    B, b = _csr(_uniform(*a.shape, 10), dtype)
    result = _run(ADD, {"A": "csr", "B": "csr", "C": "csr"}, {"A": A, "B": B}, threads)
    np.testing.assert_allclose(_values(result), a + b)


# ----- generated-code shape --------------------------------------------------------------------------------

@pytest.mark.parametrize("expression, formats", [(SPMV, {"A": "csr"}), (SPMM, {"A": "csr"}),
                                                 (SDDMM, {"A": "csr", "C": "csr"}),
                                                 (SPGEMM, {"A": "csr", "B": "csr", "C": "csr"}),
                                                 (SPGEMM, {"A": "csr", "B": "csr", "C": "ds~"})])
def test_a_parallel_row_loop_over_csr_is_dealt_by_work(expression, formats):
    source = asp.compile(expression, formats, num_threads=2).source
    assert "int64_t i_first = 0;" in source and "const int64_t i_work = i_dim + A_pos2[i_dim] - i_work0;" in source
    assert "#pragma omp for" not in source and "schedule(static)" not in source


def test_both_operands_of_a_parallel_sum_weigh_their_rows():
    source = asp.compile(ADD, {"A": "csr", "B": "csr", "C": "csr"}, num_threads=2).source
    if "#pragma omp" not in source:
        pytest.skip("the sum is not chosen parallel")
    assert "A_pos2[i_dim]" in source and "B_pos2[i_dim]" in source and "i_first" in source


def test_one_thread_has_no_split():
    assert "i_first" not in asp.compile(SPMV, {"A": "csr"}, num_threads=1).source


def test_a_loop_over_dense_rows_keeps_the_static_schedule():
    source = asp.compile("y(i) = A(i,j) * x(j)", {"A": "dd"}, num_threads=2).source
    assert "schedule(static)" in source and "i_first" not in source
