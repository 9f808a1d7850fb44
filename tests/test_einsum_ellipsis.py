"""`...` in einsum subscripts, against numpy.einsum: batches of products, reductions over leading modes,
implicit outputs, sparse batched operands; size-1 broadcasting is refused with a ShapeError that says so."""

from __future__ import annotations

import numpy as np
import pytest

import autosparse as asp
from conftest import densified



def array(shape, dtype=np.float64, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.integers(-5, 6, shape).astype(dtype)
    return np.where(rng.random(shape) < 0.5, values, 0).astype(dtype)


@pytest.mark.parametrize("subscripts, shapes", [
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("...ij,...jk", [(2, 3, 4), (4, 5)]),
    ("...ij,...jk", [(3, 2, 3, 4), (2, 4, 5)]),
    ("i...->...", [(2, 3, 4)]),
    ("...i->...", [(3, 4)]),
    ("...", [(2, 3)]),
    ("...i->i", [(4,)]),  # the ellipsis stands for nothing
    ("ij...,jk...", [(3, 4, 2), (4, 5, 2)]),
    ("i...,j...->...", [(3, 4), (2,)]),
    ("...ij->...ji", [(1, 3, 4)]),  # size-1 batch
    ("...j,...j->...", [(0, 3), (0, 3)]),  # empty batch
])
@pytest.mark.parametrize("dtype", (np.float64, np.float32, np.int64))
def test_matches_numpy(subscripts, shapes, dtype):
    operands = [array(shape, dtype, seed) for seed, shape in enumerate(shapes)]
    expected = np.einsum(subscripts, *operands)
    got = asp.einsum(subscripts, *operands)
    got = np.asarray(got) if np.ndim(expected) == 0 else densified(got)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert np.shape(got) == expected.shape


@pytest.mark.parametrize("fmt", ("sss", "dds", "ucq", "dss"))
def test_sparse_batched_operands(fmt):
    A, x = array((3, 4, 5)), array((5,), seed=1)
    A[1] = 0  # an all-zero batch
    T = asp.Tensor.from_numpy(A, format=fmt)
    np.testing.assert_allclose(densified(asp.einsum("...ij,j->...i", T, x)), np.einsum("...ij,j->...i", A, x))
    np.testing.assert_allclose(densified(asp.einsum("...ij->...", T)), np.einsum("...ij->...", A))


def test_size_one_broadcasting_is_refused_clearly():
    with pytest.raises(asp.ShapeError, match="modes of '...' to agree"):
        asp.einsum("...ij,...jk", np.ones((2, 3, 4)), np.ones((1, 4, 5)))


def test_an_output_without_the_ellipsis_is_refused_as_numpy_does():
    with pytest.raises(ValueError):
        np.einsum("...i->i", np.ones((2, 3)))
    with pytest.raises(asp.ParseError, match="'...' in the output"):
        asp.einsum("...i->i", np.ones((2, 3)))
