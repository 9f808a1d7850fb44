"""Dense results zeroed by the kernel (lower/loops.py): where the outermost loop runs over every row of a
dense result and each iteration writes only its own row, the iteration zeroes the row first and the
caller allocates the result uninitialised (`KernelSource.zeroes_result`); everywhere else the caller
still zeroes it. The caller's buffer is poisoned with NaN here, so a row the kernel fails to zero (an
empty row: the classic bug) shows; the results are compared with numpy on dense copies."""

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from autosparse.lower.kernel import generate
from autosparse.runtime import calls
from autosparse.runtime.abi import Types

SPMV = "y(i) = A(i,j) * x(j)"
SPMV_T = "y(j) = A(i,j) * x(i)"
SPMM = "C(i,j) = A(i,k) * B(k,j)"
MTTKRP = "A(i,l) = B(i,j,k) * C(j,l) * D(k,l)"
TTM = "A(i,j,l) = B(i,j,k) * C(k,l)"


class _PoisonedNumpy:
    """numpy as runtime.calls sees it, except that `empty` hands out NaN-filled arrays and counts them."""

    def __init__(self):
        self.empty_calls, self.zeros_calls = 0, 0

    def __getattr__(self, name):
        return getattr(np, name)

    def empty(self, size, dtype):
        self.empty_calls += 1
        return np.full(size, np.nan, dtype=dtype)

    def zeros(self, size, dtype):
        self.zeros_calls += 1
        return np.zeros(size, dtype=dtype)


@pytest.fixture
def poisoned(monkeypatch) -> _PoisonedNumpy:
    fake = _PoisonedNumpy()
    monkeypatch.setattr(calls, "np", fake)
    return fake


def _matrices(index_dtype) -> list[sp.csr_array]:
    """Empty rows among full ones, no entries at all, one entry, size 1, non-square both ways, explicit zeros."""
    rng = np.random.default_rng(7)
    ragged = np.where(rng.random((9, 5)) < 0.4, rng.random((9, 5)), 0)
    ragged[[0, 4, 8]] = 0
    explicit = sp.csr_array((np.array([0.0, 2.0, 0.0]), np.array([0, 2, 1]), np.array([0, 1, 1, 3])), shape=(3, 4))
    matrices = [sp.csr_array(ragged), sp.csr_array((4, 3)), sp.csr_array(([5.0], ([2], [1])), shape=(3, 3)),
                sp.csr_array(np.array([[2.0]])), sp.csr_array(rng.random((2, 7))), explicit,
                sp.csr_array(np.where(rng.random((7, 2)) < 0.5, rng.random((7, 2)), 0))]
    for m in matrices:
        m.indices, m.indptr = m.indices.astype(index_dtype), m.indptr.astype(index_dtype)
    return matrices


def _zeroes(expression: str, formats: dict[str, str]) -> bool:
    kernel = asp.compile(expression, formats=formats, num_threads=1)
    names = set(formats) | {"x", "y"}
    types = Types({n: np.dtype(np.float64) for n in names}, {n: np.dtype(np.int32) for n in names})
    return generate(kernel.cin, types).zeroes_result


@pytest.mark.parametrize("expression, formats, zeroes", [
    (SPMV, {"A": "csr"}, True),
    (SPMM, {"A": "csr", "B": "dense", "C": "dense"}, True),
    (MTTKRP, {"B": "dss", "C": "dense", "D": "dense", "A": "dense"}, True),
    (TTM, {"B": "dss", "C": "dense", "A": "dense"}, True),
    (SPMV, {"A": "csc"}, False),  # summed into from the outer loop over columns
    (SPMV_T, {"A": "csr"}, False),  # the same, spelled as the transpose
    (SPMV, {"A": "dcsr", "y": "dense"}, False),  # the outer loop visits only the stored rows
    (MTTKRP, {"B": "csf", "C": "dense", "D": "dense", "A": "dense"}, False),
    (TTM, {"B": "csf", "C": "dense", "A": "dense"}, False),
])
def test_the_kernel_zeroes_its_result_only_where_one_iteration_owns_each_row(expression, formats, zeroes):
    assert _zeroes(expression, formats) is zeroes


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("fmt, owners", [("csr", 1), ("csc", 1), ("dcsr", 0)])
def test_spmv_and_its_transpose_match_numpy_on_a_poisoned_allocation(poisoned, fmt, owners, index_dtype, threads):
    """Over CSR the product owns its rows, its transpose sums into them; over CSC the other way round;
    over DCSR neither visits every row."""
    spmv = asp.compile(SPMV, formats={"A": fmt, "y": "dense"}, num_threads=threads)
    spmv_t = asp.compile(SPMV_T, formats={"A": fmt, "y": "dense"}, num_threads=threads)
    for m in _matrices(index_dtype):
        a = asp.Tensor.from_scipy(m, format=fmt, index_dtype=index_dtype)
        x, xt = np.arange(1.0, m.shape[1] + 1), np.arange(1.0, m.shape[0] + 1)
        np.testing.assert_allclose(spmv(A=a, x=asp.Tensor.from_numpy(x)), m.toarray() @ x, rtol=1e-14)
        np.testing.assert_allclose(spmv_t(A=a, x=asp.Tensor.from_numpy(xt)), m.toarray().T @ xt, rtol=1e-14)
    count = len(_matrices(index_dtype))
    assert (poisoned.empty_calls, poisoned.zeros_calls) == (owners * count, (2 - owners) * count)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("width", [1, 3, 9])
def test_spmm_matches_numpy_on_a_poisoned_allocation(poisoned, width, index_dtype, threads):
    spmm = asp.compile(SPMM, formats={"A": "csr", "B": "dense", "C": "dense"}, num_threads=threads)
    matrices = _matrices(index_dtype)
    for m in matrices:
        b = np.random.default_rng(width).random((m.shape[1], width))
        got = spmm(A=asp.Tensor.from_scipy(m, index_dtype=index_dtype), B=asp.Tensor.from_numpy(b))
        np.testing.assert_allclose(got, m.toarray() @ b, rtol=1e-14)
    assert (poisoned.empty_calls, poisoned.zeros_calls) == (len(matrices), 0)


def _tensors() -> list[np.ndarray]:
    """Slices with no entries among full ones, no entries at all, size 1, one entry."""
    rng = np.random.default_rng(3)
    ragged = np.where(rng.random((5, 4, 3)) < 0.4, rng.random((5, 4, 3)), 0.0)
    ragged[[0, 3]] = 0
    single = np.zeros((2, 3, 2))
    single[1, 2, 0] = 4.0
    return [ragged, np.zeros((3, 2, 4)), np.array([[[2.0]]]), single]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("fmt, owned", [("dss", True), ("csf", False)])
def test_mttkrp_and_ttm_match_numpy_on_a_poisoned_allocation(poisoned, fmt, owned, threads):
    mttkrp = asp.compile(MTTKRP, formats={"B": fmt, "C": "dense", "D": "dense", "A": "dense"}, num_threads=threads)
    ttm = asp.compile(TTM, formats={"B": fmt, "C": "dense", "A": "dense"}, num_threads=threads)
    tensors = _tensors()
    for dense in tensors:
        rng = np.random.default_rng(dense.size)
        c_, d_ = rng.random((dense.shape[1], 3)), rng.random((dense.shape[2], 3))
        b = asp.Tensor.from_numpy(dense, format=fmt)
        got = mttkrp(B=b, C=asp.Tensor.from_numpy(c_), D=asp.Tensor.from_numpy(d_))
        np.testing.assert_allclose(got, np.einsum("ijk,jl,kl->il", dense, c_, d_), rtol=1e-14)
        got = ttm(B=b, C=asp.Tensor.from_numpy(d_))
        np.testing.assert_allclose(got, np.einsum("ijk,kl->ijl", dense, d_), rtol=1e-14)
    expected = (2 * len(tensors), 0) if owned else (0, 2 * len(tensors))
    assert (poisoned.empty_calls, poisoned.zeros_calls) == expected


@pytest.mark.parametrize("threads", [1, 2])
def test_a_one_entry_row_is_zeroed_by_a_store_and_not_at_all_where_a_register_assigns_it(poisoned, threads):
    """SpMV's row is its register's assignment, so zeroing it first is a dead store (which gcc keeps inside
    an OpenMP region); SpMV + z, whose row is stored otherwise, keeps a plain zeroing store."""
    spmv = asp.compile(SPMV, formats={"A": "csr"}, num_threads=threads)
    plus = asp.compile("y(i) = A(i,j) * x(j) + z(i)", formats={"A": "csr"}, num_threads=threads)
    assert "memset" not in spmv.source and "y_vals[i_] = 0;" not in spmv.source
    assert "memset" not in plus.source and "y_vals[i_] = 0;" in plus.source
    for m in _matrices(np.int64):
        x, z = np.arange(1.0, m.shape[1] + 1), np.arange(2.0, m.shape[0] + 2)
        a = asp.Tensor.from_scipy(m, index_dtype=np.int64)
        np.testing.assert_allclose(spmv(A=a, x=asp.Tensor.from_numpy(x)), m.toarray() @ x, rtol=1e-14)
        got = plus(A=a, x=asp.Tensor.from_numpy(x), z=asp.Tensor.from_numpy(z))
        np.testing.assert_allclose(got, m.toarray() @ x + z, rtol=1e-14)
    assert poisoned.zeros_calls == 0
