"""The one printer: C AST (`c_ast`) -> C text, indented four spaces a block.

Operands are parenthesised where C's precedence needs it and nowhere else, so how lowering nested its
nodes is what C computes.
"""

from __future__ import annotations

import re
from functools import lru_cache, singledispatch
from pathlib import Path
from string import Template

from .c_ast import (Assign, Binary, Block, Break, Call, Cast, Comment, Continue, CType, Decl, Define, Expr, ExprStmt,
                    For, Function, Goto, If, Include, Index, Initializer, Label, Literal, Member, OmpAtomic, OmpBarrier,
                    OmpCritical, OmpFor, OmpParallel, OmpSimd, OmpSingle, Prelude, Reduction, Return, Schedule,
                    Section, SizeOf, Stmt, Ternary, Unary, Unit, Unroll, Var, While)

INDENT = "    "

#: C's binary operators, by how tightly they bind (all associate to the left).
_BINARY = {op: level for level, ops in enumerate(
    (("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="), ("<<", ">>"), ("+", "-"),
     ("*", "/", "%")), start=4) for op in ops}
_TERNARY, _PREFIX, _POSTFIX, _ATOM = 3, 14, 15, 16


def unit(node: Unit) -> str:
    """A whole source file."""
    return "\n".join(_top(item) for item in node.items) + "\n"


def expression(node: Expr) -> str:
    return _expr(node)[0]


def operand(node: Expr) -> str:
    """`node` as it may stand inside other C text: in parentheses unless it binds as tightly as a postfix
    expression (a name, a constant, `a[i]`, `f(x)`)."""
    return _operand(node, _POSTFIX)


def statements(node: Stmt, depth: int = 0) -> str:
    return "\n".join(_lines(node, depth))


# --- expressions: (text, precedence) -------------------------------------------------------------------


@singledispatch
def _expr(node) -> tuple[str, int]:
    raise TypeError(f"Expected a C expression node, but found {node!r}")


def _operand(node: Expr, least: int) -> str:
    """`node`'s text, parenthesised when it binds less tightly than `least`."""
    text, level = _expr(node)
    return text if level >= least else f"({text})"


@_expr.register
def _(node: Var):
    return node.name, _ATOM


@_expr.register
def _(node: Literal):
    text = repr(node.value) + node.suffix
    return text, _PREFIX if text.startswith("-") else _ATOM


@_expr.register
def _(node: Index):
    return f"{_operand(node.base, _POSTFIX)}[{expression(node.index)}]", _POSTFIX


@_expr.register
def _(node: Member):
    return f"{_operand(node.base, _POSTFIX)}.{node.field}", _POSTFIX


@_expr.register
def _(node: Initializer):
    return f"{{{', '.join(expression(v) for v in node.values)}}}", _ATOM


@_expr.register
def _(node: Call):
    return f"{node.function}({', '.join(expression(a) for a in node.args)})", _POSTFIX


@_expr.register
def _(node: Unary):
    if node.postfix:
        return f"{_operand(node.operand, _POSTFIX)}{node.op}", _POSTFIX
    operand = _operand(node.operand, _PREFIX)
    spacer = " " if node.op in ("-", "+") and operand.startswith(node.op) else ""
    return f"{node.op}{spacer}{operand}", _PREFIX


@_expr.register
def _(node: Binary):
    level = _BINARY[node.op]
    return f"{_operand(node.left, level)} {node.op} {_operand(node.right, level + 1)}", level


@_expr.register
def _(node: Cast):
    return f"({type_name(node.type)}){_operand(node.operand, _PREFIX)}", _PREFIX


@_expr.register
def _(node: SizeOf):
    return f"sizeof({type_name(node.type)})", _PREFIX


def type_name(node: CType) -> str:
    """`const int64_t *restrict`: how a type is written alone (a cast's, a placeholder's)."""
    const = "const " if node.const else ""
    stars = f" {'*' * node.pointers}{'restrict' if node.restrict else ''}" if node.pointers else ""
    return f"{const}{node.base}{stars}"


def _declarator(type_: CType, name: str) -> str:
    """`int64_t *p`, `int64_t *restrict p`, `int64_t n`: a type with the name it declares."""
    text = type_name(type_)
    return f"{text}{'' if text.endswith('*') else ' '}{name}"


@_expr.register
def _(node: Ternary):
    return (f"{_operand(node.condition, _TERNARY + 1)} ? {expression(node.then)} : "
            f"{_operand(node.otherwise, _TERNARY)}", _TERNARY)


#: Statements an `if` without else keeps on its own line (`if (!p) return 1;`).
_JUMPS = (Return, Break, Continue, Goto)


# --- statements -----------------------------------------------------------------------------------------


@singledispatch
def _lines(node, depth: int) -> list[str]:
    raise TypeError(f"Expected a C statement node, but found {node!r}")


def _braced(header: str, body: Block, depth: int) -> list[str]:
    return [INDENT * depth + f"{header} {{", *_body(body, depth + 1), INDENT * depth + "}"]


def _body(block: Block, depth: int) -> list[str]:
    return [line for stmt in block.body for line in _lines(stmt, depth)]


@_lines.register
def _(node: Block, depth):
    return [INDENT * depth + "{", *_body(node, depth + 1), INDENT * depth + "}"]


@_lines.register
def _(node: Decl, depth):
    return [INDENT * depth + _declaration(node) + ";"]


def _declaration(node: Decl) -> str:
    length = "" if node.length is None else f"[{node.length}]"
    init = "" if node.init is None else f" = {expression(node.init)}"
    return f"{_declarator(node.type, node.name)}{length}{init}"


@_lines.register
def _(node: Assign, depth):
    return [INDENT * depth + _inline(node) + ";"]


@_lines.register
def _(node: ExprStmt, depth):
    return [INDENT * depth + expression(node.expr) + ";"]


@_lines.register
def _(node: If, depth):
    if node.otherwise is None and len(node.then.body) == 1 and isinstance(node.then.body[0], _JUMPS):
        return [INDENT * depth + f"if ({expression(node.condition)}) " + _lines(node.then.body[0], 0)[0]]
    lines = _braced(f"if ({expression(node.condition)})", node.then, depth)
    otherwise = node.otherwise
    while otherwise is not None:
        chained = otherwise.body[0] if len(otherwise.body) == 1 and isinstance(otherwise.body[0], If) else None
        header = f"else if ({expression(chained.condition)})" if chained else "else"
        following = _braced(header, chained.then if chained else otherwise, depth)
        lines[-1] += " " + following[0].lstrip()
        lines += following[1:]
        otherwise = chained.otherwise if chained else None
    return lines


@_lines.register
def _(node: For, depth):
    init = "" if node.init is None else _inline(node.init)
    condition = "" if node.condition is None else expression(node.condition)
    step = "" if node.step is None else _inline(node.step)
    return _braced(f"for ({init}; {condition}; {step})", node.body, depth)


def _inline(node: "Stmt | Expr") -> str:
    """A declaration, assignment or expression without its `;` (a for loop's init and step)."""
    if isinstance(node, Decl):
        return _declaration(node)
    if isinstance(node, Assign):
        return f"{expression(node.target)} {node.op} {expression(node.value)}"
    if isinstance(node, ExprStmt):
        return expression(node.expr)
    return expression(node)


@_lines.register
def _(node: While, depth):
    return _braced(f"while ({expression(node.condition)})", node.body, depth)


@_lines.register
def _(node: Return, depth):
    return [INDENT * depth + ("return;" if node.value is None else f"return {expression(node.value)};")]


@_lines.register
def _(node: Break, depth):
    return [INDENT * depth + "break;"]


@_lines.register
def _(node: Continue, depth):
    return [INDENT * depth + "continue;"]


@_lines.register
def _(node: Goto, depth):
    return [INDENT * depth + f"goto {node.label};"]


@_lines.register
def _(node: Label, depth):
    return [INDENT * depth + f"{node.name}:;"]


@_lines.register
def _(node: Comment, depth):
    return [INDENT * depth + f"/* {node.text} */"]


# --- pragmas ---------------------------------------------------------------------------------------------


def _pragma(text: str, depth: int) -> list[str]:
    return [INDENT * depth + f"#pragma {text}"]


def _clauses(*clauses: str) -> str:
    return " ".join(clause for clause in clauses if clause)


def _reductions(reductions: tuple[Reduction, ...]) -> str:
    return " ".join(f"reduction({r.op}: {', '.join(_reduced(item) for item in r.items)})" for r in reductions)


def _reduced(item: Var | Section) -> str:
    return item.name if isinstance(item, Var) else f"{item.array.name}[0:{operand(item.length)}]"


def _schedule(node: Schedule) -> str:
    return f"schedule({node.kind}{'' if node.chunk is None else f', {node.chunk}'})"


@_lines.register
def _(node: Unroll, depth):
    return _pragma(f"GCC unroll {node.count}", depth)


@_lines.register
def _(node: OmpParallel, depth):
    loop = "" if node.loop is None else f"for {_schedule(node.loop)}"
    threads = "" if node.num_threads is None else f"num_threads({expression(node.num_threads)})"
    return _pragma(_clauses("omp parallel", loop, threads, _reductions(node.reductions)), depth)


@_lines.register
def _(node: OmpFor, depth):
    return _pragma(_clauses("omp for", _schedule(node.schedule), _reductions(node.reductions)), depth)


@_lines.register
def _(node: OmpSimd, depth):
    return _pragma(_clauses("omp simd", _reductions(node.reductions)), depth)


@_lines.register
def _(node: OmpAtomic, depth):
    return _pragma(_clauses("omp atomic", node.kind), depth)


@_lines.register
def _(node: OmpBarrier, depth):
    return _pragma("omp barrier", depth)


@_lines.register
def _(node: OmpSingle, depth):
    return _pragma("omp single", depth)


@_lines.register
def _(node: OmpCritical, depth):
    return _pragma("omp critical", depth)


# --- top level -----------------------------------------------------------------------------------------


@singledispatch
def _top(node) -> str:
    raise TypeError(f"Expected a top-level C node, but found {node!r}")


@_top.register
def _(node: Function):
    params = ", ".join(_declarator(p.type, p.name) for p in node.params)
    header = f"{node.storage} {type_name(node.return_type)} {node.name}({params})".lstrip()
    return "\n".join(_braced(header, node.body, 0))


@_top.register
def _(node: Include):
    return f"#include <{node.header}>"


@_top.register
def _(node: Define):
    return f"#define {node.name}" + (f"  /* {node.why} */" if node.why else "")


@_top.register
def _(node: Prelude):
    values = {name: type_name(v) if isinstance(v, CType) else str(v) for name, v in node.values}
    return Template(_prelude_sections()[node.section]).substitute(values).strip("\n")


@lru_cache(maxsize=None)
def _prelude_sections() -> dict[str, str]:
    """prelude.c's sections, each introduced by a line `/* @section NAME */`."""
    text = (Path(__file__).parent / "prelude.c").read_text()
    parts = re.split(r"^/\* @section (\w+) \*/\n", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))
