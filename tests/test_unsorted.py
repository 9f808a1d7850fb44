"""Unsorted rows (`ds~`): `A @ B` returns them as scipy's product does; kernels that need them in order
sort them first (in C, once per Tensor), kernels that do not read them as they are."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from autosparse.tensor import native
from autosparse.tensor.slicing import cut, join

CASES = {
    "random": ((7, 6), (6, 5), 0.4),
    "non-square": ((3, 9), (9, 4), 0.5),
    "size-1": ((1, 1), (1, 1), 1.0),
    "single-entry": ((4, 4), (4, 4), 1 / 16),
    "empty": ((0, 3), (3, 2), 0.5),
    "all-zero": ((5, 4), (4, 6), 0.0),
}
INDEX_DTYPES = (np.int32, np.int64)


def _matrix(shape, density, seed):
    return sp.random(*shape, density=density, format="csr", random_state=seed).toarray()


def _csr(dense, index_dtype=np.int32):
    m = sp.csr_matrix(dense)
    return asp.Tensor(dense.shape, "csr", [{}, {"pos": m.indptr.astype(index_dtype),
                                                "crd": m.indices.astype(index_dtype)}], m.data.copy())


def _shuffled(dense, index_dtype=np.int32, seed=0, explicit_zero=False):
    """`dense` as `ds~` with each row's entries reversed, then shuffled (some rows out of order)."""
    m = sp.csr_matrix(dense)
    if explicit_zero and m.nnz:
        m.data[0] = 0.0
    rng = np.random.default_rng(seed)
    crd, vals = m.indices.copy(), m.data.copy()
    for i in range(m.shape[0]):
        lo, hi = m.indptr[i], m.indptr[i + 1]
        order = rng.permutation(hi - lo)[::-1] + lo
        crd[lo:hi], vals[lo:hi] = crd[order], vals[order]
    tensor = asp.Tensor(dense.shape, "ds~", [{}, {"pos": m.indptr.astype(index_dtype),
                                                  "crd": crd.astype(index_dtype)}], vals)
    return tensor


def _dense(value):
    return value if isinstance(value, np.ndarray) else value.to_numpy()


def _has_sorted_rows(tensor):
    pos, crd = tensor.levels[1]["pos"], tensor.levels[1]["crd"]
    return all(np.all(np.diff(crd[pos[i]:pos[i + 1]]) > 0) for i in range(tensor.shape[0]))


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES, ids=["int32", "int64"])
@pytest.mark.parametrize("case", CASES)
def test_a_product_is_unsorted_and_every_chain_computes_what_scipy_does(case, index_dtype):
    a_shape, b_shape, density = CASES[case]
    a, b = _matrix(a_shape, density, 1), _matrix(b_shape, density, 2)
    c, x = _matrix((a_shape[0], b_shape[1]), density, 3), np.arange(b_shape[1], dtype=float) + 1
    e = _matrix((b_shape[1], 3), density, 4)
    A, B, C, E = (_csr(m, index_dtype) for m in (a, b, c, e))
    with warnings.catch_warnings():
        warnings.simplefilter("error", asp.PerformanceWarning)  # sorting a product never warns
        P = A @ B
        assert P.format == asp.Format("ds~") and P.index_dtype == index_dtype
        np.testing.assert_allclose(P.to_numpy(), a @ b)
        np.testing.assert_allclose(_dense(P + C), a @ b + c)
        np.testing.assert_allclose(_dense(P * C), (a @ b) * c)
        np.testing.assert_allclose(_dense(P - C), a @ b - c)
        np.testing.assert_allclose(_dense(P @ x), (a @ b) @ x)
        Q = P @ E
        assert Q.format == asp.Format("ds~")
        np.testing.assert_allclose(Q.to_numpy(), a @ b @ e)
        np.testing.assert_allclose(Q.to_scipy().toarray(), a @ b @ e)
        assert (P + C).format == (P - C).format == asp.Format("ds~")  # gathered, not sorted
        assert (P * C).format == asp.Format("csr") and _has_sorted_rows(P * C)


def test_a_kernel_that_merges_an_unsorted_operand_sorts_it_and_keeps_the_sort(monkeypatch):
    a, c = _matrix((30, 20), 0.3, 5), _matrix((30, 20), 0.3, 6)
    for index_dtype in INDEX_DTYPES:
        A, C = _shuffled(a, index_dtype), _csr(c, index_dtype)
        assert A.keeps_conversions
        kernel = asp.compile("D(i,j) = A(i,j) * C(i,j)", formats={"A": "ds~", "C": "csr"})
        assert kernel.conversions == {"A": (asp.Format("ds~"), asp.Format("csr"))}
        converted = _counting_conversions(monkeypatch)
        with warnings.catch_warnings():
            warnings.simplefilter("error", asp.PerformanceWarning)
            for _ in range(3):
                np.testing.assert_allclose(kernel(A=A, C=C).to_numpy(), a * c)
        assert converted == [("ds~", "ds")]  # once: the sorted copy is kept on A
        assert A.to_format("csr") is A.to_format("csr")
        assert A.to_format("csr").index_dtype == index_dtype and _has_sorted_rows(A.to_format("csr"))


def _counting_conversions(monkeypatch):
    """Every native conversion from here on, (from, to), through the hook `Tensor.to_format` asks."""
    seen, installed = [], native._installed[0]

    def counting(tensor, fmt):
        seen.append((str(tensor.format), str(fmt)))
        return installed(tensor, fmt)

    monkeypatch.setattr(native, "_installed", [counting])
    return seen


@pytest.mark.parametrize("expression, others", [
    ("D(i,j) = A(i,j) * C(i,j)", {"C": "csr"}),
    ("D(i,j) = A(i,j) - C(i,j)", {"C": "csr"}),
    ("D(i,j) = A(i,j) + C(i,j)", {"C": "ds~"}),
    ("y(i) = A(i,j) * v(j)", {"v": "s"}),
])
@pytest.mark.parametrize("explicit_zero", [False, True])
def test_unsorted_operands_given_explicitly_merge_as_sorted(expression, others, explicit_zero):
    a, c = _matrix((9, 7), 0.4, 7), _matrix((9, 7), 0.4, 8)
    v = np.where(np.arange(7) % 3 == 0, 0.0, np.arange(7.0))
    A = _shuffled(a, explicit_zero=explicit_zero)
    if explicit_zero:  # the first stored entry is kept, as a zero
        a = np.where(np.arange(a.size).reshape(a.shape) == np.flatnonzero(a)[0], 0.0, a)
        assert A.nnz == np.count_nonzero(a) + 1
    operands = {"A": A}
    if "C" in others:
        operands["C"] = _shuffled(c, seed=1) if others["C"] == "ds~" else _csr(c)
    else:
        operands["v"] = asp.Tensor.from_numpy(v, format="s")
    got = asp.evaluate(expression, **operands)
    reference = {"*": a * c, "-": a - c, "+": a + c}
    expected = a @ v if "v" in operands else next(r for op, r in reference.items() if f" {op} " in expression)
    np.testing.assert_allclose(_dense(got), expected)


def test_kernels_that_need_no_order_read_an_unsorted_operand_as_it_is(monkeypatch):
    a, b = _matrix((8, 6), 0.4, 9), _matrix((6, 5), 0.4, 10)
    A = _shuffled(a)
    for expression, operands, expected in (
            ("y(i) = A(i,j) * x(j)", {"x": np.arange(6.0)}, a @ np.arange(6.0)),
            ("C(i,j) = A(i,k) * B(k,j)", {"B": _csr(b)}, a @ b),
            ("C(i,j) = B(i,k) * A(k,j)", {"B": _csr(np.ones((3, 8)))}, np.ones((3, 8)) @ a),
            ("s() = A(i,j)", {}, a.sum())):
        kernel = asp.compile(expression, formats={"A": "ds~", **{n: "csr" for n, v in operands.items()
                                                                if isinstance(v, asp.Tensor)}})
        assert "A" not in kernel.conversions, expression
        converted = _counting_conversions(monkeypatch)
        got = kernel(A=A, **operands)
        assert converted == []
        np.testing.assert_allclose(got if np.isscalar(got) else _dense(got), expected)
    assert A.sum() == pytest.approx(a.sum())
    np.testing.assert_allclose(A.to_numpy(), a)


def test_a_product_behaves_as_any_tensor():
    a, b = _matrix((40, 30), 0.2, 11), _matrix((30, 35), 0.2, 12)
    P = _csr(a) @ _csr(b)
    assert P.format == asp.Format("ds~") and not _has_sorted_rows(P)  # large enough rows to come unsorted
    s = P.to_scipy()
    assert isinstance(s, (sp.csr_matrix, sp.csr_array)) and not s.has_sorted_indices
    np.testing.assert_allclose((s + sp.csr_matrix(a @ b)).toarray(), 2 * (a @ b))  # scipy sorts where it needs
    s.sort_indices()
    np.testing.assert_allclose(s.toarray(), a @ b)
    np.testing.assert_allclose(P.T.to_numpy(), (a @ b).T)
    np.testing.assert_allclose(cut(P, 0, 3, 9).to_numpy(), (a @ b)[3:9])  # a partition's chunk
    np.testing.assert_allclose(join([cut(P, 0, 0, 3), cut(P, 0, 3, 40)], 0).to_numpy(), a @ b)
    np.testing.assert_allclose(pickle.loads(pickle.dumps(P)).to_numpy(), a @ b)
    np.testing.assert_allclose(P.prune().to_numpy(), a @ b)
    coords, values = P.to_coo()
    rebuilt = np.zeros(P.shape)
    rebuilt[tuple(coords)] = values
    np.testing.assert_allclose(rebuilt, a @ b)
    assert "ds~" in repr(P)


def test_a_requested_format_is_sorted():
    a, b = _matrix((40, 30), 0.2, 13), _matrix((30, 35), 0.2, 14)
    C = asp.evaluate("C(i,j) = A(i,k) * B(k,j)", A=_csr(a), B=_csr(b), format="csr")
    assert C.format == asp.Format("csr") and _has_sorted_rows(C)
    np.testing.assert_allclose(C.to_numpy(), a @ b)
    S = sp.csr_matrix(a) @ sp.csr_matrix(b)
    U = asp.evaluate("C(i,j) = A(i,k) * B(k,j)", A=sp.csr_matrix(a), B=sp.csr_matrix(b))
    assert U.format == asp.Format("ds~") and U.nnz == S.nnz


def test_csc_products_are_unsorted_in_their_last_level():
    a, b, c = _matrix((6, 5), 0.5, 15), _matrix((5, 7), 0.5, 16), _matrix((6, 7), 0.5, 17)
    A, B, C = (asp.Tensor.from_numpy(m, format="csc") for m in (a, b, c))
    P = A @ B
    assert P.format == asp.Format("d1s0~")
    np.testing.assert_allclose(P.to_numpy(), a @ b)
    np.testing.assert_allclose(_dense(P + C), a @ b + c)


@pytest.mark.parametrize("threads", [1, 2])
def test_chains_at_one_and_two_threads(threads):
    """Operands large enough (over PARALLEL_MIN_ENTRIES) to run on threads where allowed."""
    a, b, c = (_matrix((300, 300), 0.3, seed) for seed in (18, 19, 20))
    A, B, C = (_csr(m) for m in (a, b, c))
    P = asp.evaluate("C(i,j) = A(i,k) * B(k,j)", A=A, B=B, num_threads=threads)
    assert P.format == asp.Format("ds~")
    np.testing.assert_allclose(P.to_numpy(), a @ b)
    got = asp.evaluate("D(i,j) = P(i,j) + C(i,j)", P=P, C=C, num_threads=threads)
    np.testing.assert_allclose(got.to_numpy(), a @ b + c)
    got = asp.evaluate("D(i,j) = P(i,j) * C(i,j)", P=P, C=C, num_threads=threads)
    np.testing.assert_allclose(got.to_numpy(), (a @ b) * c)


def test_a_coo_tensor_converts_once_for_spmv(monkeypatch):
    a = _matrix((20, 15), 0.3, 21)
    A = asp.Tensor.from_numpy(a, format="coo")
    assert A.keeps_conversions
    kernel = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"})
    x = np.arange(15.0)
    converted = _counting_conversions(monkeypatch)
    with pytest.warns(asp.PerformanceWarning, match="converted once and the copy kept"):
        kernel(A=A, x=x)
    for _ in range(3):
        np.testing.assert_allclose(kernel(A=A, x=x), a @ x)
    assert len(converted) == 1


def test_a_tensor_sharing_writeable_arrays_keeps_nothing():
    """A Tensor that shares a scipy matrix's arrays changes when they do: it converts on every call."""
    m = sp.csc_matrix(_matrix((6, 5), 0.5, 22))
    A = asp.Tensor.from_scipy(m)
    assert not A.keeps_conversions
    assert A.to_format("csr") is not A.to_format("csr")
    kernel = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"})
    with pytest.warns(asp.PerformanceWarning, match="on every call"):
        kernel(A=A, x=np.ones(5))
    m.data[:] = 2.0
    np.testing.assert_allclose(kernel(A=A, x=np.ones(5)), (m.toarray() != 0).sum(1) * 2.0)


def test_a_tensor_keeps_at_most_two_conversions():
    T = _csr(_matrix((5, 4), 0.5, 23)) @ _csr(np.eye(4))  # a kernel's result: arrays of its own
    first, second = T.to_format("csc"), T.to_format("coo")
    assert T.to_format("csc") is first and T.to_format("coo") is second
    T.to_format("dcsr")
    assert T.to_format("coo") is second and T.to_format("csc") is not first
    assert pickle.loads(pickle.dumps(T))._conversions is None


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES, ids=["int32", "int64"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128, np.int64])
@pytest.mark.parametrize("shape, density", [((50, 40), 0.1), ((3, 200), 0.5), ((0, 5), 0.1), ((5, 0), 0.1),
                                            ((1, 1), 1.0), ((2, 300), 0.9)])
def test_the_native_row_sort_matches_scipy(shape, density, dtype, index_dtype):
    """Short rows sorted as pairs, long ones (over 32) through a dense row; CSC's columns the same way."""
    m = sp.random(*shape, density=density, format="csr", random_state=1)
    m.data = m.data * 100 + 1  # nonzero in every dtype
    m = m.astype(dtype)
    T = _shuffled(m.toarray(), index_dtype, seed=2)
    S = T.to_format("csr")
    assert S.format == asp.Format("csr") and S.index_dtype == index_dtype and S.dtype == dtype
    np.testing.assert_array_equal(S.levels[1]["crd"], m.indices)
    np.testing.assert_array_equal(S.vals, m.data)
    np.testing.assert_array_equal(T.T.to_format("csc").to_numpy(), m.toarray().T)
