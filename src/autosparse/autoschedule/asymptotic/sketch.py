"""Program sketches: protocolized concrete index notation before storage formats are chosen.

The enumeration pipeline of Ahrens et al. §7 decides loop structure, workspaces and protocols first and
formats last, so its programs name tensors and protocols only:

    ∀j where(∀i a(i) += B(i@locate,j) * w, ∀k w += C(j@locate,k) * d(k@locate))

A sketch is CIN before formats: its statements are CIN's own `Forall`, `Where` and `Assign` (so CIN's
rewriter, zero-elimination and nest/unnest serve it) and its protocols CIN's `Protocol`; only its leaves
and operators are its own — accesses that name tensors and indices by strings (no format yet), n-ary
`*` and `+` (flattened modulo associativity and commutativity) and scoped sums over several indices.
A sketch is small and hashable (millions are built for SpMTTKRP); `realise` turns a chosen one into CIN.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator, Union

from ...cin.ast import Assign, Forall, Protocol, Where, assignments
from ...cin.rewrite import adds, postwalk
from ...notation import ast as notation
from ...notation.ast import Literal
from ..algebra import PLUS_TIMES, Semiring


@dataclass(frozen=True, slots=True)
class Access:
    """`tensor` at `indices` (mode order); `protocols` one per mode once chosen, else empty."""

    tensor: str
    indices: tuple[str, ...]
    protocols: tuple[Protocol, ...] = ()

    def protocol_of(self, index: str) -> Protocol | None:
        return self.protocols[self.indices.index(index)] if self.protocols and index in self.indices else None

    def children(self) -> tuple:
        return ()

    def with_children(self, children: tuple) -> "Access":
        return self

    def __str__(self) -> str:
        marks = [f"{i}@{p.value}" if p in (Protocol.LOCATE, Protocol.INSERT) else i
                 for i, p in zip(self.indices, self.protocols)] if self.protocols else list(self.indices)
        return f"{self.tensor}({','.join(marks)})" if self.indices else self.tensor


@dataclass(frozen=True, slots=True)
class Call:
    """An n-ary `*` or `+` (the semiring's ⊗ and ⊕: algebra.py), or a one-argument `-` (negation) or
    function that keeps the zero (`abs`, `pattern`: its registry name)."""

    op: str
    args: tuple

    def children(self) -> tuple:
        return self.args

    def with_children(self, children: tuple) -> "Call":
        return self if children == self.args else Call(self.op, children)

    def __str__(self) -> str:
        if self.op == "-":
            return f"-{_wrapped(self.args[0])}"
        if len(self.args) == 1:
            return f"{self.op}({self.args[0]})"
        return f" {self.op} ".join(_wrapped(a) if self.op == "*" else str(a) for a in self.args)


@adds.register(Call)
def _(node: Call) -> bool:
    return node.op == "+"


def _wrapped(expr) -> str:
    return f"({expr})" if isinstance(expr, Call) and expr.op == "+" else str(expr)


@dataclass(frozen=True, slots=True)
class Sum:
    """A scoped reduction (`sum(j, …)` in index notation): `body` summed over `indices`. It lives only in
    stages 1 and 2, which turn it into a workspace whose producer alone loops over `indices`."""

    indices: tuple[str, ...]
    body: "Expr"

    def children(self) -> tuple:
        return (self.body,)

    def with_children(self, children: tuple) -> "Sum":
        return self if children == (self.body,) else Sum(self.indices, *children)

    def __str__(self) -> str:
        return f"∑{','.join(self.indices)} ({self.body})"


Expr = Union[Access, Call, Sum, Literal]
Stmt = Union[Assign, Forall, Where]  # loops over index names, assignments of sketch expressions


def reads(node) -> Iterator[Access]:
    """The accesses read under `node`, left to right (a where's consumer before its producer). Not a
    filter of `walk`: the search calls it millions of times, and yielding only accesses is faster."""
    if isinstance(node, Access):
        yield node
    for child in node.children():
        yield from reads(child)


def depth(stmt: Stmt) -> int:
    """The deepest nest of loops (Ahrens et al. §7.4)."""
    if isinstance(stmt, Assign):
        return 0
    return isinstance(stmt, Forall) + max(map(depth, stmt.children()))


def map_accesses(node, change):
    """`node` with every access (read or written) replaced by `change(access)`."""
    def changed(n):
        if isinstance(n, Access):
            return change(n)
        return replace(n, lhs=change(n.lhs)) if isinstance(n, Assign) else n
    return postwalk(node, changed)


def from_expression(expr, leaf, node=Call, semiring: Semiring = PLUS_TIMES):
    """An index-notation expression as a sketch expression: leaves through `leaf`, operators through
    `node(op, args)` (`+` for the semiring's ⊕, `*` for its ⊗, whether written `+`/`*` or as functions;
    `-` of one argument; `a - b` is `a + -b`; a unary function by its name), directly nested reductions
    as one `Sum` over their indices (the semiring's ⊕ says which reduction; `algebra.checked` refuses
    any other)."""
    def again(child):
        return from_expression(child, leaf, node, semiring)

    if isinstance(expr, (notation.Sum, notation.Reduce)):
        body = again(expr.body)
        if isinstance(body, Sum):
            return Sum((expr.index.name, *body.indices), body.body)
        return Sum((expr.index.name,), body)
    if isinstance(expr, notation.Literal):
        return expr
    if isinstance(expr, notation.Neg):
        return Call("-", (again(expr.operand),))
    if isinstance(expr, notation.Sub):
        return node("+", (again(expr.left), Call("-", (again(expr.right),))))
    op = notation.operator_of(expr)
    if op is None or op.arity == 2 and op.name not in (semiring.add, semiring.multiply):
        return leaf(expr)
    if op.arity == 1:
        return Call(op.name, (again(expr.children()[0]),))
    return node("+" if op.name == semiring.add else "*", tuple(map(again, expr.children())))


def from_cin(stmt, semiring: Semiring | None = None) -> Stmt:
    """A sketch of a CIN statement (formats and loop marks dropped, protocols kept), to cost hand-written
    schedules; its semiring, where not given, that of its accumulations (`min=`) and other operator."""
    if semiring is None:
        semiring = _cin_semiring(stmt)

    def access(a) -> Access:
        return Access(a.tensor.name, tuple(i.name for i in a.indices), a.protocols)

    if isinstance(stmt, Forall):
        return Forall(stmt.index.name, from_cin(stmt.body, semiring))
    if isinstance(stmt, Where):
        return Where(from_cin(stmt.consumer, semiring), from_cin(stmt.producer, semiring))
    if isinstance(stmt, Assign):
        return Assign(access(stmt.lhs), from_expression(stmt.rhs, access, semiring=semiring), stmt.accumulate)
    raise TypeError(f"Expected a forall, where or assignment, but found {stmt}")


def _cin_semiring(stmt) -> Semiring:
    """⊕: the operator CIN's accumulations reduce with, other than add where there is one; ⊗: the other
    binary operator it applies (multiply where none)."""
    assigns = assignments(stmt)
    plus = next((a.reduce for a in assigns if a.accumulate and a.reduce != "add"), "add")
    binary = {op.name for a in assigns for op in map(notation.operator_of, notation.walk(a.rhs))
              if op is not None and op.arity == 2} - {plus, "subtract", "divide"}
    return Semiring(plus, min(binary, default="multiply"))
