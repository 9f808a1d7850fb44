"""Index notation: the expression a user writes, as frozen dataclasses.

`C(i,j) = A(i,k) * B(k,j)`: an Assignment of an Access on the left to an expression of Accesses,
Literals, Neg, Add, Sub, Mul, Div and Sum on the right, and of the registry's other operators
(`operators.py`): `Apply` for a function (`maximum(a, b)`, `exp(a)`, `pattern(M(i,j))`) and `Reduce` for a
reduction other than the sum (`min(j, e)`). The symbol nodes stay their own classes, so every `+ - * /`
program keeps the tree (and the C) it had. Every node has `children()` and `with_children()`, so
one generic rewriter serves every pass; positions (`column`) are kept for error messages and ignored by
equality.

Reductions mean what they mean in TACO: an index that appears only on the right is summed over the
smallest subexpression holding all its uses — over a whole product when its factors use it, over only
the terms that use it in a sum. `y(i) = A(i,j) * x(j) + z(i)` is A·x + z. The parser makes that scope
explicit (`scope.py`): a reduction whose scope is a proper part of the right-hand side becomes a `Sum`
node there, so `y(i) = sum(j, A(i,j) * x(j)) + z(i)`; a reduction over the whole right-hand side stays
implicit, which keeps every expression whose sums cover it (SpMV, SpGEMM, MTTKRP) in the flat form the
rest of the pipeline schedules directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterator, Union

from ..errors import AutosparseError
from .operators import FUNCTIONS, REDUCTIONS, REGISTRY, Operator


@dataclass(frozen=True, slots=True)
class IndexVar:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Access:
    """Tensor `tensor` read or written at `indices` (none for a scalar)."""

    tensor: str
    indices: tuple[IndexVar, ...]
    column: int = field(default=0, compare=False)
    index_columns: tuple[int, ...] = field(default=(), compare=False)

    def children(self) -> tuple:
        return ()

    def with_children(self, children: tuple) -> "Access":
        return self

    def __str__(self) -> str:
        return f"{self.tensor}({','.join(map(str, self.indices))})"


@dataclass(frozen=True, slots=True)
class Literal:
    value: int | float | complex

    def children(self) -> tuple:
        return ()

    def with_children(self, children: tuple) -> "Literal":
        return self

    def __str__(self) -> str:
        return repr(self.value)


@dataclass(frozen=True, slots=True)
class Neg:
    operand: "Expr"

    def children(self) -> tuple:
        return (self.operand,)

    def with_children(self, children: tuple) -> "Neg":
        return self if children == (self.operand,) else Neg(*children)

    def __str__(self) -> str:
        return f"-{_wrapped(self.operand, (Add, Sub, Mul, Div))}"


@dataclass(frozen=True, slots=True)
class _Binary:
    left: "Expr"
    right: "Expr"
    symbol = "?"

    def children(self) -> tuple:
        return (self.left, self.right)

    def with_children(self, children: tuple):
        return self if children == (self.left, self.right) else replace(self, left=children[0], right=children[1])


@dataclass(frozen=True, slots=True)
class Add(_Binary):
    def __str__(self) -> str:
        return f"{self.left} + {_wrapped(self.right, (Add, Sub))}"


@dataclass(frozen=True, slots=True)
class Sub(_Binary):
    def __str__(self) -> str:
        return f"{self.left} - {_wrapped(self.right, (Add, Sub))}"


@dataclass(frozen=True, slots=True)
class Mul(_Binary):
    def __str__(self) -> str:
        return f"{_wrapped(self.left, (Add, Sub))} * {_wrapped(self.right, (Add, Sub, Mul, Div))}"


@dataclass(frozen=True, slots=True)
class Div(_Binary):
    """`left / right`, numpy's true division. Not a product: `factors` keeps it whole, so the divisor is
    never hoisted or reordered apart from its dividend. Its pattern is the dividend's (0 / b is 0), which
    is why the divisor must be stored everywhere (dense or scalar): an absent divisor entry would be a
    division by zero that no sparse result could hold."""

    def __str__(self) -> str:
        return f"{_wrapped(self.left, (Add, Sub))} / {_wrapped(self.right, (Add, Sub, Mul, Div))}"


@dataclass(frozen=True, slots=True)
class Sum:
    """`sum(index, body)`: the body summed over every coordinate of `index`, which nothing outside binds."""

    index: IndexVar
    body: "Expr"

    def children(self) -> tuple:
        return (self.body,)

    def with_children(self, children: tuple) -> "Sum":
        return self if children == (self.body,) else Sum(self.index, *children)

    def __str__(self) -> str:
        return f"sum({self.index}, {self.body})"


@dataclass(frozen=True, slots=True)
class Apply:
    """`op(args...)`: the registry's function `op` (a name in `operators.FUNCTIONS`) applied element-wise.
    Not linear: an implicit sum never crosses it (`scope.py`)."""

    op: str
    args: tuple["Expr", ...]
    column: int = field(default=0, compare=False)

    def __post_init__(self):
        if self.op not in FUNCTIONS:
            raise AutosparseError(f"Expected a function among {sorted(FUNCTIONS)}, but found {self.op!r}")
        if len(self.args) != FUNCTIONS[self.op].arity:
            raise AutosparseError(f"Expected {FUNCTIONS[self.op].arity} arguments of {self.op}, but found "
                                  f"{len(self.args)}")

    def children(self) -> tuple:
        return self.args

    def with_children(self, children: tuple) -> "Apply":
        return self if children == self.args else Apply(self.op, tuple(children), self.column)

    def __str__(self) -> str:
        return f"{self.op}({', '.join(map(str, self.args))})"


@dataclass(frozen=True, slots=True)
class Reduce:
    """`min(index, body)`: the body reduced by the operator `op` (minimum, maximum, multiply, logical_or,
    logical_and) over every coordinate of `index`, which nothing outside binds. The sum is `Sum`, never a
    `Reduce("add")`, so each reduction has one tree. Never implicit: written where it applies."""

    op: str
    index: IndexVar
    body: "Expr"
    column: int = field(default=0, compare=False)

    def __post_init__(self):
        if self.op == "add" or REGISTRY.get(self.op) not in REDUCTIONS.values():
            raise AutosparseError(f"Expected a reduction operator among "
                                  f"{sorted(op.name for op in REDUCTIONS.values() if op.name != 'add')}, "
                                  f"but found {self.op!r}")

    def children(self) -> tuple:
        return (self.body,)

    def with_children(self, children: tuple) -> "Reduce":
        return self if children == (self.body,) else Reduce(self.op, self.index, *children, self.column)

    def __str__(self) -> str:
        return f"{REGISTRY[self.op].reduction}({self.index}, {self.body})"


Expr = Union[Access, Literal, Neg, Add, Sub, Mul, Div, Sum, Apply, Reduce]

#: The nodes that bind an index over their body.
REDUCING = (Sum, Reduce)

_SYMBOL_OPERATORS = {Add: "add", Sub: "subtract", Mul: "multiply", Div: "divide", Neg: "negative"}


def operator_of(node) -> Operator | None:
    """The element-wise operator a node applies (`Add` -> add, `Apply` -> its op); None for leaves and
    reductions."""
    if isinstance(node, Apply):
        return REGISTRY[node.op]
    name = _SYMBOL_OPERATORS.get(type(node))
    return None if name is None else REGISTRY[name]


def reduction_of(node) -> Operator | None:
    """The operator a reduction node reduces with (`Sum` -> add); None for every other node."""
    if isinstance(node, Sum):
        return REGISTRY["add"]
    return REGISTRY[node.op] if isinstance(node, Reduce) else None


def _wrapped(expr: Expr, loose: tuple[type, ...]) -> str:
    """Parenthesise `expr` when it is one of the `loose` kinds of node, so that printing then parsing
    gives the same tree back."""
    return f"({expr})" if isinstance(expr, loose) else str(expr)


@dataclass(frozen=True, slots=True)
class Assignment:
    """`lhs = rhs`, or `lhs += rhs` when `accumulate` (the output keeps its earlier values)."""

    lhs: Access
    rhs: Expr
    accumulate: bool = False

    def __str__(self) -> str:
        """Text that parses back to this assignment: a reduction over the whole right-hand side that the
        scoping rule would place lower is written out as `sum(...)`."""
        from .scope import implicit_text
        return f"{self.lhs} {'+=' if self.accumulate else '='} {implicit_text(self)}"

    @property
    def free_indices(self) -> tuple[IndexVar, ...]:
        return self.lhs.indices

    @property
    def reduction_indices(self) -> tuple[IndexVar, ...]:
        """Indices summed over the whole right-hand side: on the right only and bound by no `Sum`, in
        order of first appearance."""
        return tuple(index for index in unbound_indices(self.rhs) if index not in self.lhs.indices)

    @property
    def scoped(self) -> bool:
        """Whether some reduction covers only part of the right-hand side (a `Sum` or `Reduce` node)."""
        return any(isinstance(node, REDUCING) for node in walk(self.rhs))


def walk(node) -> Iterator:
    """Every node below and including `node`, parents before children, left to right: of any node family
    with `children()` (index notation, CIN statements and expressions, the autoschedulers' nodes)."""
    yield node
    for child in node.children():
        yield from walk(child)


def accesses(expr: Expr) -> tuple[Access, ...]:
    return tuple(node for node in walk(expr) if isinstance(node, Access))


def factors(expr: Expr) -> list[Expr]:
    """The operands of a product tree, left to right (the expression itself when it is no product)."""
    if isinstance(expr, Mul):
        return factors(expr.left) + factors(expr.right)
    return [expr]


def product(items: list[Expr]) -> Expr:
    """The left-nested product of `items` (one item: itself)."""
    out = items[0]
    for item in items[1:]:
        out = Mul(out, item)
    return out


def peeled(expr: Expr) -> tuple[list[IndexVar], Expr]:
    """The indices of the `Sum`s directly nested at the top of `expr`, outermost first, and their body."""
    indices = []
    while isinstance(expr, Sum):
        indices.append(expr.index)
        expr = expr.body
    return indices, expr


def summed(indices, expr: Expr) -> Expr:
    """`expr` inside a `Sum` over each of `indices`, the first outermost (the inverse of `peeled`)."""
    for index in reversed(tuple(indices)):
        expr = Sum(index, expr)
    return expr


def unbound_indices(expr: Expr) -> tuple[IndexVar, ...]:
    """The indices `expr` uses that no `Sum` or `Reduce` inside it binds, in order of first appearance."""
    if isinstance(expr, Access):
        return tuple(dict.fromkeys(expr.indices))  # a diagonal A(i,i) uses i once
    if isinstance(expr, REDUCING):
        return tuple(index for index in unbound_indices(expr.body) if index != expr.index)
    return tuple(dict.fromkeys(index for child in expr.children() for index in unbound_indices(child)))
