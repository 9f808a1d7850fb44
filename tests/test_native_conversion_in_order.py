"""Coordinates that arrive in the output's order (a scipy matrix's `tocoo`, sorted `from_coo` input) become
CSR or CSC by writing the positions alone: the result shares the coordinates and values it was given
(runtime/conversion.py, `_IN_ORDER`), as a sorted COO Tensor's conversion always did. Checked against scipy
array by array, on the edge cases, both index dtypes and value dtypes, and against the copying paths
(out-of-order or repeated coordinates) which must still give their own arrays."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from autosparse.format import Format

SHAPES = ((6, 9), (9, 6), (1, 1), (1, 7), (7, 1), (0, 4), (40, 30))
CASES = ("random", "empty", "all-zero", "single-entry", "explicit-zeros", "full")


def _matrix(shape, case: str, index_dtype, value_dtype=np.float64, seed: int = 0) -> sp.coo_array:
    """A canonical coo_array (row-major, unique) of `case`, with indices of `index_dtype`."""
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    count = {"empty": 0, "single-entry": min(size, 1), "full": size}.get(case, size // 3 + (size > 0))
    keys = np.sort(rng.choice(size, count, replace=False)) if size else np.zeros(0, dtype=np.int64)
    rows, cols = np.unravel_index(keys, shape) if size else (keys, keys)
    values = rng.integers(1, 9, count).astype(value_dtype)
    if case == "all-zero":
        values[:] = 0
    if case == "explicit-zeros" and count:
        values[::2] = 0
    matrix = sp.coo_array((values, (rows.astype(index_dtype), cols.astype(index_dtype))), shape=shape)
    assert matrix.row.dtype == index_dtype
    return matrix


def _same_as_scipy(tensor: asp.Tensor, expected: sp.csr_array) -> None:
    pos, crd = tensor.levels[1]["pos"], tensor.levels[1]["crd"]
    np.testing.assert_array_equal(pos, expected.indptr)
    np.testing.assert_array_equal(crd, expected.indices)
    np.testing.assert_array_equal(tensor.vals, expected.data)  # explicit zeros kept, as scipy keeps them
    assert tensor.vals.dtype == expected.data.dtype
    assert not (pos.flags.writeable or crd.flags.writeable or tensor.vals.flags.writeable)


@pytest.mark.parametrize("index_dtype", (np.int32, np.int64))
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("shape", SHAPES)
def test_sorted_scipy_coo_to_csr_shares_its_values(shape, case, index_dtype):
    matrix = _matrix(shape, case, index_dtype)
    tensor = asp.Tensor.from_scipy(matrix)
    assert tensor.format == Format("csr")
    _same_as_scipy(tensor, matrix.tocsr())
    np.testing.assert_array_equal(tensor.to_numpy(), matrix.toarray())
    if matrix.nnz:  # the in-order path: no copy of the values
        assert np.shares_memory(tensor.vals, matrix.data)


@pytest.mark.parametrize("value_dtype", (np.float32, np.int64, np.complex128))
def test_every_value_size_is_shared(value_dtype):
    matrix = _matrix((30, 20), "random", np.int32, value_dtype, seed=3)
    tensor = asp.Tensor.from_scipy(matrix)
    _same_as_scipy(tensor, matrix.tocsr())
    assert np.shares_memory(tensor.vals, matrix.data)


@pytest.mark.parametrize("index_dtype", (np.int32, np.int64))
@pytest.mark.parametrize("shape", ((6, 9), (9, 6), (1, 7), (40, 30)))
def test_column_major_coordinates_to_csc_share_the_rows(shape, index_dtype):
    """A Tensor's coordinates sorted by column, then row, to CSC: the rows are the CSC's own."""
    matrix = _matrix(shape, "random", index_dtype, seed=5).tocsc().tocoo()  # column-major order
    coords = np.vstack([matrix.row, matrix.col]).astype(index_dtype)
    tensor = asp.Tensor.from_coo(coords, matrix.data, shape, format="csc", index_dtype=index_dtype)
    expected = sp.csc_array(matrix)
    np.testing.assert_array_equal(tensor.levels[1]["pos"], expected.indptr)
    np.testing.assert_array_equal(tensor.levels[1]["crd"], expected.indices)
    np.testing.assert_array_equal(tensor.vals, expected.data)
    np.testing.assert_array_equal(tensor.to_numpy(), matrix.toarray())


def test_a_coordinate_tensor_in_order_converts_without_copies():
    matrix = _matrix((40, 30), "random", np.int32, seed=7)
    unsorted = asp.Tensor(matrix.shape, "u~q", [{"pos": np.array([0, matrix.nnz], dtype=np.int32),
                                                 "crd": matrix.row}, {"crd": matrix.col}], matrix.data)
    csr = unsorted.to_format("csr")
    _same_as_scipy(csr, matrix.tocsr())
    assert np.shares_memory(csr.levels[1]["crd"], unsorted.levels[1]["crd"])
    assert np.shares_memory(csr.vals, unsorted.vals)


@pytest.mark.parametrize("index_dtype", (np.int32, np.int64))
def test_entries_out_of_order_are_sorted_into_arrays_of_their_own(index_dtype):
    matrix = _matrix((40, 30), "random", index_dtype, seed=9)
    order = np.random.default_rng(1).permutation(matrix.nnz)
    shuffled = sp.coo_array((matrix.data[order], (matrix.row[order], matrix.col[order])), shape=matrix.shape)
    tensor = asp.Tensor.from_scipy(shuffled)
    _same_as_scipy(tensor, matrix.tocsr())
    assert not np.shares_memory(tensor.vals, shuffled.data)


def test_repeated_coordinates_in_order_are_summed():
    """In order but repeated: not the shared path (the generic path sums them, as scipy does)."""
    rows, cols = np.array([0, 0, 1, 2, 2, 2]), np.array([1, 1, 0, 0, 2, 2])
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    matrix = sp.coo_array((values, (rows, cols)), shape=(3, 3))
    tensor = asp.Tensor.from_scipy(matrix)
    expected = matrix.tocsr()
    expected.sum_duplicates()
    _same_as_scipy(tensor, expected)
    assert not np.shares_memory(tensor.vals, values)


def test_a_kernel_computes_on_a_shared_result():
    matrix = _matrix((40, 30), "random", np.int64, seed=11)
    tensor = asp.Tensor.from_scipy(matrix)
    x = np.arange(30.0)
    np.testing.assert_allclose(tensor @ x, matrix.toarray() @ x)
