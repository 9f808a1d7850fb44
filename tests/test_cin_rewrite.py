"""The generic rewriter of cin/rewrite.py (prewalk/postwalk over children/with_children) and the one
zero-elimination every statement IR shares, as (before, after) tables."""

from __future__ import annotations

import pytest

from autosparse.cin import parse_cin
from autosparse.cin.ast import Access, accesses
from autosparse.cin.rewrite import postwalk, prewalk, without
from autosparse.notation import ast as notation
from autosparse.notation import parse

FORMATS = {"A": "csr", "B": "csr", "C": "csr", "x": "dense", "y": "dense", "z": "dense", "w": "dense"}


def rhs(text: str):
    return parse(f"y(i) = {text}").rhs


def test_a_rewrite_that_changes_nothing_returns_the_very_same_tree():
    stmt = parse_cin("∀i ∀j y(i) += A(i,j) * x(j) + z(i)", FORMATS)
    assert postwalk(stmt, lambda node: node) is stmt
    assert prewalk(stmt, lambda node: node) is stmt


def test_postwalk_rewrites_children_before_their_parent():
    seen = []
    postwalk(rhs("a(i) * (b(i) + c(i))"), lambda node: seen.append(str(node)) or node)
    assert seen == ["a(i)", "b(i)", "c(i)", "b(i) + c(i)", "a(i) * (b(i) + c(i))"]


def test_prewalk_rewrites_a_parent_before_its_children_and_descends_into_what_it_became():
    double_negation = lambda node: node.operand.operand if isinstance(node, notation.Neg) \
        and isinstance(node.operand, notation.Neg) else node
    assert str(prewalk(rhs("a(i) * --(b(i) + --c(i))"), double_negation)) == "a(i) * (b(i) + c(i))"


@pytest.mark.parametrize("before, after", [
    ("a(i) * 0", None),
    ("a(i) + 0 * b(i)", "a(i)"),
    ("0 - a(i)", "-a(i)"),
    ("-(0 * a(i)) + b(i)", "b(i)"),
    ("a(i) - b(i) * 0", "a(i)"),
    ("a(i) + b(i)", "a(i) + b(i)"),
])
def test_without_folds_literal_zeros(before, after):
    folded = without(rhs(before), ())
    assert (None if folded is None else str(folded)) == after


def _absent(stmt, *names):
    return {a for a in accesses(stmt) if a.tensor.name in names}


@pytest.mark.parametrize("before, absent, after", [
    ("∀i ∀j y(i) += A(i,j) * x(j)", ("A",), None),
    ("∀i ∀j C(i,j) = A(i,j) + B(i,j)", ("A",), "∀i ∀j C(i,j) = B(i,j)"),
    ("∀i ∀j C(i,j) = A(i,j) - B(i,j)", ("A",), "∀i ∀j C(i,j) = -B(i,j)"),
    ("∀i sequence(∀j y(i) += A(i,j) * x(j), y(i) += z(i))", ("A",), "∀i y(i) += z(i)"),
    ("∀i where(y(i) = w(), ∀j w() += A(i,j) * x(j))", ("x",), None),
    ("∀i where(y(i) = w() + z(i), ∀j w() += A(i,j) * x(j))", ("z",),
     "∀i where(y(i) = w(), ∀j w() += A(i,j) * x(j))"),
])
def test_without_eliminates_what_absent_operands_zero(before, absent, after):
    stmt = parse_cin(before, FORMATS)
    result = without(stmt, _absent(stmt, *absent))
    assert (None if result is None else str(result)) == after


def test_without_nothing_absent_is_the_same_statement():
    stmt = parse_cin("∀i where(y(i) = w() + z(i), ∀j w() += A(i,j) * x(j))", FORMATS)
    assert without(stmt, set()) is stmt
    assert all(isinstance(a, Access) for a in accesses(stmt))


@pytest.mark.parametrize("before, fills, after", [
    ("∀i ∀j y(i) += A(i,j)", {"A": float("inf"), "y": float("inf")}, "∀i ∀j y(i) += inf"),  # inf adds
    ("∀i ∀j y(i) max= A(i,j)", {"A": 2.0, "y": 2.0}, None),  # a maximum starting at 2 stays above it
    ("∀i ∀j y(i) += A(i,j) * x(j)", {"y": 3.0}, None),  # + 0 leaves any target as it is
])
def test_an_accumulation_is_dropped_only_where_it_leaves_its_target_as_it_is(before, fills, after):
    stmt = parse_cin(before, FORMATS, fills)
    result = without(stmt, _absent(stmt, "A"))
    assert (None if result is None else str(result)) == after
