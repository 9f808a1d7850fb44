"""The jam factors' rule (codegen/jam.py): each row takes the wide or the narrow jammed loop by its length,
dot products by their length too; complex kernels are not jammed. Every choice the rule can make is run
here: dense extents on both sides of `WIDE` (1-9 and 64), rows of every length through two wide blocks,
float32/float64/complex128 values and int32/int64 indices; each result is the plain loop's bit for bit."""

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp

from kernel_cases import sddmm_in_loop_order
from autosparse.codegen.jam import NARROW, WIDE
from autosparse.lower.kernel import generate
from autosparse.runtime.abi import Types

SPMM = ("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "dense", "C": "dense"})
SDDMM = ("A(i,j) = B(i,j) * C(i,k) * D(k,j)", {"B": "csr", "C": "dense", "D": "d1d0", "A": "csr"})
EXTENTS = [1, 2, 3, 4, 5, 7, 8, 9, 64]
DTYPES = [np.float32, np.float64, np.complex128]


def _values(rng, shape, dtype) -> np.ndarray:
    """Random values, not exact in sums (the order of additions shows), with zeros among them."""
    values = np.where(rng.random(shape) < 0.1, 0, rng.random(shape))
    if np.dtype(dtype).kind == "c":
        values = values + 1j * rng.random(shape)
    return values.astype(dtype)


def _matrix(index_dtype, dtype, rng) -> sp.csr_array:
    """A row of each length 0 .. 2 WIDE + 1 (the narrow loop, the wide one twice, every remainder)."""
    cols = 2 * WIDE + 1
    lengths = list(range(cols + 1))
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(index_dtype)
    indices = np.concatenate([np.sort(rng.choice(cols, n, replace=False)) for n in lengths]).astype(index_dtype)
    return sp.csr_array((_values(rng, len(indices), dtype), indices, indptr), shape=(len(lengths), cols))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("width", EXTENTS)
@pytest.mark.usefixtures("unfused")
def test_spmm_is_the_plain_loops_result_bit_for_bit(width, index_dtype, dtype):
    rng = np.random.default_rng(width)
    m = _matrix(index_dtype, dtype, rng)
    b = _values(rng, (m.shape[1], width), dtype)
    kernel = asp.compile(SPMM[0], formats=SPMM[1], num_threads=1)
    got = kernel(A=asp.Tensor.from_scipy(m, index_dtype=index_dtype), B=asp.Tensor.from_numpy(b))
    expected = np.zeros((m.shape[0], width), dtype=dtype)
    for i in range(m.shape[0]):  # the plain loop's order: row i's terms added one after the other
        for p in range(m.indptr[i], m.indptr[i + 1]):
            expected[i] += m.data[p] * b[m.indices[p]]
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_allclose(got, m @ b, rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("width", EXTENTS)
@pytest.mark.usefixtures("unfused")
def test_sddmm_is_the_plain_loops_result_bit_for_bit(width, index_dtype, dtype):
    rng = np.random.default_rng(width + 100)
    m = _matrix(index_dtype, dtype, rng)
    c_, d_ = _values(rng, (m.shape[0], width), dtype), _values(rng, (width, m.shape[1]), dtype)
    kernel = asp.compile(SDDMM[0], formats=SDDMM[1], num_threads=1)
    got = kernel(B=asp.Tensor.from_scipy(m, index_dtype=index_dtype), C=asp.Tensor.from_numpy(c_),
                 D=asp.Tensor.from_numpy(d_, format="d1d0")).to_scipy()
    expected = sddmm_in_loop_order(m, c_, d_, dtype)
    np.testing.assert_array_equal(got.indptr, m.indptr)
    np.testing.assert_array_equal(got.indices, m.indices)
    np.testing.assert_array_equal(got.data, expected)


@pytest.mark.parametrize("dtype, jammed", [(np.float32, True), (np.float64, True), (np.complex128, False)])
def test_complex_kernels_are_not_jammed(dtype, jammed):
    """(gcc contracts a complex multiply into fused multiply-adds differently in a jammed loop: the last
    bit of a sum moved.)"""
    kernel = asp.compile(SPMM[0], formats=SPMM[1], num_threads=1)
    types = Types({name: np.dtype(dtype) for name in "ABC"}, {name: np.dtype(np.int32) for name in "ABC"})
    source = generate(kernel.cin, types).source
    assert (f"+= {WIDE})" in source and f"+= {NARROW})" in source) == jammed
    assert ("_jam" in source) == jammed


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("rank", [1, 5, 8, 9])
def test_mttkrp_and_ttm_match_numpy_on_fibres_of_every_length(threads, rank):
    """Fibres of 0 .. 2 WIDE + 1 entries (the last level of a dense-filled CSF tensor with a ragged mask)."""
    rng = np.random.default_rng(rank)
    shape = (3, 2 * WIDE + 2, 2 * WIDE + 1)
    lengths = np.arange(shape[0] * shape[1]).reshape(shape[:2]) % (2 * WIDE + 2)
    mask = np.arange(shape[2]) < lengths[..., None]
    dense = np.where(mask, rng.random(shape), 0.0)
    tensor = asp.Tensor.from_numpy(dense, format="csf")
    c_, d_ = rng.random((shape[1], rank)), rng.random((shape[2], rank))
    mttkrp = asp.compile("A(i,l) = B(i,j,k) * C(j,l) * D(k,l)", formats={"B": "csf", "C": "dense", "D": "dense",
                                                                         "A": "dense"}, num_threads=threads)
    got = mttkrp(B=tensor, C=asp.Tensor.from_numpy(c_), D=asp.Tensor.from_numpy(d_))
    np.testing.assert_allclose(got, np.einsum("ijk,jl,kl->il", dense, c_, d_), rtol=1e-13)
    ttm = asp.compile("A(i,j,l) = B(i,j,k) * C(k,l)", formats={"B": "csf", "C": "dense", "A": "dense"},
                      num_threads=threads)
    got = ttm(B=tensor, C=asp.Tensor.from_numpy(d_))
    np.testing.assert_allclose(got, np.einsum("ijk,kl->ijl", dense, d_), rtol=1e-13)
    assert f"+= {WIDE})" in mttkrp.source and f"+= {NARROW})" in mttkrp.source


@pytest.mark.parametrize("count", [1, 4])
def test_a_loop_the_schedule_unrolls_is_not_jammed(count):
    """`unroll` puts `#pragma GCC unroll` right above its loop; jamming that loop would leave the pragma
    above an `if`, which gcc rejects (a drawn schedule found it). The user's loop stays as scheduled."""
    rng = np.random.default_rng(count)
    m = _matrix(np.int32, np.float64, rng)
    b = _values(rng, (m.shape[1], 9), np.float64)
    kernel = asp.compile(SPMM[0], formats=SPMM[1], schedule=asp.Schedule().unroll("k", count), num_threads=1)
    got = kernel(A=asp.Tensor.from_scipy(m), B=asp.Tensor.from_numpy(b))
    assert f"#pragma GCC unroll {count}" in kernel.source and "_jam" not in kernel.source
    np.testing.assert_allclose(got, m @ b, rtol=1e-12)
