"""Functions and reductions in index notation: round trips, scoping, column-naming errors, and the
pipeline's early refusal until lowering compiles them."""

import numpy as np
import pytest

import autosparse as asp
from autosparse.errors import ParseError, ScheduleError
from autosparse.notation import Apply, Reduce, Sum, parse
from autosparse.notation.operators import FUNCTIONS, REDUCTIONS

ARGS = {1: "A(i,j)", 2: "A(i,j), B(i,j)", 3: "M(i,j), A(i,j), B(i,j)"}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_every_function_round_trips(name):
    text = f"C(i,j) = {name}({ARGS[FUNCTIONS[name].arity]}) * 2"
    assignment = parse(text)
    assert isinstance(assignment.rhs.left, Apply) and assignment.rhs.left.op == name
    assert parse(str(assignment)) == assignment


@pytest.mark.parametrize("word", sorted(REDUCTIONS))
def test_every_reduction_round_trips(word):
    assignment = parse(f"y(i) = -{word}(j, A(i,j) * x(j)) + z(i)")
    reduced = assignment.rhs.left.operand
    assert isinstance(reduced, Sum if word == "sum" else Reduce)
    assert parse(str(assignment)) == assignment


@pytest.mark.parametrize("text,rhs", [
    ("y(i) = maximum(A(i,j) * x(j), 0)", "maximum(sum(j, A(i,j) * x(j)), 0)"),
    ("y(i) = min(j, A(i,j) + d(j))", "min(j, A(i,j) + d(j))"),
    ("y(i) = min(j, A(i,j) + B(j,k) * x(k))", "min(j, A(i,j) + sum(k, B(j,k) * x(k)))"),
    ("y(i) = exp(A(i,j)) + z(i)", "exp(sum(j, A(i,j))) + z(i)"),
    ("y(i) = c(i) * abs(A(i,j) * x(j))", "c(i) * abs(sum(j, A(i,j) * x(j)))"),
    ("y(i) = maximum(A(i,j), B(i,j))", "maximum(A(i,j), B(i,j))"),       # both arguments: summed whole
    ("C(i,j) = pattern(M(i,j)) * A(i,k) * B(k,j)", "pattern(M(i,j)) * A(i,k) * B(k,j)"),
    ("y(i) = where(less(A(i,j), 0), B(i,j), 1)", "where(less(A(i,j), 0), B(i,j), 1)"),
])
def test_scoping(text, rhs):
    assert str(parse(text).rhs) == rhs


def test_a_sum_over_a_whole_function_stays_implicit():
    assignment = parse("y(i) = maximum(A(i,j), B(i,j))")
    assert assignment.reduction_indices == (parse("y(i) = A(i,j)").rhs.indices[1],)
    assert not assignment.scoped and parse("y(i) = min(j, A(i,j))").scoped


@pytest.mark.parametrize("text,message,column", [
    ("y(i) = exp(i)", "exp is a function, not a tensor name", 8),
    ("y(i) = maximum(A(i))", "Expected 2 arguments of the function maximum", 8),
    ("y(i) = sqrt(A(i), B(i))", "Expected 1 argument of the function sqrt", 8),
    ("y(i) = min(A(i), B(i))", "for the element-wise minimum write minimum", 8),
    ("y(i) = x(i) * max(j, s)", "max is a reduction word", 22),
    ("y(i) = min(i, A(i,j))", "over an index not in the output", 15),
    ("y(i) = min(j, A(i,j)) + x(j)", "used only inside", 15),
    ("y(i) = where(A(i), B(i)", "Expected '\\)'", 24),
])
def test_parse_errors_name_the_column(text, message, column):
    with pytest.raises(ParseError, match=message) as error:
        parse(text)
    assert error.value.column == column


def test_a_word_without_a_parenthesis_is_a_tensor_name():
    assignment = parse("y(i) = exp * x(i) + log")
    assert {a.tensor for a in (assignment.rhs.left.left, assignment.rhs.right)} == {"exp", "log"}


@pytest.mark.parametrize("text, expected, refused", [("y(i) = maximum(A(i,j) * x(j), 0)", [3.0, 3.0], "maximum"),
                                                      ("y(i) = min(j, A(i,j) + x(j))", [2.0, 2.0], None)])
def test_the_default_schedule_compiles_functions_and_the_autoschedulers_read_semirings(text, expected, refused):
    operands = dict(A=np.ones((2, 3)), x=np.ones(3))
    np.testing.assert_array_equal(asp.evaluate(text, **operands), expected)
    np.testing.assert_array_equal(asp.compile(parse(text))(**operands), expected)
    if refused is None:  # a semiring (autoschedule/algebra.py)
        np.testing.assert_array_equal(asp.evaluate(text, schedule="auto", **operands), expected)
        return
    for run in (lambda: asp.evaluate(text, schedule="auto", **operands), lambda: asp.autoschedule(text)):
        with pytest.raises(ScheduleError, match=refused):
            run()
