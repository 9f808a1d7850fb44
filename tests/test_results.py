"""What evaluate, einsum and compiled kernels return: the result format inferred when none is given
(pipeline/result_format.py), dense results as numpy arrays over the kernel's own buffer, sparse ones as
Tensors, order 0 as Python numbers; the memory refusal that names format=; options apart from operands."""

from __future__ import annotations

import numpy as np
import pytest

import autosparse as asp
from conftest import densified

SPMV = "y(i) = A(i,j) * x(j)"
SPMM = "Y(i,k) = A(i,j) * X(j,k)"
SPGEMM = "C(i,j) = A(i,k) * B(k,j)"
ADD = "C(i,j) = A(i,j) + B(i,j)"
MULTIPLY = "C(i,j) = A(i,j) * B(i,j)"
TTV = "Y(i,j) = B(i,j,k) * c(k)"
TTM = "Y(i,j,l) = B(i,j,k) * C(k,l)"
MTTKRP = "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)"
INNER = "s() = a(i) * b(i)"
SCALE = "C(i,j) = A(i,j) * 2"
SUM_WITH_DENSE = "y(i) = A(i,j) * x(j) + z(i)"
PLUS_LITERAL = "C(i,j) = A(i,j) + 2"

# (expression, operand formats (dense where not named), the result format the rule infers)
GRID = [
    (SPMV, {"A": "csr"}, "dense"),
    (SPMV, {"A": "csc"}, "dense"),
    (SPMV, {"A": "dcsr"}, "s"),
    (SPMV, {"A": "coo"}, "s"),
    (SPMM, {"A": "csr"}, "dense"),
    (SPGEMM, {"A": "csr", "B": "csr"}, "ds~"),
    (SPGEMM, {"A": "csc", "B": "csc"}, "d1s0~"),
    (SPGEMM, {"A": "dcsr", "B": "dcsr"}, "ss~"),
    (SPGEMM, {"A": "csr", "B": "dcsr"}, "ds~"),
    (SPGEMM, {"A": "csr", "B": "csc"}, "ds~"),
    (SPGEMM, {"A": "coo", "B": "coo"}, "ss~"),
    (SPGEMM, {"A": "csr"}, "dense"),
    (ADD, {"A": "csr", "B": "csr"}, "csr"),
    (ADD, {"A": "dcsr", "B": "dcsr"}, "dcsr"),
    (ADD, {"A": "csr"}, "dense"),
    (MULTIPLY, {"A": "csr"}, "csr"),
    (MULTIPLY, {"A": "csr", "B": "csr"}, "csr"),
    (MULTIPLY, {"A": "coo", "B": "coo"}, "dcsr"),
    (TTV, {"B": "sss"}, "ss"),
    (TTV, {"B": "dss"}, "ds"),
    (TTV, {"B": "coo"}, "ss"),
    (TTM, {"B": "sss"}, "dense"),
    (MTTKRP, {"B": "sss"}, "dense"),
    (INNER, {"a": "s", "b": "s"}, "dense"),
    (INNER, {"a": "s"}, "dense"),
    (SCALE, {"A": "csr"}, "csr"),
    (SCALE, {"A": "coo"}, "dcsr"),
    (SCALE, {"A": "d1s0"}, "csc"),
    (SUM_WITH_DENSE, {"A": "dcsr"}, "dense"),
    (PLUS_LITERAL, {"A": "csr"}, "dense"),
]

#: Each index's extent (non-square everywhere); "size-1" makes them all 1.
EXTENTS = {"i": 5, "j": 4, "k": 6, "l": 3}


def _arrays(expression: str, case: str, seed: int = 0) -> dict[str, np.ndarray]:
    """Dense operands for `case`: random with zeros, all-zero, a single entry, explicit zeros, or of
    extent 1 in every mode."""
    rng = np.random.default_rng(seed)
    assignment = asp.notation.parse(expression)
    arrays = {}
    for access in asp.notation.accesses(assignment.rhs):
        shape = tuple(1 if case == "size-1" else EXTENTS[str(i)] for i in access.indices)
        values = rng.integers(1, 9, size=shape) / 4
        if case == "empty":
            values[...] = 0
        elif case == "single":
            keep = np.zeros(values.size, bool)
            keep[rng.integers(values.size)] = True
            values = values * keep.reshape(shape)
        elif case != "size-1":
            values = values * (rng.random(shape) < 0.4)
        arrays[access.tensor] = values
    return arrays


def _operands(arrays, formats, case: str) -> dict:
    operands = {}
    for name, array in arrays.items():
        fmt = formats.get(name, "dense")
        if fmt == "dense":
            operands[name] = array
        elif case == "explicit-zero":  # every coordinate stored, zeros included
            coords = np.indices(array.shape).reshape(array.ndim, -1)
            operands[name] = asp.Tensor.from_coo(coords, array.reshape(-1), array.shape, format=fmt)
        else:
            operands[name] = asp.Tensor.from_numpy(array, format=fmt)
    return operands


#: numpy's value of each expression, on the dense copies.
REFERENCES = {
    SPMV: lambda a: np.einsum("ij,j->i", a["A"], a["x"]),
    SPMM: lambda a: np.einsum("ij,jk->ik", a["A"], a["X"]),
    SPGEMM: lambda a: np.einsum("ik,kj->ij", a["A"], a["B"]),
    ADD: lambda a: a["A"] + a["B"],
    MULTIPLY: lambda a: a["A"] * a["B"],
    TTV: lambda a: np.einsum("ijk,k->ij", a["B"], a["c"]),
    TTM: lambda a: np.einsum("ijk,kl->ijl", a["B"], a["C"]),
    MTTKRP: lambda a: np.einsum("ikl,kj,lj->ij", a["B"], a["C"], a["D"]),
    INNER: lambda a: np.einsum("i,i->", a["a"], a["b"]),
    SCALE: lambda a: a["A"] * 2,
    SUM_WITH_DENSE: lambda a: np.einsum("ij,j->i", a["A"], a["x"]) + a["z"],
    PLUS_LITERAL: lambda a: a["A"] + 2,
}


def _expected(expression: str, arrays) -> np.ndarray:
    return np.asarray(REFERENCES[expression](arrays))


def _check(result, expected: np.ndarray, inferred: str) -> None:
    fmt = asp.Format(inferred, order=expected.ndim)
    if expected.ndim == 0:
        assert type(result) is float, type(result)
    elif fmt.is_dense:
        assert type(result) is np.ndarray and result.dtype == np.float64, type(result)
    else:
        assert type(result) is asp.Tensor and result.format == fmt, (type(result), getattr(result, "format", None))
    np.testing.assert_allclose(densified(result), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("expression,formats,inferred", GRID, ids=lambda v: str(v))
@pytest.mark.parametrize("case", ["random", "empty", "single", "explicit-zero", "size-1"])
def test_inferred_result_format_computes_what_numpy_computes(expression, formats, inferred, case):
    arrays = _arrays(expression, case)
    expected = _expected(expression, arrays)
    kernel = asp.compile(expression, formats=formats)
    result = asp.notation.parse(expression).lhs.tensor
    assert kernel.formats[result] == asp.Format(inferred, order=expected.ndim)
    operands = _operands(arrays, formats, case)
    _check(kernel(**operands), expected, inferred)
    _check(asp.evaluate(expression, **operands), expected, inferred)


def test_einsum_infers_as_evaluate_does():
    arrays = _arrays(SPGEMM, "random")
    A, B = (asp.Tensor.from_numpy(arrays[n], format="csr") for n in "AB")
    C = asp.einsum("ik,kj->ij", A, B)
    assert type(C) is asp.Tensor and C.format == "ds~"
    np.testing.assert_allclose(C.to_numpy(), arrays["A"] @ arrays["B"])
    y = asp.einsum("ik,k->i", A, np.ones(6))
    assert type(y) is np.ndarray
    np.testing.assert_allclose(y, arrays["A"] @ np.ones(6))


def test_scipy_operands_infer_sparse_results():
    sp = pytest.importorskip("scipy.sparse")
    A = sp.random(30, 20, density=0.2, format="csr", random_state=1)
    B = sp.random(20, 25, density=0.2, format="csr", random_state=2)
    C = asp.evaluate(SPGEMM, A=A, B=B)
    assert type(C) is asp.Tensor and C.format == "ds~" and C.nnz == (A @ B).nnz
    np.testing.assert_allclose(C.to_numpy(), (A @ B).toarray())


def test_a_format_given_wins():
    arrays = _arrays(SPGEMM, "random")
    A, B = (asp.Tensor.from_numpy(arrays[n], format="csr") for n in "AB")
    C = asp.evaluate(SPGEMM, A=A, B=B, format="dense")
    assert type(C) is np.ndarray
    np.testing.assert_allclose(C, arrays["A"] @ arrays["B"])
    assert asp.compile(SPGEMM, formats={"A": "csr", "B": "csr", "C": "dcsr"}).formats["C"] == "dcsr"


def test_hand_written_cin_keeps_a_dense_result_unless_given():
    kernel = asp.compile(SPGEMM, formats={"A": "csr", "B": "csr"}, schedule="∀i ∀k ∀j C(i,j) += A(i,k) * B(k,j)")
    assert kernel.formats["C"].is_dense
    arrays = _arrays(SPGEMM, "random")
    C = kernel(**_operands(arrays, {"A": "csr", "B": "csr"}, "random"))
    np.testing.assert_allclose(C, arrays["A"] @ arrays["B"])


# --- what a result is ---

def test_a_dense_result_is_a_writeable_view_of_the_kernels_buffer():
    A = asp.Tensor.from_numpy(_arrays(SPMM, "random")["A"], format="csr")
    X = np.ones((4, 3))
    first, second = asp.evaluate(SPMM, A=A, X=X), asp.evaluate(SPMM, A=A, X=X)
    for Y in (first, second):
        assert type(Y) is np.ndarray and Y.shape == (5, 3) and Y.flags.writeable and Y.flags.c_contiguous
        # the buffer the kernel filled, allocated in the result's shape (runtime/calls.py): no view, no copy
        assert Y.flags.owndata and Y.base is None
    assert not np.shares_memory(first, second)  # each call's result is the caller's own
    first[0, 0] = 99.0
    np.testing.assert_allclose(second, A.to_numpy() @ X)


def test_a_dense_result_in_another_mode_order_has_the_results_axes():
    arrays = _arrays(SCALE, "random")
    A = asp.Tensor.from_numpy(arrays["A"], format="csr")
    C = asp.evaluate(SCALE, A=A, format="d1d0")  # stored column by column
    assert type(C) is np.ndarray and C.shape == (5, 4) and C.flags.f_contiguous and not C.flags.c_contiguous
    assert C.base.flags.owndata and C.base.shape == (4, 5)  # a transposed view of the buffer, as stored
    np.testing.assert_array_equal(C, arrays["A"] * 2)


def test_a_dense_vector_is_an_array_the_kernel_allocated():
    A = asp.Tensor.from_numpy(_arrays(SPMV, "random")["A"], format="csr")
    kernel = asp.compile(SPMV, formats={"A": "csr"})
    y = kernel(A=A, x=np.ones(4))
    assert type(y) is np.ndarray and y.flags.writeable
    assert y.flags.owndata or (y.base.flags.owndata and y.base.size == y.size)
    assert y[0] == pytest.approx(A.to_numpy()[0].sum()) and (y + 1).shape == (5,)


@pytest.mark.parametrize("dtype,kind", [(np.float64, float), (np.float32, float), (np.int64, int),
                                        (np.complex128, complex)])
def test_order_zero_results_are_python_numbers(dtype, kind):
    a = (np.arange(1, 6) % 3).astype(dtype)
    s = asp.evaluate(INNER, a=asp.Tensor.from_numpy(a, format="s"), b=a)
    assert type(s) is kind and s == pytest.approx(complex(np.dot(a, a)) if kind is complex else np.dot(a, a))


def test_dense_result_dtypes_follow_numpy():
    A = asp.Tensor.from_numpy(np.eye(3, dtype=np.float32), format="csr")
    y = asp.evaluate(SPMV, A=A, x=np.ones(3, dtype=np.float32))
    assert y.dtype == np.float32
    y = asp.evaluate(SPMV, A=asp.Tensor.from_numpy(np.eye(3, dtype=np.int64), format="csr"),
                     x=np.ones(3, dtype=np.int64))
    assert y.dtype == np.int64 and y.tolist() == [1, 1, 1]


# --- the memory refusal ---

def test_a_dense_result_over_the_memory_limit_names_format():
    A = asp.Tensor.from_numpy(np.eye(50, 6), format="csr")
    B = asp.Tensor.from_numpy(np.eye(6, 40), format="csr")
    asp.set_memory_limit(4000)  # below 50 x 40 doubles, above the sparse result's arrays
    with pytest.raises(asp.MemoryLimitError, match=r"dense result C of shape \(50, 40\).*format='ds~'"):
        asp.evaluate(SPGEMM, A=A, B=B, format="dense")
    with pytest.raises(asp.MemoryLimitError, match="format="):
        asp.evaluate(ADD, A=asp.Tensor.from_numpy(np.eye(50, 40), format="csr"), B=np.ones((50, 40)))
    C = asp.evaluate(SPGEMM, A=A, B=B)  # inferred sparse: within the limit
    assert type(C) is asp.Tensor


def test_the_memory_refusal_comes_before_the_kernel_runs():
    kernel = asp.compile(SPMV, formats={"A": "csr", "y": "dense"}, instrument=True)
    A = asp.Tensor.from_numpy(np.eye(6, 6), format="csr")
    asp.set_memory_limit(16)
    with pytest.raises(asp.MemoryLimitError, match="format='s'"):
        kernel(A=A, x=np.ones(6))
    assert kernel.counts is None


# --- options apart from operands ---

def test_an_operand_named_like_an_option_comes_in_operands():
    A = asp.Tensor.from_numpy(np.eye(3), format="csr")
    with pytest.raises(asp.AutosparseError, match=r"operands=\{'format': \.\.\.\}"):
        asp.evaluate("y(i) = format(i,j) * x(j)", format=A, x=np.ones(3))
    with pytest.raises(asp.AutosparseError, match="schedule"):
        asp.evaluate("y(i) = schedule(i,j) * x(j)", x=np.ones(3))
    y = asp.evaluate("y(i) = format(i,j) * schedule(j)", operands={"format": A, "schedule": np.arange(3.0)})
    np.testing.assert_array_equal(y, [0, 1, 2])
    y = asp.evaluate("y(i) = format(i,j) * x(j)", operands={"format": A}, x=np.ones(3), format="dense")
    np.testing.assert_array_equal(y, [1, 1, 1])


def test_operands_twice_or_unknown_are_refused():
    A = asp.Tensor.from_numpy(np.eye(3), format="csr")
    with pytest.raises(asp.AutosparseError, match=r"\['x'\] came both"):
        asp.evaluate(SPMV, operands={"x": np.ones(3)}, A=A, x=np.ones(3))
    with pytest.raises(asp.AutosparseError, match=r"Expected the operands \['A', 'x'\].*\['num_thread'\]"):
        asp.evaluate(SPMV, A=A, x=np.ones(3), num_thread=2)
    with pytest.raises(asp.AutosparseError, match="operands= to map"):
        asp.evaluate(SPMV, operands=[A, np.ones(3)])


@pytest.mark.parametrize("threads", [1, 2])
def test_num_threads_on_evaluate_and_einsum(threads):
    arrays = _arrays(SPGEMM, "random")
    A, B = (asp.Tensor.from_numpy(arrays[n], format="csr") for n in "AB")
    C = asp.evaluate(SPGEMM, A=A, B=B, num_threads=threads)
    np.testing.assert_allclose(C.to_numpy(), arrays["A"] @ arrays["B"])
    y = asp.einsum("ik,k->i", A, np.ones(6), num_threads=threads)
    np.testing.assert_allclose(y, arrays["A"].sum(axis=1))


def test_num_threads_out_of_range_is_refused():
    with pytest.raises(asp.ScheduleError, match="num_threads"):
        asp.evaluate(SPMV, A=np.eye(3), x=np.ones(3), num_threads=0)
