"""The native conversions (runtime/conversion.py) against scipy and numpy, computed independently of them:
CSR <-> CSC, coordinates (sorted or shuffled, from a Tensor or a scipy coo_array) -> CSR/CSC/COO, CSR -> COO,
and coordinates of any order -> CSF, DCSR or sorted COO. Each result is compared entry by entry with a
dense copy and array by array with the generic numpy path (`Tensor._from_entries`), which it must equal
exactly (index dtype, explicit zeros, sizes)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from autosparse.errors import FormatError
from autosparse.runtime.conversion import native_conversion
from kernel_cases import stratified

VALUE_DTYPES = (np.float64, np.float32, np.int64, np.complex128)
INDEX_DTYPES = (np.int32, np.int64)
CASES = ("random", "empty", "all-zero", "single-entry", "explicit-zeros")
SHAPES = ((6, 9), (9, 6), (1, 1), (1, 7), (7, 1), (0, 4), (40, 30))


def _entries(shape, case: str, value_dtype, seed: int = 0):
    """(coords (order, nnz), values) of unique coordinates, in lexicographic order."""
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    count = {"empty": 0, "single-entry": min(size, 1)}.get(case, size // 3 + (size > 0))
    keys = np.sort(rng.choice(size, count, replace=False)) if size else np.zeros(0, dtype=np.int64)
    coords = np.array(np.unravel_index(keys, shape), dtype=np.int64).reshape(len(shape), -1)
    values = (rng.integers(1, 9, count) * (1 + 1j if np.dtype(value_dtype).kind == "c" else 1)).astype(value_dtype)
    if case == "all-zero":
        values[:] = 0
    if case == "explicit-zeros" and count:
        values[::2] = 0
    return coords, values


def _dense(coords, values, shape):
    dense = np.zeros(shape, dtype=values.dtype)
    np.add.at(dense, tuple(coords), values)
    return dense


def _generic(coords, values, shape, fmt, index_dtype) -> asp.Tensor:
    """The numpy path every conversion passed through before: canonical entries, then the levels."""
    return asp.Tensor._from_entries(tuple(np.asarray(coords, dtype=np.int64)), values, shape, fmt, index_dtype)


def _same(result: asp.Tensor, expected: asp.Tensor) -> None:
    assert result.format == expected.format and result.shape == expected.shape
    assert result.index_dtype == expected.index_dtype and result.dtype == expected.dtype
    for got, want in zip(result.levels, expected.levels):
        assert got.keys() == want.keys()
        for name in got:
            np.testing.assert_array_equal(got[name], want[name])
            assert got[name].dtype == want[name].dtype and got[name].flags.c_contiguous
    np.testing.assert_array_equal(result.vals, expected.vals)


@pytest.mark.parametrize("case, shape, value_dtype, index_dtype",
                         stratified([CASES, SHAPES, VALUE_DTYPES, INDEX_DTYPES], 80, "matrix conversions"))
def test_matrix_conversions_match_scipy_and_the_generic_path(case, shape, value_dtype, index_dtype):
    coords, values = _entries(shape, case, value_dtype)
    dense = _dense(coords, values, shape)
    csr = asp.Tensor.from_coo(coords, values, shape, format="csr", index_dtype=index_dtype)
    scipy_csr = sp.csr_array((values, tuple(coords)), shape=shape)
    np.testing.assert_array_equal(csr.levels[1]["pos"], scipy_csr.indptr)
    np.testing.assert_array_equal(csr.levels[1]["crd"], scipy_csr.indices)
    for source in ("csr", "csc", "coo", "u1q0"):
        tensor = asp.Tensor.from_coo(coords, values, shape, format=source, index_dtype=index_dtype)
        for target in ("csr", "csc", "coo", "dcsr", "dcsc"):
            converted = tensor.to_format(target)
            np.testing.assert_array_equal(converted.to_numpy(), dense)
            # native conversions keep the tensor's index dtype; the generic path picks the narrowest
            assert converted.index_dtype in (tensor.index_dtype, np.int32)
            _same(converted, _generic(coords, values, shape, asp.Format(target, order=2), converted.index_dtype))


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES, ids=["int32", "int64"])
@pytest.mark.parametrize("value_dtype", VALUE_DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_shuffled_coordinates_sort_like_scipy(shape, value_dtype, index_dtype):
    coords, values = _entries(shape, "explicit-zeros", value_dtype, seed=1)
    order = np.random.default_rng(2).permutation(len(values))
    shuffled = sp.coo_array((values[order], tuple(coords[:, order].astype(index_dtype))), shape=shape)
    for fmt in ("csr", "csc", "coo"):
        result = asp.Tensor.from_scipy(shuffled, format=fmt)
        np.testing.assert_array_equal(result.to_numpy(), shuffled.toarray())
        _same(result, _generic(coords, values, shape, asp.Format(fmt, order=2), None))
    scipy_csr = shuffled.tocsr()
    scipy_csr.sort_indices()
    ours = asp.Tensor.from_scipy(shuffled)
    np.testing.assert_array_equal(ours.levels[1]["crd"], scipy_csr.indices)
    np.testing.assert_array_equal(ours.vals, scipy_csr.data)  # explicit zeros kept, in scipy's order


@pytest.mark.parametrize("rows", [3, 60])  # short rows (sorted one by one) and long ones (a radix sort)
def test_long_and_short_rows_are_both_sorted(rows):
    rng = np.random.default_rng(3)
    shape = (rows, 500)
    keys = rng.choice(rows * 500, 1200, replace=False)
    coords = np.array(np.unravel_index(keys, shape))
    values = rng.random(len(keys))
    result = asp.Tensor.from_coo(coords, values, shape, format="csr")
    _same(result, _generic(coords, values, shape, asp.Format("csr"), None))


def test_duplicates_are_summed_as_before():
    coords = np.array([[2, 0, 2, 1, 2], [1, 3, 1, 0, 1]])
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    for fmt in ("csr", "csc", "coo", "dcsr"):
        result = asp.Tensor.from_coo(coords, values, (3, 4), format=fmt)
        np.testing.assert_array_equal(result.to_numpy(), _dense(coords, values, (3, 4)))
        assert result.nnz == 3
    matrix = sp.coo_array((values, (coords[0], coords[1])), shape=(3, 4))
    np.testing.assert_array_equal(asp.Tensor.from_scipy(matrix).to_numpy(), matrix.toarray())


def test_hypersparse_coordinates_take_the_generic_path():
    """Columns far too many to count for their entries: sorted by numpy, not by a count per column."""
    shape = (3, 10**12)
    coords = np.array([[2, 0, 1, 0], [5, 10**12 - 1, 0, 7]])
    values = np.array([1.0, 2.0, 3.0, 4.0])
    for fmt in ("coo", "dcsr", "dcsc"):
        result = asp.Tensor.from_coo(coords, values, shape, format=fmt)
        _same(result, _generic(coords, values, shape, asp.Format(fmt, order=2), None))


def test_csr_to_coo_shares_columns_and_values():
    matrix = sp.random_array((30, 20), density=0.2, format="csr", random_state=4)
    csr = asp.Tensor.from_scipy(matrix)
    coo = native_conversion(csr, asp.Format("coo", order=2))
    assert np.shares_memory(coo.levels[1]["crd"], csr.levels[1]["crd"]) and np.shares_memory(coo.vals, csr.vals)
    assert len(coo.levels[0]["crd"]) == csr.nnz  # exactly sized
    back = native_conversion(coo, asp.Format("csr"))  # sorted coordinates: only the positions are new
    assert np.shares_memory(back.levels[1]["crd"], csr.levels[1]["crd"])
    _same(back, csr)


SHAPES_3D = ((4, 5, 6), (1, 1, 1), (3, 1, 7), (0, 2, 3), (9, 2, 40))


@pytest.mark.parametrize("case, shape, value_dtype, index_dtype",
                         stratified([CASES, SHAPES_3D, VALUE_DTYPES, INDEX_DTYPES], 60, "csf conversions"))
def test_csf_from_coordinates(case, shape, value_dtype, index_dtype):
    coords, values = _entries(shape, case, value_dtype, seed=5)
    dense = _dense(coords, values, shape)
    order = np.random.default_rng(6).permutation(len(values))
    formats = ("csf", "coo", asp.Format("sss", mode_order=(2, 0, 1)), asp.Format("ucq", mode_order=(1, 2, 0)))
    coo = asp.Tensor.from_coo(coords, values, shape, index_dtype=index_dtype)
    for fmt in formats:
        fmt = asp.Format(fmt, order=3) if isinstance(fmt, str) else fmt
        expected = _generic(coords, values, shape, fmt, index_dtype)
        for result in (asp.Tensor.from_coo(coords[:, order], values[order], shape, format=fmt, index_dtype=index_dtype),
                       coo.to_format(fmt, index_dtype)):
            np.testing.assert_array_equal(result.to_numpy(), dense)
            _same(result, expected)


def test_csf_of_four_modes_with_repeats():
    rng = np.random.default_rng(7)
    shape = (5, 4, 3, 6)
    coords = rng.integers(0, 4, (4, 200)) % np.array(shape)[:, None]  # many repeated coordinates
    values = rng.random(200)
    result = asp.Tensor.from_coo(coords, values, shape, format="csf")
    np.testing.assert_allclose(result.to_numpy(), _dense(coords, values, shape))
    unique = np.unique(coords, axis=1)
    distinct = asp.Tensor.from_coo(unique, np.ones(unique.shape[1]), shape, format="csf")
    _same(distinct, _generic(unique, np.ones(unique.shape[1]), shape, asp.Format("csf", order=4), None))


@pytest.mark.parametrize("bad", [(0, -1), (0, 3), (1, 4), (1, -2)])
@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "dcsr"])
def test_out_of_range_coordinates_are_refused(bad, fmt):
    coords = np.array([[0, 1, 2], [3, 0, 1]])
    mode, value = bad
    coords[mode, 1] = value
    with pytest.raises(FormatError, match=f"mode-{mode} coordinates"):
        asp.Tensor.from_coo(coords, np.ones(3), (3, 4), format=fmt)
    with pytest.raises(FormatError):
        asp.Tensor.from_scipy(_unchecked_coo(coords, (3, 4)), format=fmt)


def _unchecked_coo(coords, shape):
    """A scipy coo_array holding coordinates scipy's constructor would refuse (as a buggy caller builds one)."""
    matrix = sp.coo_array((np.ones(3), (np.array([0, 1, 2]), np.array([0, 1, 2]))), shape=shape)
    matrix.row, matrix.col = coords[0], coords[1]
    return matrix


def test_out_of_range_in_three_modes_is_refused():
    with pytest.raises(FormatError, match="mode-2 coordinates"):
        asp.Tensor.from_coo([[0, 1], [0, 0], [0, 5]], [1.0, 2.0], (2, 1, 5), format="csf")


def test_strided_coordinates_and_values():
    coords = np.array([[3, 0], [1, 2], [0, 0], [2, 1]]).T[:, ::-1]  # (2, 4), not contiguous
    values = np.arange(8.0)[::2]
    result = asp.Tensor.from_coo(coords, values, (4, 4), format="csr")
    np.testing.assert_array_equal(result.to_numpy(), _dense(coords, values, (4, 4)))


def test_the_native_paths_apply():
    """The conversions above reach C (a None here would mean the generic numpy path answered instead)."""
    coords = np.array([[0, 2, 1, 2], [3, 0, 2, 1], [1, 1, 0, 4]])
    values = np.arange(1.0, 5.0)
    unsorted = asp.Tensor((3, 4, 5), "u~cq", [{"pos": np.array([0, 4]), "crd": coords[0]}, {"crd": coords[1]},
                                              {"crd": coords[2]}], values)
    coo = asp.Tensor.from_coo(coords, values, (3, 4, 5))
    csr = asp.Tensor.from_coo(coords[:2], values, (3, 4), format="csr")
    pairs = [(unsorted, "csf"), (unsorted, "coo"), (coo, "csf"), (coo, asp.Format("sss", mode_order=(1, 2, 0))),
             (csr, "csc"), (csr, "coo"), (csr, "dcsr"), (csr, "dcsc"), (csr.to_format("csc"), "coo"),
             (csr.to_format("coo"), "csr"), (csr.to_format("coo"), "csc")]
    for tensor, fmt in pairs:
        assert native_conversion(tensor, asp.Format(fmt, order=tensor.order) if isinstance(fmt, str) else fmt) \
            is not None, (tensor.format, fmt)
