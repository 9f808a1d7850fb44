"""Bad input to compile / evaluate / einsum / kernel calls: every error of the contract, raised as the
documented AutosparseError subclass with the promised details (a column, both tensors, the rule), never
a crash or a silently wrong answer."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

import autosparse as asp
from conftest import densified
from kernel_cases import _peer_math_guard, no_peer_math  # noqa: F401

A34 = np.arange(12.0).reshape(3, 4)


def csr(array) -> asp.Tensor:
    return asp.Tensor.from_numpy(np.asarray(array, dtype=float), format="csr")


# ----- ParseError, with the column --------------------------------------------------------------------------------

EXPRESSION_ERRORS = [
    # (expression, column, words in the message)
    ("y(i) = A(i,j) * ", 17, "end of input"),
    ("y(i) = A(i,j) ** x(j)", 16, "'*'"),
    ("y(i,i) = A(i,j) * x(j)", 5, "distinct indices"),
    ("y(i,k) = A(i,j) * x(j)", 5, "output index k"),
    ("y(i) = A(i,j) * y(j)", 17, "only on the left"),
    ("y(i) = A(i,j) + A(i)", 17, "2 indices"),
    ("y(i) = A(i,j) $ x(j)", 15, "'$'"),
    ("y(i) A(i,j)", 6, "'='"),
    ("(i) = A(i)", 1, "name"),
    ("y(i) = A(i,j) * x(j))", 21, "')'"),
    ("y(i) = A(i,,j)", 12, "','"),
    ("", 1, "end of input"),
]


@pytest.mark.parametrize("expression, column, words", EXPRESSION_ERRORS,
                         ids=[e or "empty" for e, *_ in EXPRESSION_ERRORS])
@pytest.mark.parametrize("entry", ["compile", "evaluate"])
def test_bad_expression_is_a_parse_error_with_its_column(entry, expression, column, words):
    with pytest.raises(asp.ParseError) as caught:
        if entry == "compile":
            asp.compile(expression)
        else:
            asp.evaluate(expression, A=A34, x=np.ones(4))
    assert caught.value.column == column, str(caught.value)
    assert words in str(caught.value)
    assert f"column {column}" in str(caught.value)


@pytest.mark.parametrize("subscripts, operands, column", [
    ("ij,j->k", (A34, np.ones(4)), 1),
    ("ij,j", (A34,), 1),
    ("i..,i", (A34, np.ones(3)), 2),
    ("i->ii", (np.ones(2),), 1),
    ("i1,i", (A34, np.ones(3)), 2),
], ids=["unused-output", "operand-count", "ellipsis", "repeated-output", "digit"])
def test_bad_einsum_subscripts_are_parse_errors(subscripts, operands, column):
    with pytest.raises(asp.ParseError) as caught:
        asp.einsum(subscripts, *operands)
    assert caught.value.column == column


# ----- ShapeError naming both tensors --------------------------------------------------------------------------------

@pytest.mark.parametrize("expression, operands, names", [
    ("y(i) = A(i,j) * x(j)", {"A": csr(A34), "x": np.ones(5)}, ("A", "x")),
    ("C(i,j) = A(i,j) + B(i,j)", {"A": np.ones((2, 3)), "B": np.ones((3, 2))}, ("A", "B")),
    ("C(i,j) = A(i,k) * B(k,j)", {"A": csr(A34), "B": csr(np.ones((3, 2)))}, ("A", "B")),
    ("a() = B(i,j,k) * C(i,j,k)", {"B": np.ones((2, 3, 4)), "C": np.ones((2, 3, 5))}, ("B", "C")),
    ("A(i,j) = s * B(i,j) + C(j,i)",
     {"s": 2.0, "B": np.ones((2, 3)), "C": asp.Tensor.from_numpy(np.ones((2, 3)), format="d1d0")}, ("B", "C")),
], ids=["spmv", "add", "spgemm", "inner3", "transposed"])
def test_disagreeing_dimensions_are_a_shape_error_naming_both_tensors(expression, operands, names):
    with pytest.raises(asp.ShapeError) as caught:
        asp.evaluate(expression, **operands)
    message = str(caught.value)
    for name in names:
        assert f"{name}(" in message or f" {name} " in message, message


def test_einsum_shape_error():
    with pytest.raises(asp.ShapeError, match="T0.*T1"):
        asp.einsum("ij,j->i", csr(A34), np.ones(5))


@pytest.mark.parametrize("x", [np.ones((4, 2)), asp.Tensor.from_numpy(np.ones((4, 1))), np.float64(2.0)],
                         ids=["2d-array", "2d-tensor", "scalar"])
def test_an_operand_of_the_wrong_order_is_refused(x):
    kernel = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"})
    with pytest.raises((asp.ShapeError, asp.FormatError)):
        kernel(A=csr(A34), x=x)


# ----- FormatError / AutosparseError: formats, operand names, operand values ------------------------------------------

@pytest.mark.parametrize("formats", [
    {"A": "xyz"}, {"A": "sq"}, {"A": "d2s0"}, {"A": "d0s0"}, {"x": "ds"}, {"A": "sss"}, {"A": asp.Format("sss")},
    {"A": "q1u0"}, {"A": ""},
], ids=["letters", "singleton-below-unique", "mode-out-of-range", "mode-repeated", "order-too-high",
        "order-too-high-A", "format-object", "singleton-on-top", "empty"])
def test_a_bad_format_is_a_format_error(formats):
    with pytest.raises(asp.FormatError):
        asp.compile("y(i) = A(i,j) * x(j)", formats=formats)


def test_a_bad_result_format_through_evaluate_and_einsum():
    with pytest.raises(asp.FormatError):
        asp.evaluate("y(i) = A(i,j) * x(j)", A=csr(A34), x=np.ones(4), format="zz")
    with pytest.raises(asp.FormatError):
        asp.einsum("ij,j->i", csr(A34), np.ones(4), format="ds")


def test_formats_for_tensors_not_in_the_expression():
    with pytest.raises(asp.AutosparseError, match="Q"):
        asp.compile("y(i) = A(i,j) * x(j)", formats={"Q": "csr"})


@pytest.mark.parametrize("operands, words", [
    ({"A": "A"}, "['A', 'x']"),
    ({"A": "A", "x": "x", "z": "x"}, "'z'"),
    ({"x": "x"}, "['A', 'x']"),
    ({}, "['A', 'x']"),
], ids=["missing", "extra", "missing-A", "none"])
def test_wrong_operand_names(operands, words):
    values = {"A": csr(A34), "x": np.ones(4)}
    kernel = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"})
    with pytest.raises(asp.AutosparseError) as caught:
        kernel(**{name: values[value] for name, value in operands.items()})
    assert words in str(caught.value)
    with pytest.raises(asp.AutosparseError):
        asp.evaluate("y(i) = A(i,j) * x(j)", **{name: values[value] for name, value in operands.items()})


@pytest.mark.parametrize("value", ["hello", object(), {"a": 1}, None], ids=["str", "object", "dict", "none"])
def test_an_operand_of_an_unknown_type(value):
    kernel = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"})
    with pytest.raises(asp.AutosparseError):
        kernel(A=value, x=np.ones(4))


# ----- ScheduleError ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("schedule", ["reorder(j,i)", "precompute(A(i,j)*x(j), k, k)", "split(i, i0, i1, 0)",
                                      "coiterate(j, sideways)", "auto", 42, ("reorder", "i", "j")],
                         ids=["reorder", "precompute", "split-by-0", "unknown-strategy", "auto", "int", "tuple"])
def test_illegal_or_unsupported_schedules_are_schedule_errors(schedule):
    with pytest.raises(asp.ScheduleError):
        asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"}, schedule=schedule)


@pytest.mark.parametrize("expression, formats, schedule, words", [
    ("y(i) = A(i,j) * x(j)", {"A": "csr"}, "∀j ∀i y(i) += A(i,j) * x(j)", ["A(i,j)", "storage order", "j"]),
    ("y(i) = A(i,j) * x(j)", {"A": "d1s0"}, "∀i ∀j y(i) += A(i,j) * x(j)", ["A(i,j)", "storage order", "i"]),
    ("B(i,j) = A(i,j)", {"A": "csr", "B": "csc"}, "∀i ∀j B(i,j) = A(i,j)", ["B(i,j)", "written", "storage order"]),
    ("C(i,j) = A(i,j) + B(i,j)", {"A": "dh", "B": "csr"}, "∀i ∀j C(i,j) = A(i,j@step) + B(i,j)",
     ["unordered", "j"]),
    ("y(i) = A(i,j) * x(j)", {"A": "csr", "z": "d"},
     "sequence(∀i ∀j y(i) += A(i,j) * x(j), ∀i ∀j z(i) += A(i,j) * x(j))", ["one result"]),
], ids=["csr-read-out-of-order", "csc-read-out-of-order", "csc-written-out-of-order", "hashed-co-iterated",
        "two-results"])
def test_an_illegal_cin_is_a_schedule_error_naming_the_rule(expression, formats, schedule, words):
    with pytest.raises(asp.ScheduleError) as caught:
        kernel = asp.compile(expression, formats=formats, schedule=schedule)
        kernel.source  # noqa: B018 - lowering happens here at the latest
    for word in words:
        assert word in str(caught.value)


@pytest.mark.parametrize("expression, formats, schedule", [
    ("a() = B(i,j) * B(j,i)", {"B": "csr"}, None),
    ("C(i,j) = A(i,j) + A(j,i)", {"A": "dcsr", "C": "csr"}, None),
    ("a() = B(i,j) * C(i,j)", {"B": "csr", "C": "csc"}, "unroll(i, 2)"),
], ids=["one-tensor-transposed-product", "one-tensor-plus-transpose", "commands-keep-the-formats"])
def test_cyclic_storage_orders_are_a_schedule_error(expression, formats, schedule):
    """The default schedule converts operands to concordant formats (tests/test_orders.py), but not a
    tensor read in two orders, nor under scheduling commands, which apply to the formats given."""
    with pytest.raises(asp.ScheduleError, match="cyclic"):
        asp.compile(expression, formats=formats, schedule=schedule)


def test_cyclic_storage_orders_through_evaluate():
    with pytest.raises(asp.ScheduleError, match="cyclic"):
        asp.evaluate("a() = B(i,j) * B(j,i)", B=csr(A34 @ A34.T))


@pytest.mark.parametrize("schedule", [
    pytest.param("∀i y(i) += A(i,j) * x(j)", id="unbound-j"),
    pytest.param("∀i ∀j ∀k y(i) += A(i,j) * x(j)", id="unknown-k"),
    pytest.param("∀i ∀i ∀j y(i) += A(i,j) * x(j)", id="repeated-i"),
    pytest.param("∀i ∀j ∀j y(i) += A(i,j) * x(j)", id="repeated-j"),
])
def test_a_malformed_cin_is_a_schedule_error(schedule):
    """Before df2a832: KeyError for the first two, N times the result for the last two."""
    with pytest.raises(asp.ScheduleError):
        kernel = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"}, schedule=schedule)
        kernel(A=csr(A34), x=np.ones(4))


# ----- MemoryLimitError, before allocating --------------------------------------------------------------------------

def _one_entry(shape, fmt) -> asp.Tensor:
    return asp.Tensor.from_coo(np.zeros((len(shape), 1), dtype=np.int64), np.array([1.0]), shape, format=fmt)


def test_a_dense_result_over_the_limit_is_refused():
    n = 10**4
    A, B = _one_entry((n, 1), "csr"), _one_entry((1, n), "csr")
    kernel = asp.compile("C(i,j) = A(i,k) * B(k,j)", formats={"A": "csr", "B": "csr", "C": "dense"})
    asp.set_memory_limit(10**6)
    with pytest.raises(asp.MemoryLimitError, match="800,000,000 bytes.*format='ds~'") as caught:
        with no_peer_math():
            kernel(A=A, B=B)
    assert isinstance(caught.value, MemoryError)
    with pytest.raises(asp.MemoryLimitError):
        asp.evaluate("C(i,j) = A(i,k) * B(k,j)", A=A, B=B, format="dense")
    with pytest.raises(asp.MemoryLimitError):
        asp.einsum("ik,kj->ij", A, B, format="dense")
    # the same product into CSR needs no dense storage
    C = asp.evaluate("C(i,j) = A(i,k) * B(k,j)", A=A, B=B, format="dcsr")
    assert C.nnz == 1 and C.shape == (n, n)


def test_a_dense_workspace_over_the_limit_is_refused():
    A, B = _one_entry((1, 1), "csr"), _one_entry((1, 10**6), "csr")
    kernel = asp.compile("C(i,j) = A(i,k) * B(k,j)", formats={"A": "csr", "B": "csr", "C": "csr"})
    assert "where" in str(kernel.cin)
    asp.set_memory_limit(10**6)
    with pytest.raises(asp.MemoryLimitError, match="workspace"):
        with no_peer_math():
            kernel(A=A, B=B)


def test_a_two_dimensional_dense_workspace_over_the_limit_is_refused():
    A, B = _one_entry((2000, 1), "csc"), _one_entry((1, 2000), "csr")
    kernel = asp.compile("C(i,j) = A(i,k) * B(k,j)", formats={"A": "csc", "B": "csr", "C": "csr"},
                         schedule="where(∀i ∀j C(i,j) = w(i,j), ∀k ∀i ∀j w(i,j) += A(i,k) * B(k,j))")
    asp.set_memory_limit(10**6)
    with pytest.raises(asp.MemoryLimitError, match="workspace"):
        kernel(A=A, B=B)


def test_dense_rows_of_a_compressed_result_over_the_limit_are_refused():
    A = _one_entry((10**6, 1), "dcsr")
    asp.set_memory_limit(10**6)
    with pytest.raises(asp.MemoryLimitError):
        asp.evaluate("B(i,j) = A(i,j)", A=A, format="csr")


def test_a_non_positive_limit_is_refused():
    with pytest.raises(asp.MemoryLimitError):
        asp.set_memory_limit(0)


# ----- CompileError ---------------------------------------------------------------------------------------------------

def _never_seen_kernel():
    """A kernel no cache holds: its tensor name is new."""
    name = "Q" + uuid.uuid4().hex[:12]
    kernel = asp.compile(f"y(i) = {name}(i,j) * x(j)", formats={name: "csr"})
    return lambda: kernel(**{name: csr(A34), "x": np.ones(4)})


def test_a_missing_compiler_is_a_compile_error(monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/bin/cc-" + uuid.uuid4().hex[:6])
    call = _never_seen_kernel()
    with pytest.raises(asp.CompileError, match="no C compiler"):
        call()


def test_a_compiler_that_fails_is_a_compile_error_with_its_output(monkeypatch):
    monkeypatch.setenv("CC", "cc -include /nonexistent/header-" + uuid.uuid4().hex[:6] + ".h")
    call = _never_seen_kernel()
    with pytest.raises(asp.CompileError) as caught:
        call()
    assert "nonexistent" in caught.value.output
    assert "autosparse_kernel" in caught.value.source
    assert caught.value.command


def test_a_program_that_is_not_a_compiler_is_a_compile_error(monkeypatch):
    monkeypatch.setenv("CC", "false")
    call = _never_seen_kernel()
    with pytest.raises(asp.CompileError):
        call()


def test_compiling_works_again_once_the_compiler_is_back(monkeypatch):
    with monkeypatch.context() as patch:
        patch.setenv("CC", "/nonexistent/bin/cc")
        call = _never_seen_kernel()
        with pytest.raises(asp.CompileError):
            call()
    result = call()
    np.testing.assert_array_equal(densified(result), A34.sum(axis=1))
