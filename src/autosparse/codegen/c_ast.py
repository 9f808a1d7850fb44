"""A small typed C AST: what lowering builds and `printer` turns into C text.

Expressions, statements and top-level declarations are frozen dataclasses holding tuples only, so a
fragment can be shared, compared and hashed (a level plug-in's `locate` answers with one). It holds just
what kernels need; types are C type names as text (`"const int64_t *restrict"`), as TACO's `Datatype`
would be, since nothing inspects them.

Expressions combine with Python operators where C has the same one (`vals[p] * 2 + x`); comparisons and
logic, which Python cannot overload to build nodes, are functions (`lt(i, n)`, `and_(a, b)`).

`BridgeText` and `as_expr`'s acceptance of `str` are the temporary bridge for `lower/lower.py`, which
still writes C text: they go once lower.py builds nodes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union


class Expr:
    """A C expression. `str()` prints it (via `printer`) as an operand, in parentheses unless it is a name,
    a constant, or a postfix expression (`a[i]`, `f(x)`), so it can still meet text safely during the bridge."""

    __slots__ = ()

    def __str__(self) -> str:
        from .printer import operand
        return operand(self)

    def __add__(self, other) -> "Expr":
        return Binary("+", self, as_expr(other))

    def __radd__(self, other) -> "Expr":
        return Binary("+", as_expr(other), self)

    def __sub__(self, other) -> "Expr":
        return Binary("-", self, as_expr(other))

    def __rsub__(self, other) -> "Expr":
        return Binary("-", as_expr(other), self)

    def __mul__(self, other) -> "Expr":
        return Binary("*", self, as_expr(other))

    def __rmul__(self, other) -> "Expr":
        return Binary("*", as_expr(other), self)

    def __floordiv__(self, other) -> "Expr":
        """C's `/` (integer division truncates, as Python's `//` does for the nonnegative values kernels divide)."""
        return Binary("/", self, as_expr(other))

    def __mod__(self, other) -> "Expr":
        return Binary("%", self, as_expr(other))

    def __and__(self, other) -> "Expr":
        return Binary("&", self, as_expr(other))

    def __or__(self, other) -> "Expr":
        return Binary("|", self, as_expr(other))

    def __xor__(self, other) -> "Expr":
        return Binary("^", self, as_expr(other))

    def __rshift__(self, other) -> "Expr":
        return Binary(">>", self, as_expr(other))

    def __lshift__(self, other) -> "Expr":
        return Binary("<<", self, as_expr(other))

    def __neg__(self) -> "Expr":
        return Unary("-", self)

    def __getitem__(self, index) -> "Expr":
        return Index(self, as_expr(index))

    def field(self, name: str) -> "Expr":
        return Member(self, name)


@dataclass(frozen=True, slots=True)
class Var(Expr):
    """A name: a variable, an array, or a constant the headers define (`INT64_MAX`, `NULL`)."""

    name: str


@dataclass(frozen=True, slots=True)
class Literal(Expr):
    """An integer or floating constant, printed as Python writes it (`repr`), then `suffix` (`ull`)."""

    value: int | float
    suffix: str = ""


@dataclass(frozen=True, slots=True)
class Index(Expr):
    base: Expr
    index: Expr


@dataclass(frozen=True, slots=True)
class Member(Expr):
    """`base.field` (a struct's field: a hash table entry's key)."""

    base: Expr
    field: str


@dataclass(frozen=True, slots=True)
class Initializer(Expr):
    """`{a, b}`: what an array declaration starts with."""

    values: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Call(Expr):
    function: str
    args: tuple[Expr, ...] = ()


@dataclass(frozen=True, slots=True)
class Unary(Expr):
    """A prefix operator (`-x`, `!x`, `*p`, `&x`), or a postfix one (`i++`) when `postfix`."""

    op: str
    operand: Expr
    postfix: bool = False


@dataclass(frozen=True, slots=True)
class Binary(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Cast(Expr):
    type: str
    operand: Expr


@dataclass(frozen=True, slots=True)
class SizeOf(Expr):
    type: str


@dataclass(frozen=True, slots=True)
class Ternary(Expr):
    condition: Expr
    then: Expr
    otherwise: Expr


@dataclass(frozen=True, slots=True)
class BridgeText(Expr):
    """Bridge for lower/lower.py only: an expression it still writes as C text."""

    text: str


_ATOM = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|-?[0-9]+")


def as_expr(value: "Expr | int | float | str") -> Expr:
    """A node for `value`: numbers become literals, a name a variable; other text (from lower.py, the
    bridge) is kept as it is."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        return Literal(int(value))
    if isinstance(value, (int, float)):
        return Literal(value)
    if isinstance(value, str):
        if re.fullmatch(r"-?[0-9]+", value):
            return Literal(int(value))
        return Var(value) if re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", value) else BridgeText(value)
    raise TypeError(f"Expected a C expression, but found {value!r}")


def is_atom_text(text: str) -> bool:
    """Whether bridged text needs no parentheses as an operand: a name or an integer."""
    return _ATOM.fullmatch(text) is not None


def lt(left, right) -> Expr:
    return Binary("<", as_expr(left), as_expr(right))


def le(left, right) -> Expr:
    return Binary("<=", as_expr(left), as_expr(right))


def gt(left, right) -> Expr:
    return Binary(">", as_expr(left), as_expr(right))


def ge(left, right) -> Expr:
    return Binary(">=", as_expr(left), as_expr(right))


def eq(left, right) -> Expr:
    return Binary("==", as_expr(left), as_expr(right))


def ne(left, right) -> Expr:
    return Binary("!=", as_expr(left), as_expr(right))


def and_(*terms) -> Expr:
    """`a && b && ...` (left to right, as C reads it)."""
    out = as_expr(terms[0])
    for term in terms[1:]:
        out = Binary("&&", out, as_expr(term))
    return out


def or_(*terms) -> Expr:
    out = as_expr(terms[0])
    for term in terms[1:]:
        out = Binary("||", out, as_expr(term))
    return out


def not_(operand) -> Expr:
    return Unary("!", as_expr(operand))


def call(function: str, *args) -> Call:
    return Call(function, tuple(as_expr(a) for a in args))


def ternary(condition, then, otherwise) -> Ternary:
    return Ternary(as_expr(condition), as_expr(then), as_expr(otherwise))


def cast(ctype: str, operand) -> Cast:
    return Cast(ctype, as_expr(operand))


def increment(target) -> Unary:
    return Unary("++", as_expr(target), postfix=True)


def decrement(target) -> Unary:
    return Unary("--", as_expr(target), postfix=True)


def address_of(operand) -> Unary:
    return Unary("&", as_expr(operand))


# --- statements --------------------------------------------------------------------------------------


class Stmt:
    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Block(Stmt):
    """Statements; in braces when it stands alone inside another block."""

    body: tuple[Stmt, ...] = ()


@dataclass(frozen=True, slots=True)
class Decl(Stmt):
    """`type name = init;`, or with a `length` the array `type name[length] = init;`."""

    type: str
    name: str
    init: Expr | None = None
    length: int | None = None


@dataclass(frozen=True, slots=True)
class Assign(Stmt):
    """`target op value;` with op `=` or a compound assignment (`+=`, `|=`, ...)."""

    target: Expr
    value: Expr
    op: str = "="


@dataclass(frozen=True, slots=True)
class ExprStmt(Stmt):
    expr: Expr


@dataclass(frozen=True, slots=True)
class If(Stmt):
    condition: Expr
    then: Block
    otherwise: Block | None = None


@dataclass(frozen=True, slots=True)
class For(Stmt):
    init: Stmt | None
    condition: Expr | None
    step: Stmt | Expr | None
    body: Block


@dataclass(frozen=True, slots=True)
class While(Stmt):
    condition: Expr
    body: Block


@dataclass(frozen=True, slots=True)
class Return(Stmt):
    value: Expr | None = None


@dataclass(frozen=True, slots=True)
class Break(Stmt):
    pass


@dataclass(frozen=True, slots=True)
class Continue(Stmt):
    pass


@dataclass(frozen=True, slots=True)
class Goto(Stmt):
    label: str


@dataclass(frozen=True, slots=True)
class Label(Stmt):
    name: str


@dataclass(frozen=True, slots=True)
class Pragma(Stmt):
    """`#pragma text` (`omp parallel for ...`)."""

    text: str


@dataclass(frozen=True, slots=True)
class Comment(Stmt):
    text: str


@dataclass(frozen=True, slots=True)
class BridgeLine(Stmt):
    """Bridge for lower/lower.py only: a line of C it still writes as text."""

    text: str


@dataclass(frozen=True, slots=True)
class BridgeBlock(Stmt):
    """Bridge for lower/lower.py only: `header { body }` with a header it still writes as text."""

    header: str
    body: Block


# --- top level ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Param:
    type: str
    name: str


@dataclass(frozen=True, slots=True)
class Function:
    """A function definition; `static inline` for the helpers a kernel defines before itself."""

    return_type: str
    name: str
    params: tuple[Param, ...]
    body: Block
    storage: str = ""  # "", "static" or "static inline"


@dataclass(frozen=True, slots=True)
class Prelude:
    """A section of codegen's C prelude (`prelude.c`), its `${placeholders}` filled from `values`."""

    section: str
    values: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Include:
    header: str


@dataclass(frozen=True, slots=True)
class Define:
    name: str
    why: str = ""


TopLevel = Union[Function, Prelude, Include, Define]


@dataclass(frozen=True, slots=True)
class Unit:
    """A translation unit: what one kernel's source holds."""

    items: tuple[TopLevel, ...]
