"""No C text outside codegen's printer: every C AST node refuses what is not a name, an operator of C's, a
type or a typed pragma clause when it is made, and lowering (lower/) and the level plug-ins (format/)
hand codegen no text they format themselves."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from autosparse.codegen import names, printer
from autosparse.codegen.builder import CBuilder
from autosparse.codegen.c_ast import (ASSIGNMENT_OPERATORS, STORAGE_CLASSES, Assign, Binary, Call, Comment, CType, Decl, Define, Function, Goto, Include,
                                      Literal, Member, OmpAtomic, OmpFor, OmpParallel, OmpSimd, Param, Prelude,
                                      Reduction, Schedule, Section, Unary, Unroll, Var, as_expr, ctype)

ROOT = Path(__file__).resolve().parents[1] / "src" / "autosparse"


@pytest.mark.parametrize("make", [
    lambda: Var("a + b"),
    lambda: Var("x[0]"),
    lambda: Var("1st"),
    lambda: Var(""),
    lambda: Member(Var("e"), "key; x"),
    lambda: Call("free(p); f", ()),
    lambda: Goto("done: x"),
    lambda: Decl("int64_t", "n = 0"),
    lambda: Param("int64_t", "a, b"),
    lambda: Function("int", "f()", (), None),
    lambda: Define("X 1"),
    lambda: Prelude("hash64", (("name", "f(x)"),)),
    lambda: Prelude("hash64", (("name", "2654435761"),)),
    lambda: Include("stdio.h>\n#include <x.h"),
    lambda: as_expr("a + b"),
    lambda: as_expr("0"),
], ids=range(16))
def test_a_node_refuses_a_name_that_is_not_a_c_identifier(make):
    with pytest.raises(ValueError):
        make()


@pytest.mark.parametrize("make", [
    lambda: Binary("=", Var("a"), Var("b")),
    lambda: Binary(", ", Var("a"), Var("b")),
    lambda: Unary("sizeof ", Var("a")),
    lambda: Unary("-", Var("a"), postfix=True),
    lambda: Assign(Var("a"), Var("b"), "=="),
    lambda: Literal(1, "; x"),
    lambda: Function("int", "f", (), None, storage="extern"),
    lambda: Reduction("-", (Var("s"),)),
    lambda: Reduction("+", ()),
    lambda: Schedule("static) num_threads(8"),
    lambda: OmpAtomic("capture"),
    lambda: Unroll(-1),
    lambda: OmpFor("schedule(static, 1)"),
    lambda: OmpParallel(Literal(4), "schedule(static)"),
    lambda: OmpSimd(("reduction(+: s)",)),
], ids=range(15))
def test_a_node_refuses_an_operator_or_clause_c_does_not_have(make):
    with pytest.raises(ValueError):
        make()


@pytest.mark.parametrize("text", ["int64_t; int x", "int64_t[4]", "const", "double _Complex _Complex",
                                  "int64_t * restrict", "int64_t restrict", "(int64_t)"])
def test_a_type_is_a_scalar_or_typedef_name_const_and_pointers_nothing_else(text):
    with pytest.raises(ValueError):
        ctype(text)


@pytest.mark.parametrize("text, node", [
    ("int64_t", CType("int64_t")),
    ("const int64_t *restrict", CType("int64_t", const=True, pointers=1, restrict=True)),
    ("void **restrict", CType("void", pointers=2, restrict=True)),
    ("double _Complex *", CType("double _Complex", pointers=1)),
])
def test_a_type_spelled_as_usual_reads_back_into_its_node_and_prints_as_it_was_spelled(text, node):
    assert ctype(text) == node
    assert printer.type_name(node) == text


def test_a_comment_cannot_close_itself():
    with pytest.raises(ValueError):
        Comment("done */ free(p); /*")
    with pytest.raises(ValueError):
        Define("_DEFAULT_SOURCE", "why */ int x; /*")


def test_pragmas_print_their_typed_clauses():
    b = CBuilder()
    b.pragma(OmpParallel(Literal(4), Schedule("static", 1), (Reduction("+", (Var("s"), Var("t"))),)))
    b.pragma(OmpParallel(Var("threads"), None, (Reduction("|", (Var("f"),)),)))
    b.pragma(OmpFor(Schedule()))
    b.pragma(OmpSimd((Reduction("+", (Section(Var("y"), Var("n") * 2),)),)))
    b.pragma(OmpAtomic("write"))
    b.pragma(Unroll(4))
    assert b.text().splitlines() == [
        "#pragma omp parallel for schedule(static, 1) num_threads(4) reduction(+: s, t)",
        "#pragma omp parallel num_threads(threads) reduction(|: f)",
        "#pragma omp for schedule(static)",
        "#pragma omp simd reduction(+: y[0:(n * 2)])",
        "#pragma omp atomic write",
        "#pragma GCC unroll 4",
    ]


def test_derived_names_are_identifiers_in_their_namespace():
    assert names.part("found3", "end") == "found3_end"
    assert names.generated("keyedfind", 2) == "keyedfind2"
    with pytest.raises(ValueError):
        names.part("found3", "end]")
    with pytest.raises(ValueError):
        names.generated("bound", "_ready")


# --- the scan: lower/ and format/ hand codegen nodes and names, never text they format ----------------------

#: What takes a name, a type or an expression from lowering: c_ast's constructors and helpers, the builder's
#: methods. A string given to one of them directly must be a literal name or type, never formatted text.
TAKERS = {"Var", "Call", "call", "Decl", "decl", "Param", "Function", "Member", "field", "Goto", "goto", "Label",
          "label", "Cast", "cast", "SizeOf", "Prelude", "Define", "Include", "for_range", "assign", "expr", "CType",
          "ctype", "Literal", "pragma", "failing_to", "agreed", "fresh"}

#: codegen's names that produce C text; only the kernel (lower/kernel.py) prints its whole unit.
TEXT_MAKERS = {"expression", "operand", "statements", "type_name"}


def _sources(*packages: str):
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield path, ast.parse(path.read_text())


def _called_name(node: ast.Call) -> str | None:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _formats_text(arg: ast.expr) -> bool:
    """An f-string, a `+`/`%` of strings, or `.format`/`.join` of them."""
    if isinstance(arg, ast.JoinedStr):
        return True
    if isinstance(arg, ast.BinOp) and isinstance(arg.op, (ast.Add, ast.Mod)):
        return any(isinstance(side, (ast.Constant, ast.JoinedStr)) and isinstance(getattr(side, "value", ""), str)
                   for side in (arg.left, arg.right))
    return isinstance(arg, ast.Call) and _called_name(arg) in ("format", "join")


def test_lowering_and_level_plugins_hand_codegen_no_formatted_text():
    formatted = [f"{path.relative_to(ROOT)}:{node.lineno}"
                 for path, tree in _sources("lower", "format")
                 for node in ast.walk(tree) if isinstance(node, ast.Call) and _called_name(node) in TAKERS
                 for arg in [*node.args, *(k.value for k in node.keywords)] if _formats_text(arg)]
    assert formatted == []


def test_string_constants_given_to_codegen_are_names_or_types():
    """(An #include's header and a #define's reason are checked by their nodes: a path, a comment.)"""
    for path, tree in _sources("lower", "format"):
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _called_name(node) in TAKERS - {"Literal", "Include", "Define"}:
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        assert _name_or_type(arg.value), f"{path.relative_to(ROOT)}:{node.lineno}: {arg.value!r}"


def _name_or_type(text: str) -> bool:
    """A name, a type, an assignment's operator (`b.assign(x, v, "+=")`) or a function's storage class."""
    if text in ASSIGNMENT_OPERATORS | STORAGE_CLASSES:
        return True
    try:
        ctype(text)
    except ValueError:
        return False
    return True  # an identifier reads as a typedef name too


def test_only_the_kernel_prints_and_nothing_outside_codegen_makes_c_text():
    for path, tree in _sources("lower", "format", "pipeline", "runtime", "api"):
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("codegen.printer"):
                assert not {a.name for a in node.names} & TEXT_MAKERS, path
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "printer":
                assert node.attr == "unit" and path.name == "kernel.py", f"{path}:{node.lineno}: printer.{node.attr}"
