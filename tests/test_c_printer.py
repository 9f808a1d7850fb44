"""The C AST and its one printer: expressions print with the parentheses C's precedence needs and no
others, statements as the C they stand for; level plug-ins answer with nodes that print as that C."""

import pytest

from autosparse.codegen import printer
from autosparse.codegen.builder import CBuilder
from autosparse.codegen.c_ast import (Initializer, Literal, SizeOf, Var, and_, cast, decrement, eq, ge, lt, not_, or_,
                                      ternary)
from autosparse.format.compressed import Compressed
from autosparse.format.dense import Dense
from autosparse.format.hashed import Hashed
from autosparse.format.triangular import Triangular

a, b, c, n, p = (Var(name) for name in ("a", "b", "c", "n", "p"))


@pytest.mark.parametrize("node, text", [
    ((a + b) * c, "(a + b) * c"),
    (a + b * c, "a + b * c"),
    (a - (b - c), "a - (b - c)"),
    ((a - b) - c, "a - b - c"),
    (a * b // 2 % n, "a * b / 2 % n"),
    ((a + 1) & n, "a + 1 & n"),
    (a[p * n + c], "a[p * n + c]"),
    ((a + b)[p], "(a + b)[p]"),
    (a[p].field("key"), "a[p].key"),
    (-(-a), "- -a"),
    (not_(eq(a, b)), "!(a == b)"),
    (and_(lt(a, b), or_(a, b)), "a < b && (a || b)"),
    (ternary(and_(a, b), 2 * n, 0), "a && b ? 2 * n : 0"),
    (ternary(ge(c, p), a, -1), "c >= p ? a : -1"),
    (cast("size_t", n + 1) * SizeOf("double"), "(size_t)(n + 1) * sizeof(double)"),
    (cast("size_t", n) + 1, "(size_t)n + 1"),
    (decrement(p), "p--"),
    (Literal(-0.5) * a, "-0.5 * a"),
])
def test_expressions_print_with_only_the_parentheses_c_needs(node, text):
    assert printer.expression(node) == text


@pytest.mark.parametrize("node, operand", [(a[p], "a[p]"), (a + b, "(a + b)"), (Literal(-1), "(-1)"), (n, "n")])
def test_an_operand_is_parenthesised_unless_it_binds_as_tightly_as_a_postfix(node, operand):
    assert printer.operand(node) == operand == str(node)


def test_statements_print_as_the_c_they_stand_for():
    b = CBuilder()
    b.decl("double", "w", Initializer((Literal(0),)), length=1)
    with b.for_range("q", 0, n):
        with b.if_(lt(a[Var("q")], 0)):
            b.continue_()
        with b.if_(eq(a[Var("q")], c)):
            b.break_()
        with b.else_():
            b.assign(Var("w")[0], a[Var("q")], "+=")
    assert b.text() == "\n".join([
        "double w[1] = {0};",
        "for (int64_t q = 0; q < n; q++) {",
        "    if (a[q] < 0) continue;",
        "    if (a[q] == c) {",
        "        break;",
        "    } else {",
        "        w[0] += a[q];",
        "    }",
        "}",
    ])


ARRAYS = {"pos": "A_pos2", "crd": "A_crd2", "@type": "int32_t", "@dim": "n", "@base": "A_base"}


@pytest.mark.parametrize("fragment, text", [
    (lambda: Dense().locate({}, Literal(0), c, n), "c"),
    (lambda: Dense().locate({}, p + 1, c, n), "(p + 1) * n + c"),
    (lambda: Compressed().position_range(ARRAYS, p, p + 1)[1], "A_pos2[p + 1]"),
    (lambda: Compressed().coordinate(ARRAYS, p), "A_crd2[p]"),
    (lambda: Hashed().vacant(ARRAYS, p), "A_crd2[p] < 0"),
    (lambda: Hashed().locate(ARRAYS, p, c, n), "hashedfind32(A_pos2, A_crd2, p, c)"),
    (lambda: Triangular(upper=False).position_range(ARRAYS, p, p + 1)[1], "(p + 1) * (p + 1 + 1) / 2"),
    (lambda: Triangular(upper=False).coordinate(ARRAYS, Var("q")), "q - A_base"),
    (lambda: Triangular(upper=True).locate(ARRAYS, p, c, n), "c >= p ? p * n - p * (p - 1) / 2 + c - p : -1"),
])
def test_level_plugins_answer_with_nodes_that_print_as_their_c(fragment, text):
    assert printer.expression(fragment()) == text
