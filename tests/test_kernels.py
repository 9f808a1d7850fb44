"""Differential tests of compiled kernels against numpy.einsum on dense copies.

Every kind of kernel in `kernel_cases.kinds()` (copies, element-wise, dot, SpMV/SpMSpV, SpMM, SpGEMM, SDDMM,
TTV, TTM, MTTKRP, inner products, scaling, A*(B+C)) runs over its grid of format assignments, each with one
(value dtype, index dtype) pair in turn, on the input cases (rectangular, a 0 extent in an output or a
reduction index, all-zero, one entry, explicit zeros, size 1, full). By default a covering set of
assignments runs per kind (every format of every operand and every dtype pair at least once), each on the
rectangular case and on one edge case, with every edge case of every kind at least once; all of them with
`-m grid`. The reference is computed before any Tensor is built; numpy's and scipy's products raise during the
kernel call.

Parametrisations that fail because of a compiler bug are strict xfails whose reason starts with "BUG:";
a combination whose storage orders are cyclic is computed with operands converted to concordant formats
(tests/test_orders.py).
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Mapping, Sequence

import numpy as np
import pytest
import scipy.sparse

import autosparse as asp
from conftest import densified
from kernel_cases import (DTYPES, HASHED_WRITE_FORMATS, Kind, _peer_math_guard, bug, check_result,  # noqa: F401
                          dtype_id, format_id, kinds, no_peer_math, read_statement, reference,
                          run_differential, run_isolated, stratified, strided_index_arrays)

# ----- the known compiler bugs, as predicates over (kind, formats, case, value dtype, index dtype) ---------------
#
# Fixed in 48a7491 and kept as regression tests: BUG_COO_INT64 below; a product of a dense (or hashed) and a
# sparse factor plus another operand losing the other operand's points (kind "mul-sub"); float32 * 2
# promoting to float64 (kind "scale-literal"); a d1s0s2 -> dds copy refused by lowering (kind "copy3");
# hashed results built like compressed ones (kinds "copy-hashed*", test_hashed_output_is_refused_or_correct).
# Fixed later: hashed results taking int32 indices although a sparse operand uses int64 (kinds "copy-hashed*").

BUG_COO_INT64 = ("Tensor.from_numpy(..., format='coo', index_dtype=np.int64) stored crd arrays as strided views "
                 "(strides 16) and the kernel passed .ctypes.data as if contiguous: wrong values, invalid "
                 "outputs, hangs and heap corruption (fixed in 48a7491)")


def known_bugs(kind: Kind, formats, case: str, value_dtype, index_dtype) -> list:
    """Strict xfails for open compiler bugs (none at the moment)."""
    return []


# ----- the grid -------------------------------------------------------------------------------------------------

MAIN_CASE = "rect"


def covering(grid: Sequence[Mapping[str, str]], seed: str) -> list[int]:
    """Positions in `grid` of a small set of format assignments that gives every operand (the result
    included) each of its formats and uses each (value dtype, index dtype) pair, chosen greedily: each step
    takes the assignment that covers most of what is still missing, ties broken by a generator seeded with
    `seed`."""
    items = [{*formats.items(), ("dtypes", n % len(DTYPES))} for n, formats in enumerate(grid)]
    missing = set().union(*items)
    order = random.Random(zlib.crc32(seed.encode())).sample(range(len(grid)), len(grid))
    picked = []
    while missing:
        best = max(order, key=lambda n: len(items[n] & missing))
        picked.append(best)
        missing -= items[best]
    return sorted(picked)


def _grid():
    """Per kind, a covering set of format assignments (every format of every operand, every dtype pair) on
    the main case, each also on one edge case, every edge case at least once (a stratified sample of
    (assignment, case)); every other assignment and case under `-m grid`. Each assignment compiles its own
    kernel, which is what the default run's time goes on."""
    for kind in kinds():
        result = read_statement(kind.expression).lhs.name
        edges = tuple(case for case in kind.cases if case != MAIN_CASE)
        chosen = covering(kind.grid, f"kernels-{kind.name}")
        sampled = {tuple(p.values): p.marks for p in stratified((chosen, edges), len(chosen), f"kernels-{kind.name}")}
        for n, formats in enumerate(kind.grid):
            value_dtype, index_dtype = DTYPES[n % len(DTYPES)]
            ident = f"{kind.name}[{format_id(formats, result)}]"
            for case in kind.cases:
                marks = () if case == MAIN_CASE else sampled.get((n, case), ())
                yield pytest.param(kind, formats, case, value_dtype, index_dtype,
                                   id=f"{ident}-{case}-{dtype_id(value_dtype, index_dtype)}",
                                   marks=[*(marks if n in chosen else [pytest.mark.grid]),
                                          *known_bugs(kind, formats, case, value_dtype, index_dtype)])


@pytest.mark.parametrize("kind, formats, case, value_dtype, index_dtype", list(_grid()))
def test_kernel_matches_numpy(kind, formats, case, value_dtype, index_dtype):
    run_differential(kind.expression, formats, case, value_dtype, index_dtype)


# ----- BUG_COO_INT64 on its own: operands straight from Tensor.from_numpy -----------------------------------------

_STRIDED = [
    ("B(i,j) = A(i,j)", {"A": "coo", "B": "dense"}, "A"),
    ("B(i,j) = A(i,j)", {"A": "u1q0", "B": "csr"}, "A"),
    ("B(i,j,k) = A(i,j,k)", {"A": "coo", "B": "csf"}, "A"),
    ("y(i) = A(i,j) * x(j)", {"A": "coo", "x": "d", "y": "d"}, "A"),
    ("C(i,j) = A(i,j) + B(i,j)", {"A": "coo", "B": "csr", "C": "csr"}, "A"),
    ("C(i,j) = A(i,k) * B(k,j)", {"A": "coo", "B": "csr", "C": "dense"}, "A"),
]


@pytest.mark.parametrize("expression, formats, name", [
    pytest.param(e, f, n, id=format_id(f, read_statement(e).lhs.name)) for e, f, n in _STRIDED])
def test_coo_int64_operand_from_numpy(expression, formats, name):
    """BUG_COO_INT64: from a (row-major sorted) dense array; run in a child process, as the bug corrupted
    the heap."""
    dense = np.array([[0, 1.5, 2, 0.5], [0, 0, 0, 0], [0, 0, 0, 3]])
    if "k" in read_statement(expression).lhs.indices:
        dense = np.stack([dense, 2 * dense])
    statement = read_statement(expression)
    arrays = {n: dense if n == name else np.arange(1.0, 1 + np.prod(dense.shape)).reshape(dense.shape)
              for n in statement.operands}
    if "x" in arrays:
        arrays["x"] = np.array([1.0, 2, 3, 4])
    if "B" in arrays and "k" in statement.indices and statement.lhs.indices == ("i", "j"):
        arrays["B"] = np.arange(1.0, 9).reshape(4, 2)
    extents = {}
    for n, indices in statement.operands.items():
        extents.update(zip(indices, arrays[n].shape))
    expected = reference(statement, arrays, extents)

    def body():
        operands = {n: asp.Tensor.from_numpy(a, format=formats.get(n, "dense"), index_dtype=np.int64)
                    for n, a in arrays.items()}
        assert not any(strided_index_arrays(t) for t in operands.values())
        kernel = asp.compile(expression, formats=formats)
        with no_peer_math():
            result = kernel(**operands)
        check_result(result, expected, np.abs(expected), np.float64, formats[statement.lhs.name])
    run_isolated(body)


# ----- every dtype pair for a few kernels -----------------------------------------------------------------------

_DTYPE_KERNELS = (
    ("y(i) = A(i,j) * x(j)", {"A": "csr", "x": "s", "y": "s"}),
    ("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": "csr"}),
    ("C(i,j) = A(i,j) + B(i,j)", {"A": "dcsr", "B": "csr", "C": "dcsr"}),
    ("a() = B(i,j,k) * C(i,j,k)", {"B": "csf", "C": "dds"}),
)


@pytest.mark.parametrize("value_dtype, index_dtype", DTYPES, ids=[dtype_id(*d) for d in DTYPES])
@pytest.mark.parametrize("expression, formats", _DTYPE_KERNELS, ids=[e for e, _ in _DTYPE_KERNELS])
def test_every_dtype_pair(expression, formats, value_dtype, index_dtype):
    for case in ("rect", "explicit-zero"):
        run_differential(expression, formats, case, value_dtype, index_dtype, seed=7)


def test_mixed_value_dtypes_promote_like_numpy():
    A = np.array([[1.5, 0, 2], [0, 0, 3]], dtype=np.float32)
    x = np.array([1 / 3, 2, 3], dtype=np.float64)
    expected = np.einsum("ij,j->i", A.astype(np.float64), x)
    kernel = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"})
    operands = {"A": asp.Tensor.from_numpy(A, format="csr"), "x": asp.Tensor.from_numpy(x)}
    with no_peer_math():
        y = kernel(**operands)
    assert y.dtype == np.float64
    np.testing.assert_allclose(densified(y), expected, rtol=1e-12)


# ----- values: cancellation, scalars, order-0 results ---------------------------------------------------------------

@pytest.mark.parametrize("fmt, index_dtype", [
    pytest.param(f, d, id=f"{f}-{np.dtype(d).name}")
    for f in ("csr", "dcsr", "coo", "csc") for d in (np.int32, np.int64)])
def test_cancellation_keeps_explicit_zeros(fmt, index_dtype):
    dense = np.array([[0, 1.5, 0, 2], [0, 0, 0, 0], [3, 0, 0.25, 0]])
    expected_nnz = int(np.count_nonzero(dense))
    A = asp.Tensor.from_numpy(dense, format=fmt, index_dtype=index_dtype)
    B = asp.Tensor.from_numpy(dense.copy(), format=fmt, index_dtype=index_dtype)
    kernel = asp.compile("C(i,j) = A(i,j) - B(i,j)", formats={"A": fmt, "B": fmt, "C": fmt})

    def body():
        with no_peer_math():
            C = kernel(A=A, B=B)
        assert C.nnz == expected_nnz, "explicit zeros produced by cancellation must be kept"
        np.testing.assert_array_equal(C.vals, np.zeros(expected_nnz))
        np.testing.assert_array_equal(densified(C), np.zeros_like(dense))
        assert C.prune().nnz == 0
    assert not strided_index_arrays(A)
    body()


def test_multiplication_by_an_explicit_zero_keeps_the_entry():
    coords = np.array([[0, 1], [1, 2]])
    A = asp.Tensor.from_coo(coords, np.array([0.0, 2.0]), (2, 3), format="csr")
    B = asp.Tensor.from_coo(coords, np.array([5.0, 0.0]), (2, 3), format="csr")
    with no_peer_math():
        C = asp.compile("C(i,j) = A(i,j) * B(i,j)", formats={"A": "csr", "B": "csr", "C": "csr"})(A=A, B=B)
    assert C.nnz == 2
    np.testing.assert_array_equal(densified(C), np.zeros((2, 3)))


@pytest.mark.parametrize("scalar", [2.5, np.float64(2.5), np.asarray(2.5), "tensor"],
                         ids=["python-float", "numpy-scalar", "0d-array", "0d-tensor"])
def test_scalar_operand_in_every_spelling(scalar):
    B = np.array([[1.0, 0, 2], [0, 0, 4]])
    expected = 2.5 * B
    if isinstance(scalar, str):
        scalar = asp.Tensor.from_numpy(np.asarray(2.5))
    operands = {"s": scalar, "B": asp.Tensor.from_numpy(B, format="csr")}
    kernel = asp.compile("A(i,j) = s * B(i,j)", formats={"B": "csr", "A": "csr"})
    with no_peer_math():
        A = kernel(**operands)
    check_result(A, expected, np.abs(expected), np.float64, "csr")


def test_order_zero_result_is_a_python_number():
    b, c = np.array([1.0, 0, 3]), np.array([2.0, 5, 0.5])
    expected = float(np.einsum("i,i->", b, c))
    kernel = asp.compile("a() = b(i) * c(i)", formats={"b": "s", "c": "d"})
    operands = {"b": asp.Tensor.from_numpy(b, format="s"), "c": c}
    with no_peer_math():
        result = kernel(**operands)
    assert type(result) is float and result == expected


def test_a_kernel_is_reused_across_shapes_and_inputs():
    kernel = asp.compile("C(i,j) = A(i,k) * B(k,j)", formats={"A": "csr", "B": "csr", "C": "csr"})
    rng = np.random.default_rng(3)
    for shape in ((2, 3, 4), (5, 1, 2), (0, 3, 3), (4, 4, 4), (1, 1, 1)):
        i, k, j = shape
        A = np.where(rng.random((i, k)) < 0.5, rng.integers(1, 9, (i, k)), 0).astype(float)
        B = np.where(rng.random((k, j)) < 0.5, rng.integers(1, 9, (k, j)), 0).astype(float)
        expected = np.einsum("ik,kj->ij", A, B)
        operands = {"A": asp.Tensor.from_numpy(A, format="csr"), "B": asp.Tensor.from_numpy(B, format="csr")}
        with no_peer_math():
            C = kernel(**operands)
        check_result(C, expected, expected, np.float64, "csr")


# ----- the other entry points --------------------------------------------------------------------------------------

def test_evaluate_and_einsum_match_numpy():
    rng = np.random.default_rng(11)
    A = np.where(rng.random((4, 5)) < 0.4, rng.integers(1, 9, (4, 5)), 0).astype(float)
    B = np.where(rng.random((5, 3)) < 0.4, rng.integers(1, 9, (5, 3)), 0).astype(float)
    x = rng.integers(1, 9, 5).astype(float)
    expected_y, expected_c = np.einsum("ij,j->i", A, x), np.einsum("ik,kj->ij", A, B)
    At, Bt = asp.Tensor.from_numpy(A, format="csr"), asp.Tensor.from_numpy(B, format="dcsr")
    with no_peer_math():
        y = asp.evaluate("y(i) = A(i,j) * x(j)", A=At, x=x, format="s")
        C = asp.einsum("ik,kj->ij", At, Bt, format="csr")
        D = asp.einsum("ik,kj", At, B)
        s = asp.einsum("ij,ij->", At, At)
    check_result(y, expected_y, expected_y, np.float64, "s")
    check_result(C, expected_c, expected_c, np.float64, "csr")
    check_result(D, expected_c, expected_c, np.float64, "dense")
    assert s == pytest.approx(float(np.sum(A * A)))


@pytest.mark.parametrize("kind", ["csr", "csc", "coo"])
def test_scipy_operands(kind):
    rng = np.random.default_rng(5)
    dense = np.where(rng.random((4, 6)) < 0.4, rng.integers(1, 9, (4, 6)), 0).astype(float)
    x = rng.integers(1, 9, 6).astype(float)
    expected = np.einsum("ij,j->i", dense, x)
    matrix = {"csr": scipy.sparse.csr_matrix, "csc": scipy.sparse.csc_matrix, "coo": scipy.sparse.coo_matrix}[kind](
        dense)
    with no_peer_math():
        y = asp.evaluate("y(i) = A(i,j) * x(j)", A=matrix, x=x)
    check_result(y, expected, expected, np.float64, "dense")


# ----- hashed outputs: refused with a documented error, or right --------------------------------------

_HASHED_OUTPUTS = [
    ("b(i) = a(i)", {"a": "s"}, "b", "h"),
    ("B(i,j) = A(i,j)", {"A": "csr"}, "B", "dh"),
    ("B(i,j) = A(i,j)", {"A": "csr"}, "B", "h1d0"),
    ("C(i,j) = A(i,j) + B(i,j)", {"A": "csr", "B": "csr"}, "C", "dh"),
    ("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr"}, "C", "dh"),
    ("C(i,j,k) = A(i,j,k)", {"A": "csf"}, "C", "ddh"),
]
assert {f for *_, f in _HASHED_OUTPUTS} >= {f for fs in HASHED_WRITE_FORMATS.values() for f in fs}

@pytest.mark.parametrize("expression, formats, result, out", [
    pytest.param(e, f, r, o, id=f"{e}->{o}") for e, f, r, o in _HASHED_OUTPUTS])
def test_hashed_output_is_refused_or_correct(expression, formats, result, out):
    formats = {**formats, result: out}
    try:
        run_differential(expression, formats, "rect", np.float64, np.int32)
    except asp.AutosparseError as error:
        assert type(error) is not asp.AutosparseError, "expected a documented subclass"


# ----- the guard itself -------------------------------------------------------------------------------------------

def test_products_raise_only_inside_the_guard():
    a = np.arange(4.0)
    matrix = scipy.sparse.random(4, 4, density=0.5, format="csr", random_state=1)
    assert np.einsum("i,i->", a, a) == 14.0
    np.testing.assert_allclose(matrix @ a, matrix.toarray() @ a)
    for call in (lambda: np.einsum("i,i->", a, a), lambda: np.dot(a, a), lambda: np.matmul(a, a),
                 lambda: np.tensordot(a, a, 1), lambda: matrix @ a, lambda: matrix.dot(a),
                 lambda: matrix @ matrix, lambda: matrix.multiply(matrix), lambda: matrix + matrix):
        with no_peer_math(), pytest.raises(AssertionError, match="during a kernel call"):
            call()
    assert np.dot(a, a) == 14.0


@pytest.mark.parametrize("expression, formats, schedule", [
    ("y(int) = A(int,for) * x(for)", {"A": "csr"}, None),  # C keywords
    ("y(I) = A(I,j) * x(j)", {"A": "csr"}, None),  # complex.h's imaginary unit
    ("C(thread,trips) = A(thread,failed) * B(failed,trips)", {"A": "csr", "B": "csr", "C": "csr"},
     "parallelize(thread, cpu_thread, no_races)"),  # the names of a parallel assembly's own variables
])
def test_index_names_that_c_or_the_kernel_reserves_still_compute(expression, formats, schedule):
    rng = np.random.default_rng(3)
    a = scipy.sparse.random(7, 5, density=0.4, format="csr", random_state=rng)
    b = scipy.sparse.random(5, 6, density=0.4, format="csr", random_state=rng)
    kernel = asp.compile(expression, formats, schedule=schedule, num_threads=2)
    if expression.startswith("y"):
        x = rng.random(5)
        np.testing.assert_allclose(densified(kernel(A=a, x=x)), a @ x)
    else:
        np.testing.assert_allclose(densified(kernel(A=a, B=b)), (a @ b).toarray())
