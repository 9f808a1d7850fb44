"""Mixed storage orders: operands whose storage orders disagree are converted to concordant formats by the
default schedule (`kernel.conversions`), each call's conversion runs natively and warns once, and the
results equal scipy's and numpy.einsum's on dense copies."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from autosparse.runtime.conversion import native_conversion
from kernel_cases import stratified

FORMATS = ("csr", "csc", "coo", "dcsr")
INDEX_DTYPES = (np.int32, np.int64)


def _matrix(shape, case: str, seed: int) -> np.ndarray:
    """A dense matrix for `case`; its zeros are not stored, except the explicit zero `_tensor` adds."""
    rng = np.random.default_rng(seed)
    dense = np.where(rng.random(shape) < 0.4, rng.integers(1, 9, shape).astype(float), 0.0)
    if case == "empty" or not dense.size:
        return np.zeros(shape)
    if case == "single-entry":
        single = np.zeros(shape)
        single[shape[0] // 2, shape[1] - 1] = 3.0
        return single
    return dense


def _tensor(dense: np.ndarray, fmt: str, case: str, index_dtype) -> asp.Tensor:
    if case == "explicit-zeros" and dense.size:
        rows, cols = np.nonzero(dense)
        coords = np.array([[*rows, 0], [*cols, dense.shape[1] - 1]])
        values = np.array([*dense[rows, cols], 0.0])
        keep = np.unique(coords[0] * dense.shape[1] + coords[1], return_index=True)[1]  # one entry per place
        return asp.Tensor.from_coo(coords[:, keep], values[keep], dense.shape, format=fmt, index_dtype=index_dtype)
    return asp.Tensor.from_numpy(dense, format=fmt, index_dtype=index_dtype)


def _dense(result) -> np.ndarray:
    """A result as a numpy array: dense results may be arrays or Tensors, sparse ones are Tensors."""
    return result.to_numpy() if isinstance(result, asp.Tensor) else np.asarray(result)


CASES = {  # case -> (rows, inner, columns)
    "random": (5, 7, 4),
    "empty": (3, 4, 5),
    "single-entry": (4, 3, 6),
    "explicit-zeros": (6, 5, 3),
    "size-1": (1, 1, 1),
}
OPERATIONS = {  # name -> (expression, shapes of A and B from (rows, inner, columns), scipy reference)
    "add": ("C(i,j) = A(i,j) + B(i,j)", lambda n, k, m: ((n, m), (n, m)), lambda a, b: a + b),
    "multiply": ("C(i,j) = A(i,j) * B(i,j)", lambda n, k, m: ((n, m), (n, m)), lambda a, b: a.multiply(b)),
    "spgemm": ("C(i,j) = A(i,k) * B(k,j)", lambda n, k, m: ((n, k), (k, m)), lambda a, b: a @ b),
}
PAIRS = list(itertools.product(FORMATS, FORMATS))
RESULTS = (None, "csr", "csc")


def _mixed_grid() -> list:
    """Each operation on every pair of formats, each pair with one result format and every result format at
    least once (a stratified sample of (pair, result) per operation, as each compiles its own kernels); the
    rest under `-m grid`."""
    return [pytest.param(operation, *p.values[0], p.values[1], marks=p.marks,
                         id=f"{operation}-A={p.values[0][0]},B={p.values[0][1]}-C={p.values[1] or 'default'}")
            for operation in OPERATIONS for p in stratified((PAIRS, RESULTS), len(PAIRS), f"orders-{operation}")]


@pytest.mark.parametrize("operation, a_format, b_format, result", _mixed_grid())
def test_mixed_orders_match_scipy(operation, a_format, b_format, result):
    expression, shapes, reference = OPERATIONS[operation]
    for n, (case, extents) in enumerate(CASES.items()):
        a_shape, b_shape = shapes(*extents)
        a, b = _matrix(a_shape, case, 2 * n), _matrix(b_shape, case, 2 * n + 1)
        index_dtype = INDEX_DTYPES[n % 2]
        A, B = _tensor(a, a_format, case, index_dtype), _tensor(b, b_format, case, index_dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", asp.PerformanceWarning)
            got = asp.evaluate(expression, A=A, B=B, format=result)
        expected = reference(sp.csr_array(a), sp.csr_array(b))
        np.testing.assert_allclose(_dense(got), expected.toarray(), err_msg=case)
        if result is not None:
            assert got.format == asp.Format(result)
            assert got.index_dtype == np.dtype(index_dtype)


@pytest.mark.parametrize("a_format", FORMATS)
@pytest.mark.parametrize("case", CASES)
def test_spmv_in_every_order_matches_numpy(a_format, case):
    rows, _, columns = CASES[case]
    a = _matrix((rows, columns), case, 7)
    x = np.arange(1.0, columns + 1)
    A = _tensor(a, a_format, case, np.int64)
    np.testing.assert_allclose(_dense(asp.evaluate("y(i) = A(i,j) * x(j)", A=A, x=x)), np.einsum("ij,j->i", a, x))


@pytest.mark.parametrize("scipy_format", ["coo", "csc", "csr"])
def test_scipy_operands_of_another_order_compute_the_same(scipy_format):
    a = _matrix((6, 5), "random", 3)
    x = np.arange(5.0)
    matrix = sp.csr_matrix(a).asformat(scipy_format)
    kernel = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", asp.PerformanceWarning)
        np.testing.assert_allclose(_dense(kernel(A=matrix, x=x)), a @ x)


def test_unsorted_coordinates_with_duplicates_are_summed():
    rows, cols = np.array([2, 0, 2, 1, 0, 2]), np.array([1, 3, 1, 0, 3, 2])
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    matrix = sp.coo_matrix((values, (rows, cols)), shape=(3, 4))
    kernel = asp.compile("C(i,j) = A(i,j) + B(i,j)", formats={"A": "csr", "B": "csr", "C": "csr"})
    B = asp.Tensor.from_numpy(np.eye(3, 4), format="csr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", asp.PerformanceWarning)
        got = kernel(A=matrix, B=B)
    np.testing.assert_allclose(got.to_numpy(), matrix.toarray() + np.eye(3, 4))


# ----- what the default schedule chooses --------------------------------------------------------------------------

@pytest.mark.parametrize("expression, formats, conversions, cin", [
    ("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csc", "C": "csr"}, {"B": ("d1s0", "ds")},
     "∀i where(∀j C(i,j) = w(j), ∀k ∀j w(j) += A(i,k) * B(k,j))"),
    ("C(i,j) = A(i,k) * B(k,j)", {"A": "csc", "B": "csr", "C": "csr"}, {"A": ("d1s0", "ds")},
     "∀i where(∀j C(i,j) = w(j), ∀k ∀j w(j) += A(i,k) * B(k,j))"),
    ("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": "csc"}, {"A": ("ds", "d1s0"), "B": ("ds", "d1s0")},
     "∀j where(∀i C(i,j) = w(i), ∀k ∀i w(i) += A(i,k) * B(k,j))"),
    ("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": "csr"}, {},
     "∀i where(∀j C(i,j) = w(j), ∀k ∀j w(j) += A(i,k) * B(k,j))"),
    ("C(i,j) = A(i,j) + B(i,j)", {"A": "csr", "B": "csc", "C": "csr"}, {"B": ("d1s0", "ds")},
     "∀i ∀j C(i,j) = A(i,j) + B(i,j)"),
    ("C(i,j) = A(i,j) * B(i,j)", {"A": "dcsr", "B": "dcsc", "C": "dense"}, {"B": ("s1s0", "ss")},
     "∀i ∀j C(i,j) = A(i,j) * B(i,j)"),
    ("a() = B(i,j) * C(j,i)", {"B": "csr", "C": "csr"}, {"C": ("ds", "d1s0")}, "∀i ∀j a() += B(i,j) * C(j,i)"),
    ("A(i,j) = B(i,j) * C(i,k) * D(k,j)", {"B": "csr", "D": "csr", "A": "csr"}, {"D": ("ds", "d1s0")},
     "∀i ∀j ∀k A(i,j) += B(i,j) * C(i,k) * D(k,j)"),
    ("y(i) = A(i,j) * x(j)", {"A": "csc"}, {}, "∀j ∀i y(i) += A(i,j) * x(j)"),
    ("C(i,j) = A(i,j) + B(i,j)", {"A": "csc", "B": "dcsc", "C": "csc"}, {}, "∀j ∀i C(i,j) = A(i,j) + B(i,j)"),
], ids=["csr-csc-spgemm", "csc-csr-spgemm", "csr-csr-spgemm-into-csc", "csr-csr-spgemm", "csr-plus-csc",
        "dcsr-times-dcsc", "transposed-product", "sddmm-csr-d", "spmv-csc-kept", "concordant-kept"])
def test_the_default_schedule_computes_in_concordant_formats(expression, formats, conversions, cin):
    kernel = asp.compile(expression, formats=formats, num_threads=1)  # the sequential default (threads: test_threads)
    assert {name: (str(given), str(chosen)) for name, (given, chosen) in kernel.conversions.items()} == conversions
    assert str(kernel.cin) == cin


@pytest.mark.parametrize("stored, converted", [({"A": 10, "B": 5}, "B"), ({"A": 5, "B": 10}, "A")])
def test_the_operand_with_fewer_stored_entries_is_converted(stored, converted):
    kernel = asp.Kernel("C(i,j) = A(i,j) * B(i,j)", formats={"A": "csr", "B": "csc"}, stored=stored)
    assert list(kernel.conversions) == [converted]


def test_without_sizes_the_first_operand_keeps_its_order():
    kernel = asp.compile("C(i,j) = A(i,j) * B(i,j)", formats={"A": "csc", "B": "csr"})
    assert list(kernel.conversions) == ["B"]


def test_commands_apply_to_the_formats_given():
    kernel = asp.compile("C(i,j) = A(i,k) * B(k,j)", formats={"A": "csr", "B": "csc", "C": "csr"},
                         schedule="unroll(k, 2)")
    assert kernel.conversions == {}


# ----- the warning ------------------------------------------------------------------------------------------------

def _warnings(call) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught if issubclass(w.category, asp.PerformanceWarning)]


def test_a_converted_operand_warns_once_per_kernel_and_operand():
    a = _matrix((5, 6), "random", 1)
    A, B = asp.Tensor.from_numpy(a, format="csr"), asp.Tensor.from_numpy(a.T, format="csc")
    kernel = asp.compile("C(i,j) = A(i,k) * B(k,j)", formats={"A": "csr", "B": "csc", "C": "csr"})
    first = _warnings(lambda: kernel(A=A, B=B))
    assert len(first) == 1 and "B" in first[0] and "B.to_format('ds')" in first[0]
    assert _warnings(lambda: kernel(A=A, B=B)) == []
    again = asp.compile("C(i,j) = A(i,k) * B(k,j)", formats={"A": "csr", "B": "csc", "C": "csr"})
    assert len(_warnings(lambda: again(A=A, B=B))) == 1  # another kernel
    assert _warnings(lambda: kernel(A=A, B=B.to_format("ds"))) == []  # converted once: nothing to warn about


def test_a_scipy_coo_matrix_warns_with_the_conversion_to_make():
    """Where the kernel cannot read it as stored (not linear in A; test_coo_operands)."""
    a = _matrix((5, 6), "random", 2)
    ordered = sp.coo_matrix(a)
    reversed_rows = sp.coo_matrix((ordered.data[::-1], (ordered.row[::-1], ordered.col[::-1])), shape=a.shape)
    kernel = asp.compile("y(i) = A(i,j) * A(i,j) * x(j)", formats={"A": "csr"})
    caught = _warnings(lambda: kernel(A=reversed_rows, x=np.ones(6)))
    assert len(caught) == 1 and "coo" in caught[0] and "asp.Tensor.from_scipy(A, format='ds')" in caught[0]
    assert _warnings(lambda: kernel(A=reversed_rows, x=np.ones(6))) == []
    assert _warnings(lambda: asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"})(A=sp.csr_matrix(a),
                                                                                       x=np.ones(6))) == []


def test_dense_operands_never_warn():
    kernel = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"})
    assert _warnings(lambda: kernel(A=np.eye(3), x=np.ones(3))) == []


# ----- the native conversion --------------------------------------------------------------------------------------

def _same_storage(got: asp.Tensor, expected: asp.Tensor) -> None:
    assert got.format == expected.format and got.shape == expected.shape
    for mine, theirs in zip(got.levels, expected.levels):
        assert mine.keys() == theirs.keys()
        for name in mine:
            assert mine[name].dtype == theirs[name].dtype
            np.testing.assert_array_equal(mine[name], theirs[name])
    assert got.vals.dtype == expected.vals.dtype
    np.testing.assert_array_equal(got.vals, expected.vals)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES, ids=["int32", "int64"])
@pytest.mark.parametrize("value_dtype", [np.float64, np.float32, np.int64, np.complex128], ids=str)
@pytest.mark.parametrize("shape", [(5, 7), (1, 1), (0, 3), (3, 0), (40, 30)], ids=str)
@pytest.mark.parametrize("source", ["csr", "csc", "coo", "u1q0"])
def test_native_conversion_equals_to_format(source, shape, value_dtype, index_dtype):
    matrix = sp.random(*shape, density=0.3, format="csr", random_state=1).astype(value_dtype)
    if matrix.nnz:
        matrix.data[0] = 0  # an explicit zero is kept
    tensor = asp.Tensor.from_scipy(matrix, format=source, index_dtype=index_dtype)
    for target in ("csr", "csc"):
        converted = native_conversion(tensor, asp.Format(target))
        if tensor.format == asp.Format(target):
            assert converted is None
        else:
            _same_storage(converted, _generic(tensor, target, index_dtype))
            _same_storage(tensor.to_format(target), converted)  # Tensor.to_format converts natively too


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES, ids=["int32", "int64"])
def test_unsorted_coordinates_convert_like_to_format(index_dtype):
    rng = np.random.default_rng(4)
    rows, cols = rng.integers(0, 50, 400), rng.integers(0, 3, 400)  # long rows (merge sort) and short
    rows[:300] = 7
    place = np.unique(rows * 3 + cols, return_index=True)[1]
    rows, cols = rows[place], cols[place]
    order = rng.permutation(len(rows))
    levels = [{"pos": np.array([0, len(rows)], dtype=index_dtype), "crd": rows[order].astype(index_dtype)},
              {"crd": cols[order].astype(index_dtype)}]
    unsorted = asp.Tensor((50, 3), "u~q", levels, rng.random(len(rows)))
    for target in ("csr", "csc"):
        _same_storage(native_conversion(unsorted, asp.Format(target)), _generic(unsorted, target, index_dtype))


def _generic(tensor: asp.Tensor, target: str, index_dtype) -> asp.Tensor:
    """`tensor` in `target` by the generic path (canonical entries sorted in numpy), not the native one."""
    coords, values = tensor.to_coo()
    return asp.Tensor.from_coo(coords, values, tensor.shape, format=target, index_dtype=index_dtype)


def test_repeated_coordinates_are_left_to_to_format():
    levels = [{"pos": np.array([0, 3]), "crd": np.array([1, 0, 1])}, {"crd": np.array([2, 0, 2])}]
    repeated = asp.Tensor((2, 3), "u~q", levels, np.array([1.0, 2.0, 3.0]))
    assert native_conversion(repeated, asp.Format("csr")) is None


def test_other_pairs_are_not_native():
    tensor = asp.Tensor.from_numpy(np.eye(3), format="dcsr")
    assert native_conversion(tensor, asp.Format("csc")) is None
    assert native_conversion(asp.Tensor.from_numpy(np.eye(3), format="csr"), asp.Format("dd")) is None


def test_the_warning_names_the_callers_line():
    a = sp.csr_matrix(_matrix((4, 4), "random", 5))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asp.evaluate("C(i,j) = A(i,j) + B(i,j)", A=a, B=a.tocsc(), format="csr")
    assert [w.filename for w in caught if issubclass(w.category, asp.PerformanceWarning)] == [__file__]


@pytest.mark.parametrize("result", ["coo", "csc", "csr"])
def test_a_dense_operand_gives_way_to_a_sparse_order(result):
    """A dense operand is read at random: its order never makes the storage orders cyclic."""
    a, b = _matrix((4, 5), "random", 8), _matrix((4, 5), "random", 9) + 1
    for expression, reference in (("C(i,j) = A(i,j) + B(i,j)", a + b), ("C(i,j) = A(i,j) * B(i,j)", a * b)):
        got = asp.evaluate(expression, A=asp.Tensor.from_numpy(a, format="csc"), B=b, format=result)
        np.testing.assert_allclose(got.to_numpy(), reference)
