"""Concrete index notation: the default schedule (concretize), printing, parsing (round trips, protocol
annotations, errors with columns), and hand-written CIN compiled and run against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import autosparse as asp
from autosparse.cin import assignments, concretize, loop_indices, parse_cin, tensors
from autosparse.notation import parse
from kernel_cases import _peer_math_guard, read_statement, run_differential  # noqa: F401


def all_formats(expression: str, given: dict) -> dict:
    """A Format for every tensor of `expression` (dense where not given)."""
    statement = read_statement(expression)
    orders = {statement.lhs.name: len(statement.lhs.indices),
              **{name: len(indices) for name, indices in statement.operands.items()}}
    return {name: asp.Format(given.get(name, "dense"), order=order) for name, order in orders.items()}


# ----- the default schedule --------------------------------------------------------------------------------------

DEFAULT_SCHEDULES = [
    # SpMV: row-major, column-major, hashed rows (located), COO into a sparse vector
    ("y(i) = A(i,j) * x(j)", {"A": "csr"}, "∀i ∀j y(i) += A(i,j) * x(j)"),
    ("y(i) = A(i,j) * x(j)", {"A": "csc"}, "∀j ∀i y(i) += A(i,j) * x(j)"),
    ("y(i) = A(i,j) * x(j)", {"A": "dh"}, "∀i ∀j y(i) += A(i,j) * x(j)"),
    ("y(i) = A(i,j) * x(j)", {"A": "coo", "x": "s", "y": "s"}, "∀i ∀j y(i) += A(i,j) * x(j)"),
    ("y(i) += A(i,j) * x(j)", {"A": "csr"}, "∀i ∀j y(i) += A(i,j) * x(j)"),
    # SpGEMM: Gustavson into CSR, inner products with CSC B, linear combination of rows into dense,
    # outer products (CSC A) into CSR through a 2-D workspace, and Gustavson into CSC (transposed workspace)
    ("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": "csr"},
     "∀i where(∀j C(i,j) = w(j), ∀k ∀j w(j) += A(i,k) * B(k,j))"),
    ("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csc", "C": "csr"}, "∀i ∀j ∀k C(i,j) += A(i,k) * B(k,j)"),
    ("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": "dense"}, "∀i ∀k ∀j C(i,j) += A(i,k) * B(k,j)"),
    ("C(i,j) = A(i,k) * B(k,j)", {"A": "csc", "B": "csr", "C": "csr"},
     "where(∀i ∀j C(i,j) = w(i,j), ∀k ∀i ∀j w(i,j) += A(i,k) * B(k,j))"),
    ("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": "csc"},
     "where(∀j ∀i C(i,j) = w(j,i), ∀i ∀k ∀j w(j,i) += A(i,k) * B(k,j))"),
    # copies: concordant needs no workspace, CSR <-> CSC goes through one
    ("B(i,j) = A(i,j)", {"A": "csr", "B": "dcsr"}, "∀i ∀j B(i,j) = A(i,j)"),
    ("B(i,j) = A(i,j)", {"A": "csr", "B": "csc"}, "where(∀j ∀i B(i,j) = w(j,i), ∀i ∀j w(j,i) = A(i,j))"),
    ("B(i,j) = A(i,j)", {"A": "csc", "B": "csr"}, "where(∀i ∀j B(i,j) = w(i,j), ∀j ∀i w(i,j) = A(i,j))"),
    ("B(i,j,k) = A(i,j,k)", {"A": "s2s0s1", "B": "csf"},
     "where(∀i ∀j ∀k B(i,j,k) = w(i,j,k), ∀k ∀i ∀j w(i,j,k) = A(i,j,k))"),
    # element-wise
    ("C(i,j) = A(i,j) + B(i,j)", {"A": "csr", "B": "csr", "C": "csr"}, "∀i ∀j C(i,j) = A(i,j) + B(i,j)"),
    ("C(i,j) = A(i,j) * B(i,j)", {"A": "csc", "B": "dcsc", "C": "csc"}, "∀j ∀i C(i,j) = A(i,j) * B(i,j)"),
    ("D(i,j) = A(i,j) * (B(i,j) + C(i,j))", {"A": "csr", "B": "csr", "C": "csr", "D": "csr"},
     "∀i ∀j D(i,j) = A(i,j) * (B(i,j) + C(i,j))"),
    # reductions, tensor kernels, scalars
    ("a() = b(i) * c(i)", {"b": "s"}, "∀i a() += b(i) * c(i)"),
    ("a() = B(i,j,k) * C(i,j,k)", {"B": "csf", "C": "csf"}, "∀i ∀j ∀k a() += B(i,j,k) * C(i,j,k)"),
    ("A(i,j) = B(i,j,k) * c(k)", {"B": "csf"}, "∀i ∀j ∀k A(i,j) += B(i,j,k) * c(k)"),
    ("A(i,j,k) = B(i,j,l) * C(k,l)", {"B": "csf", "A": "csf"}, "∀i ∀j ∀k ∀l A(i,j,k) += B(i,j,l) * C(k,l)"),
    ("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", {"B": "csf"}, "∀i ∀k ∀l ∀j A(i,j) += B(i,k,l) * C(k,j) * D(l,j)"),
    # Dense operands are read at random: legalisation prefers the order that needs no workspace.
    ("A(i,j) = B(i,j) * C(i,k) * D(k,j)", {"B": "csr", "A": "csr"},
     "∀i ∀j ∀k A(i,j) += B(i,j) * C(i,k) * D(k,j)"),
    ("A(i,j) = B(i,j) * C(i,k) * D(k,j)", {"B": "csr", "D": "csr", "A": "csr"},
     "∀i where(∀j A(i,j) = w(j), ∀k ∀j w(j) += B(i,j) * C(i,k) * D(k,j))"),
    ("A(i,j) = s * B(i,j)", {"B": "csr", "A": "csr"}, "∀i ∀j A(i,j) = s() * B(i,j)"),
    ("A(i,j) = 2 * B(i,j)", {"B": "csr", "A": "csr"}, "∀i ∀j A(i,j) = 2 * B(i,j)"),
]
_IDS = [f"{e} {','.join(f'{n}={f}' for n, f in fs.items())}" for e, fs, _ in DEFAULT_SCHEDULES]


@pytest.mark.parametrize("expression, formats, expected", DEFAULT_SCHEDULES, ids=_IDS)
def test_concretize(expression, formats, expected):
    cin = concretize(parse(expression), all_formats(expression, formats))
    assert str(cin) == expected
    kernel = asp.compile(expression, formats=formats, num_threads=1)  # threads: test_threads
    assert kernel.conversions or str(kernel.cin) == expected  # mixed storage orders: tests/test_orders.py


@pytest.mark.parametrize("expression, formats, expected", DEFAULT_SCHEDULES, ids=_IDS)
def test_round_trip(expression, formats, expected):
    cin = concretize(parse(expression), all_formats(expression, formats))
    again = parse_cin(str(cin), {name: var.format for name, var in tensors(cin).items()})
    assert again == cin
    assert str(again) == str(cin)


def test_workspaces_are_temporaries_with_the_output_order():
    cin = concretize(parse("C(i,j) = A(i,k) * B(k,j)"), all_formats("C(i,j) = A(i,k) * B(k,j)",
                                                                    {"A": "csr", "B": "csr", "C": "csc"}))
    w = tensors(cin)["w"]
    assert w.temporary and w.order == 2
    assert [str(i) for i in loop_indices(cin)] == ["j", "i", "i", "k", "j"]
    assert [str(a.lhs) for a in assignments(cin)] == ["C(i,j)", "w(j,i)"]


# ----- parsing: protocols, spellings, errors --------------------------------------------------------------------

PROTOCOL_TEXTS = [
    ("∀i ∀j y(i) += A(i,j@locate) * x(j)", {"y": "d", "A": "dd", "x": "s"}),
    ("∀i ∀j y(i) += A(i,j@step) * x(j)", {"y": "d", "A": "dh", "x": "d"}),
    ("∀i ∀j y(i) += A(i@locate,j@locate) * x(j)", {"y": "d", "A": "dd", "x": "s"}),
    ("∀i where(∀j C(i,j) = w(j), ∀k ∀j w(j) += A(i,k) * B(k,j@locate))", {"C": "csr", "A": "csr", "B": "dd"}),
]


@pytest.mark.parametrize("text, formats", PROTOCOL_TEXTS, ids=[t for t, _ in PROTOCOL_TEXTS])
def test_protocol_annotations_parse_and_print(text, formats):
    cin = parse_cin(text, formats)
    assert str(cin) == text
    assert parse_cin(str(cin), {n: v.format for n, v in tensors(cin).items()}) == cin
    assert "@" in str(cin)


def test_default_protocols_are_not_printed():
    formats = {"y": "d", "A": "csr", "x": "d"}
    annotated = parse_cin("∀i ∀j y(i) += A(i@step,j@step) * x(j@step)", formats)
    assert str(annotated) == "∀i ∀j y(i) += A(i,j) * x(j)"
    assert parse_cin("forall i forall j y(i) += A(i,j) * x(j)", formats) == \
        parse_cin("∀i ∀j y(i) += A(i,j) * x(j)", formats)


PARSE_ERRORS = [
    # (text, formats, column, words in the message)
    ("∀i ∀j y(i) += A(i,j) * x(j", {"y": "d", "A": "csr", "x": "d"}, 27, "end of input"),
    ("∀i ∀j y(i) += A(i,j@fetch) * x(j)", {"y": "d", "A": "csr", "x": "d"}, 21, "protocol"),
    ("∀i ∀j y(i) += A(i,j@locate) * x(j)", {"y": "d", "A": "csr", "x": "d"}, 15, "locate"),
    ("∀i ∀j y(i) += A(i,j) $ x(j)", {"y": "d", "A": "csr", "x": "d"}, 22, "'$'"),
    ("∀i where(∀j C(i,j) = w(j) ∀k ∀j w(j) += A(i,k) * B(k,j))", {"C": "csr", "A": "csr", "B": "csr"}, 27,
     "','"),
    ("∀i ∀j y(i) += Z(i,j) * x(j)", {"y": "d", "A": "csr", "x": "d"}, 15, "format for Z"),
    ("∀i ∀j y(i) += A(i) * x(j)", {"y": "d", "A": "csr", "x": "d"}, 15, "order"),
    ("∀i ∀j y(i) += A(i,j) * x(j) extra", {"y": "d", "A": "csr", "x": "d"}, 29, "end"),
]


@pytest.mark.parametrize("text, formats, column, words", PARSE_ERRORS, ids=[t for t, *_ in PARSE_ERRORS])
def test_parse_errors_name_the_column(text, formats, column, words):
    with pytest.raises(asp.ParseError) as caught:
        parse_cin(text, formats)
    assert caught.value.column == column, str(caught.value)
    assert words in str(caught.value)
    assert f"column {column}" in str(caught.value)


def test_a_parse_error_through_compile_is_a_parse_error():
    with pytest.raises(asp.ParseError) as caught:
        asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"}, schedule="∀i ∀j y(i) += A(i,j) * x(j")
    assert caught.value.column == 27


# ----- hand-written CIN, compiled and run ----------------------------------------------------------------------

HAND_WRITTEN = [
    # Ahrens et al., Fig. 1: the three SpGEMM programs
    ("inner-products", "C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csc", "C": "csr"},
     "∀i ∀j ∀k C(i,j) += A(i,k) * B(k,j)"),
    ("gustavson", "C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": "csr"},
     "∀i where(∀j C(i,j) = w(j), ∀k ∀j w(j) += A(i,k) * B(k,j))"),
    ("outer-products", "C(i,j) = A(i,k) * B(k,j)", {"A": "d1s0", "B": "csr", "C": "csr", "w": "hh"},
     "where(∀i ∀j C(i,j) = w(i,j), ∀k ∀i ∀j w(i,j) += A(i,k) * B(k,j))"),
    # more: outer products into a dense result, located reads, a stepped hashed level, a transposing copy,
    # a workspace for a row's reduction, a sequence
    ("outer-products-dense", "C(i,j) = A(i,k) * B(k,j)", {"A": "d1s0", "B": "csr"},
     "∀k ∀i ∀j C(i,j) += A(i,k) * B(k,j)"),
    ("spmspv-locate", "y(i) = A(i,j) * x(j)", {"A": "dd", "x": "s"}, "∀i ∀j y(i) += A(i,j@locate) * x(j)"),
    ("hashed-step", "y(i) = A(i,j) * x(j)", {"A": "dh"}, "∀i ∀j y(i) += A(i,j@step) * x(j)"),
    ("hashed-locate", "y(i) = A(i,j) * x(j)", {"A": "dh", "x": "s"}, "∀i ∀j y(i) += A(i,j) * x(j)"),
    ("csr-to-csc", "B(i,j) = A(i,j)", {"A": "csr", "B": "csc", "w": "hh"},
     "where(∀j ∀i B(i,j) = w(j,i), ∀i ∀j w(j,i) = A(i,j))"),
    ("row-workspace", "y(i) = A(i,j) * x(j)", {"A": "csr", "y": "s"},
     "∀i where(∀j y(i) += w(j), ∀j w(j) = A(i,j) * x(j))"),
    ("sequence", "a(i) = b(i) + c(i)", {"b": "s", "c": "s"}, "sequence(∀i a(i) = b(i), ∀i a(i) += c(i))"),
    ("located-workspace", "C(i,j) = D(i,j) * (A(i,k) * B(k,j))", {"A": "csr", "B": "csr", "D": "csr", "C": "csr"},
     "∀i where(∀j C(i,j) = D(i,j) * w(j@locate), ∀k ∀j w(j) += A(i,k) * B(k,j))"),
    ("forall-spelling", "a(i) = b(i) + c(i)", {"b": "s", "c": "s"}, "forall i a(i) = b(i) + c(i)"),
]


@pytest.mark.parametrize("case", ["rect", "explicit-zero", "empty", "one-entry"])
@pytest.mark.parametrize("expression, formats, schedule", [h[1:] for h in HAND_WRITTEN],
                         ids=[h[0] for h in HAND_WRITTEN])
def test_hand_written_cin_runs(expression, formats, schedule, case):
    value_dtype, index_dtype = (np.float64, np.int32) if case != "one-entry" else (np.float32, np.int64)
    run_differential(expression, formats, case, value_dtype, index_dtype, schedule=schedule)
    kernel = asp.compile(expression, formats=formats, schedule=schedule)
    given = {n: f for n, f in formats.items() if n != "w"}
    known = {n: f for n, f in all_formats(expression, given).items()}
    assert str(kernel.cin) == str(parse_cin(schedule, {**known, **{n: f for n, f in formats.items() if n == "w"}}))


@pytest.mark.parametrize("case", ["full", "one-entry", "empty"])
def test_a_sequence_writing_a_sparse_result_twice_is_refused_or_right(case):
    """Formerly (before df2a832) the second statement appended again: repeated coordinates, invalid storage."""
    try:
        run_differential("a(i) = b(i) + c(i)", {"b": "s", "c": "s", "a": "s"}, case, np.float64, np.int32,
                         schedule="sequence(∀i a(i) = b(i), ∀i a(i) += c(i))")
    except asp.ScheduleError:
        pass


def test_a_cin_statement_object_is_a_schedule():
    formats = {"A": "csr", "B": "csr", "C": "csr"}
    cin = parse_cin("∀i where(∀j C(i,j) = w(j), ∀k ∀j w(j) += A(i,k) * B(k,j))", formats)
    run_differential("C(i,j) = A(i,k) * B(k,j)", formats, "rect", np.float64, np.int64, schedule=cin)


@pytest.mark.parametrize("schedule", [
    pytest.param("∀i a(i) = b(i)", id="drops-an-operand"),
    pytest.param("∀i a(i) = b(i) * c(i)", id="another-operator"),
    pytest.param("∀j a(j) = b(j) + c(j)", id="renamed-index"),
])
def test_a_schedule_for_another_expression_is_refused_or_right(schedule):
    """Bad input never returns a wrong answer silently: either a ScheduleError, or the expression's value.
    (Before df2a832 the first two silently returned the schedule's value, the third raised KeyError.)"""
    try:
        run_differential("a(i) = b(i) + c(i)", {"b": "s", "c": "s"}, "full", np.float64, np.int32, schedule=schedule)
    except asp.ScheduleError:
        pass
