"""Sparse results as the fill assembles them (issue 30): SpGEMM and element-wise add and multiply into
sorted (`csr`) and unsorted (`ds~`) rows, serial and on 2 threads, against numpy on the edge cases and
against scipy on random matrices of both index dtypes, with what the differential tests cannot see:
arrays sized exactly to the entries, rows sorted (or merely unique) as the format says, each row's count
written once after the row rather than once per entry, and the sort skipped where the format keeps no
order."""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp

from kernel_cases import CASES, run_differential, stratified

SPGEMM = "C(i,j) = A(i,k) * B(k,j)"
ADD = "C(i,j) = A(i,j) + B(i,j)"
MULTIPLY = "C(i,j) = A(i,j) * B(i,j)"
ROWS = "parallelize(i, cpu_thread, no_races)"
#: (threads, schedule): the serial default and rows split between two threads.
SCHEDULES = [(1, None), (2, ROWS)]
RESULTS = ["csr", "ds~"]


def _formats(result: str) -> dict[str, str]:
    return {"A": "csr", "B": "csr", "C": result}


@pytest.mark.parametrize("expression, result, threads_schedule, case, index_dtype", stratified(
    [[SPGEMM, ADD, MULTIPLY], RESULTS, SCHEDULES, CASES, [np.int32, np.int64]], 64, "assembly outputs"))
def test_sparse_results_equal_numpy_on_the_edge_cases(expression, result, threads_schedule, case, index_dtype):
    threads, schedule = threads_schedule
    run_differential(expression, _formats(result), case, np.float64, index_dtype, schedule=schedule,
                     num_threads=threads)


def _random(shape, density, seed, index_dtype):
    matrix = sp.random(*shape, density=density, format="csr", random_state=seed)
    matrix.data += 1  # no accidental zeros
    return matrix, asp.Tensor.from_scipy(matrix, index_dtype=index_dtype)


def _rows(tensor: asp.Tensor) -> tuple[np.ndarray, np.ndarray]:
    return tensor.levels[1]["pos"], tensor.levels[1]["crd"]


def _assert_assembled(tensor: asp.Tensor, expected: sp.csr_array, sorted_rows: bool) -> None:
    """Exactly sized arrays, each row's columns unique (and increasing when `sorted_rows`), the values
    scipy's."""
    pos, crd = _rows(tensor)
    assert len(pos) == expected.shape[0] + 1 and pos[0] == 0
    assert len(crd) == pos[-1] == len(tensor.vals) == expected.nnz
    np.testing.assert_array_equal(pos, expected.indptr)
    for row in range(expected.shape[0]):
        columns = crd[pos[row]:pos[row + 1]]
        if sorted_rows:
            assert np.all(np.diff(columns) > 0), row
        else:
            assert len(np.unique(columns)) == len(columns), row
    np.testing.assert_allclose(tensor.to_numpy(), expected.toarray())


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("threads, schedule", SCHEDULES)
@pytest.mark.parametrize("result", RESULTS)
def test_spgemm_rows_are_exactly_sized_and_sorted_as_the_format_says(result, threads, schedule, index_dtype):
    """Rows from a few entries to wide ones (the bitmap's and the sort's paths), a non-square product."""
    a, A = _random((300, 2000), 0.01, 1, index_dtype)
    b, B = _random((2000, 5000), 0.02, 2, index_dtype)
    kernel = asp.compile(SPGEMM, _formats(result), schedule=schedule, num_threads=threads)
    _assert_assembled(kernel(A=A, B=B), sp.csr_array(a @ b), sorted_rows=result == "csr")


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("threads, schedule", SCHEDULES)
@pytest.mark.parametrize("result", RESULTS)
@pytest.mark.parametrize("expression, combine", [(ADD, lambda a, b: a + b), (MULTIPLY, lambda a, b: a.multiply(b))])
def test_elementwise_rows_are_exactly_sized(expression, combine, result, threads, schedule, index_dtype):
    a, A = _random((400, 300), 0.05, 3, index_dtype)
    b, B = _random((400, 300), 0.05, 4, index_dtype)
    kernel = asp.compile(expression, _formats(result), schedule=schedule, num_threads=threads)
    expected = sp.csr_array(combine(a, b))
    expected.sort_indices()
    _assert_assembled(kernel(A=A, B=B), expected, sorted_rows=True)  # merged rows come out in order anyway


def _fill(source: str) -> str:
    return source[source.index("/* fill */"):]


@pytest.mark.parametrize("expression", [SPGEMM, ADD, MULTIPLY])
@pytest.mark.parametrize("threads, schedule", SCHEDULES)
def test_the_fill_writes_each_rows_count_once_after_the_row(expression, threads, schedule):
    """No `pos[i + 1]++` per entry: the row's count is added once, from the size reached at its end."""
    fill = _fill(asp.compile(expression, _formats("csr"), schedule=schedule, num_threads=threads).source)
    assert not re.search(r"C_pos2\[[^]]*\]\+\+", fill)
    assert len(re.findall(r"C_pos2\[i_ \+ 1\] \+= C_size2 - C_size2_start;", fill)) == 1


def test_a_compressed_first_level_counts_its_positions_once():
    source = asp.compile(ADD, {"A": "dcsr", "B": "dcsr", "C": "dcsr"}, num_threads=1).source
    assert "C_pos1[0 + 1]++" not in source and "C_pos1[1] = C_size1;" in source


@pytest.mark.parametrize("threads, schedule", SCHEDULES)
def test_an_unsorted_result_skips_the_sort_and_a_sorted_one_keeps_it(threads, schedule):
    def fill(result):
        return _fill(asp.compile(SPGEMM, _formats(result), schedule=schedule, num_threads=threads).source)
    assert "ordertouched(" in fill("csr")
    assert "ordertouched(" not in fill("ds~") and "sortcoordinates(" not in fill("ds~")


def test_an_unsorted_product_is_read_right_downstream():
    """Its conversions and a kernel stepping it give scipy's answers."""
    a, A = _random((200, 150), 0.05, 5, np.int32)
    b, B = _random((150, 180), 0.05, 6, np.int32)
    C = asp.evaluate(SPGEMM, format="ds~", A=A, B=B)
    expected = (a @ b).toarray()
    assert str(C.format) == "ds~"
    np.testing.assert_allclose(C.to_scipy().toarray(), expected)
    np.testing.assert_allclose(C.to_format("csr").to_numpy(), expected)
    x = np.arange(180, dtype=np.float64)
    np.testing.assert_allclose(asp.evaluate("y(i) = C(i,j) * x(j)", C=C, x=x), expected @ x)
