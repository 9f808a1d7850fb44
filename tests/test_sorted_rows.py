"""Sorted SpGEMM rows (issue 30): the workspace's touched columns put in order by whichever path fits the
row — a rank sort up to 64 entries, a radix sort beyond, a bitmap scan where the row is dense in its
range — checked against scipy with rows of every length across those thresholds, spread wide and packed
narrow, their columns arriving interleaved (two rows of B merged per row of the product), at 1 and 2
threads and both index dtypes, with the edge cases beside them."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp

from kernel_cases import CASES, run_differential

SPGEMM = "C(i,j) = A(i,k) * B(k,j)"
FORMATS = {"A": "csr", "B": "csr", "C": "csr"}
#: (threads, schedule): the serial default and rows split between two threads.
SCHEDULES = [(1, None), (2, "parallelize(i, cpu_thread, no_races)")]
#: Product rows' lengths: each side of the short-list sort's limit (64), and long ones.
ROW_LENGTHS = [0, 1, 2, 3, 7, 16, 31, 32, 33, 63, 64, 65, 66, 100, 129, 700]


def _interleaving_product(width: int, seed: int) -> tuple[sp.csr_array, sp.csr_array]:
    """A and B whose product's row r holds about ROW_LENGTHS[r] columns below `width`: A's row r sums B's
    rows 2r and 2r+1, each with half of them drawn at random, so the workspace sees the two halves'
    columns one after the other, out of order."""
    rng = np.random.default_rng(seed)
    rows = len(ROW_LENGTHS)
    a = sp.csr_array((rng.random(2 * rows) + 1, (np.repeat(np.arange(rows), 2), np.arange(2 * rows))),
                     shape=(rows, 2 * rows))
    b = sp.lil_array((2 * rows, width))
    for r, length in enumerate(ROW_LENGTHS):
        for half, count in ((2 * r, length // 2), (2 * r + 1, length - length // 2)):
            columns = rng.choice(width, size=min(count, width), replace=False)
            b[half, columns] = rng.random(len(columns)) + 1
    return a, sp.csr_array(b)


def _assert_sorted_product(result: asp.Tensor, expected: sp.csr_array) -> None:
    expected.sort_indices()
    pos, crd = result.levels[1]["pos"], result.levels[1]["crd"]
    np.testing.assert_array_equal(pos, expected.indptr)
    np.testing.assert_array_equal(crd, expected.indices)
    np.testing.assert_allclose(result.vals, expected.data)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("threads, schedule", SCHEDULES)
@pytest.mark.parametrize("width", [70, 5_000, 1_000_000], ids=["dense", "packed", "spread"])
def test_rows_of_every_length_come_out_sorted(width, threads, schedule, index_dtype):
    """`dense`: the rows fill most of their width (the bitmap); `packed`: short rows sorted, long ones
    scanned; `spread`: few entries across a wide range, every row sorted (ranks, then radix)."""
    a, b = _interleaving_product(width, seed=width)
    kernel = asp.compile(SPGEMM, FORMATS, schedule=schedule, num_threads=threads)
    result = kernel(A=asp.Tensor.from_scipy(a, index_dtype=index_dtype),
                    B=asp.Tensor.from_scipy(b, index_dtype=index_dtype))
    _assert_sorted_product(result, sp.csr_array(a @ b))


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("threads, schedule", SCHEDULES)
def test_random_products_match_scipy(threads, schedule, index_dtype):
    """Non-square, rows from empty to a few hundred entries, columns in every order B's rows give."""
    a = sp.random(400, 900, density=0.02, format="csr", random_state=5)
    b = sp.random(900, 30_000, density=0.003, format="csr", random_state=6)
    kernel = asp.compile(SPGEMM, FORMATS, schedule=schedule, num_threads=threads)
    result = kernel(A=asp.Tensor.from_scipy(a, index_dtype=index_dtype),
                    B=asp.Tensor.from_scipy(b, index_dtype=index_dtype))
    _assert_sorted_product(result, sp.csr_array(a @ b))


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("threads, schedule", SCHEDULES)
def test_edge_cases_equal_numpy(threads, schedule, case, index_dtype):
    run_differential(SPGEMM, FORMATS, case, np.float64, index_dtype, schedule=schedule, num_threads=threads)


@pytest.mark.parametrize("entries", [1, 8, 30, 64, 65, 300])
def test_a_hashed_workspace_sorts_its_keys(entries):
    """Outer products scattered into a 2-D hash table (keys i·n + j) are read back through the same sort:
    a column of A times a row of B, `entries` products each side of the rank sort's limit."""
    n = 10**5
    rng = np.random.default_rng(entries)
    rows, columns = rng.choice(n, 2, replace=False), rng.choice(n, max(1, entries // 2), replace=False)
    a = sp.csc_array((rng.random(len(rows)) + 1, (rows, np.zeros(len(rows), int))), shape=(n, n))
    b = sp.csr_array((rng.random(len(columns)) + 1, (np.zeros(len(columns), int), columns)), shape=(n, n))
    kernel = asp.compile(SPGEMM, {"A": "d1s0", "B": "csr", "C": "dcsr", "w": "hh"},
                         schedule="where(∀i ∀j C(i,j) = w(i,j), ∀k ∀i ∀j w(i,j) += A(i,k) * B(k,j))")
    C = kernel(A=asp.Tensor.from_scipy(a, format="d1s0"), B=asp.Tensor.from_scipy(b))
    expected = sp.coo_array(a @ b)
    order = np.lexsort((expected.col, expected.row))
    coords, values = C.to_coo()
    np.testing.assert_array_equal(coords, np.stack([expected.row[order], expected.col[order]]))
    np.testing.assert_allclose(values, expected.data[order])
