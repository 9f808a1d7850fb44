"""Index notation: parsing, printing, einsum subscripts, checks with columns, and index extents."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import autosparse as asp
from autosparse.notation import (Access, Add, Assignment, IndexVar, Literal, Mul, Neg, Sub, Sum, einsum_assignment,
                                 index_extents, parse)

i, j, k = IndexVar("i"), IndexVar("j"), IndexVar("k")


def acc(name, *indices):
    return Access(name, tuple(IndexVar(x) for x in indices))


@pytest.mark.parametrize("text,expected", [
    ("C(i,j) = A(i,k) * B(k,j)", Assignment(acc("C", "i", "j"), Mul(acc("A", "i", "k"), acc("B", "k", "j")))),
    ("y(i) += A(i,j)*x(j)", Assignment(acc("y", "i"), Mul(acc("A", "i", "j"), acc("x", "j")), accumulate=True)),
    ("s() = a(i) * b(i)", Assignment(acc("s"), Mul(acc("a", "i"), acc("b", "i")))),
    ("s = alpha * a(i)", Assignment(acc("s"), Mul(acc("alpha"), acc("a", "i")))),
    ("a(i) = b(i) - c(i) + d(i)", Assignment(acc("a", "i"), Add(Sub(acc("b", "i"), acc("c", "i")), acc("d", "i")))),
    ("a(i) = b(i) - (c(i) + d(i))", Assignment(acc("a", "i"), Sub(acc("b", "i"), Add(acc("c", "i"), acc("d", "i"))))),
    ("a(i) = -b(i) * 2", Assignment(acc("a", "i"), Mul(Neg(acc("b", "i")), Literal(2)))),
    ("a(i) = 1.5e-3 * b(i)", Assignment(acc("a", "i"), Mul(Literal(0.0015), acc("b", "i")))),
    ("  A ( i , j )=B(i,j)*(C(i,j)+D(i,j)) ", Assignment(acc("A", "i", "j"),
                                                      Mul(acc("B", "i", "j"), Add(acc("C", "i", "j"), acc("D", "i", "j"))))),
])
def test_parse_and_print(text, expected):
    parsed = parse(text)
    assert parsed == expected
    assert parse(str(parsed)) == parsed


def test_reduction_indices_appear_only_on_the_right():
    assert parse("C(i,j) = A(i,k) * B(k,j)").reduction_indices == (k,)
    assert parse("s() = A(i,j) * B(j,i)").reduction_indices == (i, j)
    assert parse("y(i) = A(i,j) * x(j) + z(i)").free_indices == (i,)


@pytest.mark.parametrize("text,message,column", [
    ("C(i,j) = A(i,k) * B(k,j", "Expected '\\)'", 24),
    ("C(i,j) = A(i,k) $ B(k,j)", "found '\\$'", 17),
    ("C(i,i) = A(i,i)", "distinct indices in the output C\\(i,i\\), but i repeats", 5),
    ("y(i,k) = A(i,j) * x(j)", "output index k on the right-hand side", 5),
    ("y(i) = y(i) * x(i)", "output y only on the left-hand side", 8),
    ("y(i) = A(i,j) * A(j)", "A with 2 indices as in A\\(i,j\\), but found A\\(j\\)", 17),
    ("y(i) A(i)", "Expected '=' or '\\+='", 6),
    ("= 3", "Expected a name", 1),
    ("y(i) = ", "found 'end of input'", 8),
    ("y(i) = A(i,)", "Expected a name, but found '\\)'", 12),
    ("y(i) = A(i) * * B(i)", "found '\\*'", 15),
])
def test_errors_carry_the_column(text, message, column):
    with pytest.raises(asp.ParseError, match=message) as error:
        parse(text)
    assert error.value.column == column
    assert str(error.value).splitlines()[-1] == "    " + " " * (column - 1) + "^"


@pytest.mark.parametrize("subscripts,shapes,expected", [
    ("ij,jk->ik", [(2, 3), (3, 4)], "out(i,k) = T0(i,j) * T1(j,k)"),
    ("ij,jk", [(2, 3), (3, 4)], "out(i,k) = T0(i,j) * T1(j,k)"),
    ("ij,j->i", [(2, 3), (3,)], "out(i) = T0(i,j) * T1(j)"),
    ("i,i->", [(2,), (2,)], "out() = T0(i) * T1(i)"),
    ("ijk,jr,kr->ir", [(2, 3, 4), (3, 5), (4, 5)], "out(i,r) = T0(i,j,k) * T1(j,r) * T2(k,r)"),
    ("ba", [(2, 3)], "out(a,b) = T0(b,a)"),
    (" ij -> ji ", [(2, 3)], "out(j,i) = T0(i,j)"),
    ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)], "out(dots0,i,k) = T0(dots0,i,j) * T1(j,k)"),
    ("...ij,...jk", [(6, 5, 2, 3), (5, 3, 4)], "out(dots0,dots1,i,k) = T0(dots0,dots1,i,j) * T1(dots1,j,k)"),
    ("i...->...", [(2, 3, 4)], "out(dots0,dots1) = T0(i,dots0,dots1)"),
    ("...i->i", [(3,)], "out(i) = T0(i)"),
])
def test_einsum_subscripts(subscripts, shapes, expected):
    assert einsum_assignment(subscripts, shapes) == parse(expected)


@pytest.mark.parametrize("subscripts,shapes,message", [
    ("i1,j->ij", [(2,), (2,)], "letters"),
    ("ij->k", [(2, 3)], "output index k"),
    ("ij,jk->ik", [(2, 3), (3, 4), (4,)], "3 operand subscripts"),
    ("...i->i", [(2, 3)], "'...' in the output"),
    (".ij", [(2, 3)], "letters"),
    ("i..j", [(2, 3)], "letters"),
    ("...i...", [(2, 3)], "at most one ellipsis"),
    ("...ijk", [(2, 3)], "at most 2 letters"),
])
def test_einsum_errors(subscripts, shapes, message):
    with pytest.raises(asp.ParseError, match=message):
        einsum_assignment(subscripts, shapes)


def test_index_extents_and_shape_errors():
    spgemm = parse("C(i,j) = A(i,k) * B(k,j)")
    assert index_extents(spgemm, {"A": (3, 4), "B": (4, 5)}) == {i: 3, k: 4, j: 5}
    assert index_extents(spgemm, {"A": (3, 4), "B": (4, 5), "C": (3, 5)}) == {i: 3, k: 4, j: 5}
    with pytest.raises(asp.ShapeError, match="A\\(i,k\\) and B\\(k,j\\) to agree on the extent of k, but A gives 4 "
                                             "and B gives 5"):
        index_extents(spgemm, {"A": (3, 4), "B": (5, 5)})
    with pytest.raises(asp.ShapeError, match="B\\(k,j\\) and C\\(i,j\\) .* B gives 5 and C gives 6"):
        index_extents(spgemm, {"A": (3, 4), "B": (4, 5), "C": (3, 6)})
    with pytest.raises(asp.ShapeError, match="A to have 2 modes as in A\\(i,k\\), but its shape is \\(3, 4, 1\\)"):
        index_extents(spgemm, {"A": (3, 4, 1), "B": (4, 5)})
    with pytest.raises(asp.AutosparseError, match="operand named B"):
        index_extents(spgemm, {"A": (3, 4)})


names = st.sampled_from(["A", "B", "c", "x"])
variables = st.lists(st.sampled_from("ijkl"), max_size=3, unique=True)


@st.composite
def expressions(draw, depth=3):
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        if draw(st.booleans()):
            return Literal(draw(st.integers(0, 9)))
        return Access(draw(names), tuple(IndexVar(v) for v in draw(variables)))
    kind = draw(st.sampled_from([Add, Sub, Mul, Neg]))
    if kind is Neg:
        return Neg(draw(expressions(depth=depth - 1)))
    return kind(draw(expressions(depth=depth - 1)), draw(expressions(depth=depth - 1)))


@given(expressions())
def test_printing_then_parsing_gives_the_same_tree(expr):
    """Random right-hand sides; the property: the parsed tree is `expr` with its reductions scoped, and
    printing the assignment then parsing gives the same assignment back — or a documented ParseError."""
    text = f"out() = {expr}"
    try:
        assignment = parse(text)
    except asp.ParseError as error:
        assert "Expected" in str(error)
        return
    assert _without_sums(assignment.rhs) == expr
    assert parse(str(assignment)) == assignment


def _without_sums(expr):
    if isinstance(expr, Sum):
        return _without_sums(expr.body)
    children = tuple(_without_sums(child) for child in expr.children())
    return expr.with_children(children) if children else expr


def test_the_expression_parser_is_the_public_base_of_languages_over_expressions():
    from autosparse.notation.parser import ExpressionParser, Token

    class Doubled(ExpressionParser):  # a language whose numbers read twice as large
        def literal(self, token: Token) -> Literal:
            return Literal(2 * int(token.text))

    parser = Doubled("A(i) * 3; rest")
    assert str(parser.expr()) == "A(i) * 6"
    assert (parser.peek().text, parser.peek(1).text, parser.peek(9).kind) == (";", "rest", "end")
    assert str(ExpressionParser("2 * x(i) + 1").expression()) == "2 * x(i) + 1"
    with pytest.raises(asp.ParseError, match="Expected the end, but found 'rest'"):
        ExpressionParser("x(i) rest").expression()
