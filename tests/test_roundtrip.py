"""Round trips: every format of the grid <-> numpy <-> scipy <-> COO <-> pydata <-> other formats, on the
special tensors, for both index dtypes and every value dtype (a stratified sample of the value dtypes by default,
all of them with `-m grid`). References are built with plain numpy."""

from __future__ import annotations

import numpy as np
import pytest
import sparse

import autosparse as asp
from conftest import (INDEX_DTYPES, VALUE_DTYPES, assert_same_tensor, format_grid, reference_dense,
                      special_tensors)
from kernel_cases import stratified

FORMATS = format_grid()
PARTNERS = {1: ("dense", "s", "h", "u"), 2: ("csr", "csc", "coo", "hh", "dcsc"),
            3: ("csf", "coo", "d2s0h1", "s1d2s0"), 4: ("coo", "dsss", "s3h2s1d0")}


def _order(spec: str) -> int:
    return sum(ch.isalpha() for ch in spec)


def _round_trip_grid() -> list:
    """Every format with both index dtypes by default, each on one value dtype of a stratified sample (every
    value dtype at least once); the other value dtypes under `-m grid`."""
    params = stratified(([(spec, i) for spec in FORMATS for i in INDEX_DTYPES], VALUE_DTYPES),
                        len(FORMATS) * len(INDEX_DTYPES), "round-trips")
    return [pytest.param(spec, value_dtype, index_dtype, marks=p.marks,
                         id=f"{spec}-{np.dtype(value_dtype).name}-{np.dtype(index_dtype).name}")
            for p in params for (spec, index_dtype), value_dtype in [p.values]]


@pytest.mark.parametrize("spec,value_dtype,index_dtype", _round_trip_grid())
def test_round_trips(spec, value_dtype, index_dtype):
    order = _order(spec)
    for case, (coords, values, shape) in special_tensors(order, value_dtype).items():
        expected = reference_dense(coords, values, shape, value_dtype)
        tensor = asp.Tensor.from_coo(coords, values, shape, spec, index_dtype=index_dtype)
        context = f"{spec} {case}"
        assert tensor.format == asp.Format(spec), context
        assert tensor.dtype == np.dtype(value_dtype), context
        if not tensor.format.is_dense:
            assert tensor.index_dtype == np.dtype(index_dtype), context
        dense = tensor.to_numpy()
        assert dense.dtype == np.dtype(value_dtype)
        np.testing.assert_array_equal(dense, expected, err_msg=context)
        if tensor.format.is_dense:  # a sparse tensor refuses np.asarray: test_operators.py
            np.testing.assert_array_equal(np.asarray(tensor), expected, err_msg=context)

        # numpy holds no explicit zeros: from_numpy gives the pruned tensor.
        pruned = tensor.prune()
        assert_same_tensor(asp.Tensor.from_numpy(dense, spec, index_dtype=index_dtype), pruned)
        pruned_values = pruned.to_coo()[1]
        assert np.all(pruned_values != 0) and len(pruned_values) == np.count_nonzero(expected), context

        # Entries leave with their explicit zeros, except the fill of a dense innermost level.
        innermost_dense = tensor.format.levels[-1].properties.full
        entries = pruned if innermost_dense else tensor
        out_coords, out_values = tensor.to_coo()
        assert out_coords.shape == (order, len(out_values))
        assert_same_tensor(asp.Tensor.from_coo(out_coords, out_values, shape, spec, index_dtype=index_dtype), entries)

        # Through every partner format and back.
        for partner in PARTNERS[order]:
            there = tensor.to_format(partner)
            np.testing.assert_array_equal(there.to_numpy(), expected, err_msg=f"{context} -> {partner}")
            kept = pruned if there.format.levels[-1].properties.full else entries  # dense fill holds no zeros
            assert_same_tensor(there.to_format(spec, index_dtype=index_dtype), kept)

        if order <= 2:
            matrix = tensor.to_scipy()
            np.testing.assert_array_equal(matrix.toarray(), expected, err_msg=context)
            assert_same_tensor(asp.Tensor.from_scipy(matrix, spec, index_dtype=index_dtype), entries)

        array = tensor.to_pydata()
        np.testing.assert_array_equal(array.todense(), expected, err_msg=context)
        assert_same_tensor(asp.Tensor.from_pydata(array, spec, index_dtype=index_dtype), entries)


@pytest.mark.parametrize("spec", [s for s in FORMATS if _order(s) == 2 and not s.rstrip("0123456789").endswith("d")])
def test_explicit_zeros_are_stored_entries(spec):
    coords = np.array([[0, 1, 2], [2, 0, 1]])
    tensor = asp.Tensor.from_coo(coords, np.array([0.0, 5.0, 0.0]), (3, 3), spec)
    assert tensor.nnz == 3
    assert tensor.prune().nnz == 1
    assert tensor.to_format("coo").nnz == 3
    assert tensor.to_scipy().nnz == 3


def test_duplicates_are_summed():
    coords = np.array([[1, 0, 1, 1], [2, 0, 2, 2]])
    tensor = asp.Tensor.from_coo(coords, np.array([1.0, 2.0, 3.0, 4.0]), (2, 3), "csr")
    assert tensor.nnz == 2
    np.testing.assert_array_equal(tensor.to_numpy(), [[2, 0, 0], [0, 0, 8]])


def test_from_numpy_promotes_small_dtypes():
    assert asp.Tensor.from_numpy(np.eye(3, dtype=bool), "csr").dtype == np.int64
    assert asp.Tensor.from_numpy(np.eye(3, dtype=np.int16), "csr").dtype == np.int64
    assert asp.Tensor.from_numpy(np.eye(3, dtype=np.float16), "csr").dtype == np.float32
    assert asp.Tensor.from_numpy(np.eye(3, dtype=np.complex64), "csr").dtype == np.complex128
    with pytest.raises(asp.FormatError, match="uint64"):
        asp.Tensor.from_numpy(np.eye(3, dtype=np.uint64), "csr")


def test_scalar_tensor():
    tensor = asp.Tensor.from_numpy(np.float64(2.5))
    assert tensor.shape == () and tensor.nnz == 1
    assert tensor.to_numpy() == 2.5
    summed = asp.Tensor.from_coo(np.zeros((0, 3), dtype=np.int64), np.array([1.0, 2.0, 3.0]), ())
    assert summed.to_numpy().shape == () and summed.to_numpy() == 6.0


def test_index_dtype_follows_the_largest_coordinate():
    small = asp.Tensor.from_coo([[0], [5]], [1.0], (10, 10), "csr")
    large = asp.Tensor.from_coo([[0], [5]], [1.0], (10, 2**40), "dcsr")
    assert small.index_dtype == np.int32
    assert large.index_dtype == np.int64
    assert large.to_format("coo").index_dtype == np.int64


class TestScipy:
    def test_canonical_csr_is_not_copied(self):
        import scipy.sparse as sp

        matrix = sp.random(50, 40, density=0.1, format="csr", random_state=1)
        tensor = asp.Tensor.from_scipy(matrix)
        assert tensor.format == "csr"
        assert np.shares_memory(tensor.vals, matrix.data)
        assert np.shares_memory(tensor.levels[1]["crd"], matrix.indices)
        assert not tensor.vals.flags.writeable and matrix.data.flags.writeable

    def test_canonical_csc_is_not_copied(self):
        import scipy.sparse as sp

        matrix = sp.random(50, 40, density=0.1, format="csc", random_state=2)
        tensor = asp.Tensor.from_scipy(matrix)
        assert tensor.format == "csc"
        assert np.shares_memory(tensor.levels[1]["pos"], matrix.indptr)
        assert tensor.to_scipy().format == "csc"

    def test_unsorted_duplicated_csr_is_canonicalised_without_touching_the_input(self):
        import scipy.sparse as sp

        indptr, indices, data = np.array([0, 3, 4]), np.array([2, 0, 2, 1]), np.array([1.0, 2.0, 3.0, 4.0])
        matrix = sp.csr_array((data, indices, indptr), shape=(2, 3))
        tensor = asp.Tensor.from_scipy(matrix)
        np.testing.assert_array_equal(tensor.levels[1]["crd"], [0, 2, 1])
        np.testing.assert_array_equal(tensor.vals, [2.0, 4.0, 4.0])
        np.testing.assert_array_equal(matrix.indices, [2, 0, 2, 1])

    @pytest.mark.parametrize("kind", ["coo", "bsr", "dia", "lil", "dok"])
    def test_other_scipy_formats_become_csr(self, kind):
        import scipy.sparse as sp

        dense = np.arange(12.0).reshape(3, 4) * (np.arange(12).reshape(3, 4) % 3 == 0)
        matrix = sp.csr_matrix(dense).asformat(kind)
        tensor = asp.Tensor.from_scipy(matrix)
        assert tensor.format == "csr"
        np.testing.assert_array_equal(tensor.to_numpy(), dense)

    def test_orders_above_two_are_refused(self):
        with pytest.raises(asp.ShapeError, match="order 1 or 2"):
            asp.Tensor.from_numpy(np.ones((2, 2, 2)), "csf").to_scipy()


class TestPydata:
    def test_gcxs_keeps_its_compressed_axis(self):
        dense = np.array([[0.0, 1.0], [2.0, 0.0]])
        assert asp.Tensor.from_pydata(sparse.GCXS.from_numpy(dense, compressed_axes=(0,))).format == "csr"
        assert asp.Tensor.from_pydata(sparse.GCXS.from_numpy(dense, compressed_axes=(1,))).format == "csc"
        gcxs = asp.Tensor.from_numpy(dense, "csr").to_pydata("gcxs")
        np.testing.assert_array_equal(gcxs.todense(), dense)

    def test_other_kinds_and_objects(self):
        dense = np.arange(8.0).reshape(2, 2, 2)
        tensor = asp.Tensor.from_pydata(sparse.DOK.from_numpy(dense))
        assert tensor.format == asp.Format("coo", order=3)
        np.testing.assert_array_equal(tensor.to_numpy(), dense)
        with pytest.raises(asp.FormatError, match="pydata sparse array"):
            asp.Tensor.from_pydata(dense)
        with pytest.raises(asp.FormatError, match="kind"):
            tensor.to_pydata("csr")


def test_exported_arrays_belong_to_the_caller():
    tensor = asp.Tensor.from_numpy(np.eye(3), "csr")
    matrix = tensor.to_scipy()
    matrix.data *= 2  # scipy objects may be modified in place ...
    np.testing.assert_array_equal(tensor.to_numpy(), np.eye(3))  # ... without touching the tensor
    coords, values = tensor.to_coo()
    values[0] = 7.0
    np.testing.assert_array_equal(tensor.vals, [1.0, 1.0, 1.0])


@pytest.mark.parametrize("shape", [(7, 5, 3), (10**6,) * 4, (2**40, 3, 2**40)])
def test_canonical_order_matches_lexsort(shape):
    """Keys that fit a word with the entry index, fit a word alone, or need several sorting passes."""
    rng = np.random.default_rng(len(shape))
    coords = np.vstack([rng.integers(0, d, size=400) for d in shape])
    coords[:, 200:] = coords[:, :200]  # duplicates
    values = rng.random(400)
    for fmt in (asp.Format("csf", order=len(shape)), asp.Format("s" * len(shape), mode_order=range(len(shape))[::-1])):
        tensor = asp.Tensor.from_coo(coords, values, shape, fmt)
        order = [coords[m] for m in fmt.mode_order]
        expected = np.lexsort(order[::-1])
        got_coords, got_values = tensor.to_coo()
        sorted_coords = coords[:, expected]
        keep = np.ones(400, dtype=bool)
        keep[1:] = np.any(sorted_coords[:, 1:] != sorted_coords[:, :-1], axis=0)
        np.testing.assert_array_equal(got_coords, sorted_coords[:, keep])
        np.testing.assert_allclose(got_values, np.add.reduceat(values[expected], np.flatnonzero(keep)))
