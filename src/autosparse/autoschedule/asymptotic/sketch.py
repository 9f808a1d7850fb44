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

from ...cin.ast import Assign, Forall, Protocol, Where
from ...cin.rewrite import adds, postwalk
from ...notation import ast as notation
from ...notation.ast import Literal


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
    """An n-ary `*` or `+`, or a one-argument `-` (negation)."""

    op: str
    args: tuple

    def children(self) -> tuple:
        return self.args

    def with_children(self, children: tuple) -> "Call":
        return self if children == self.args else Call(self.op, children)

    def __str__(self) -> str:
        if self.op == "-":
            return f"-{_wrapped(self.args[0])}"
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


def from_expression(expr, leaf, node=Call):
    """An index-notation expression as a sketch expression: leaves through `leaf`, operators through
    `node(op, args)` (binary `*`/`+`, `-` of one argument; `a - b` is `a + -b`), directly nested sums
    as one `Sum` over their indices."""
    if isinstance(expr, notation.Sum):
        body = from_expression(expr.body, leaf, node)
        if isinstance(body, Sum):
            return Sum((expr.index.name, *body.indices), body.body)
        return Sum((expr.index.name,), body)
    if isinstance(expr, notation.Literal):
        return expr
    if isinstance(expr, notation.Neg):
        return Call("-", (from_expression(expr.operand, leaf, node),))
    if isinstance(expr, notation.Sub):
        return node("+", (from_expression(expr.left, leaf, node),
                          Call("-", (from_expression(expr.right, leaf, node),))))
    if isinstance(expr, (notation.Add, notation.Mul)):
        return node("*" if isinstance(expr, notation.Mul) else "+",
                    (from_expression(expr.left, leaf, node), from_expression(expr.right, leaf, node)))
    return leaf(expr)


def from_cin(stmt) -> Stmt:
    """A sketch of a CIN statement (formats and loop marks dropped, protocols kept), to cost hand-written
    schedules."""
    def access(a) -> Access:
        return Access(a.tensor.name, tuple(i.name for i in a.indices), a.protocols)

    if isinstance(stmt, Forall):
        return Forall(stmt.index.name, from_cin(stmt.body))
    if isinstance(stmt, Where):
        return Where(from_cin(stmt.consumer), from_cin(stmt.producer))
    if isinstance(stmt, Assign):
        return Assign(access(stmt.lhs), from_expression(stmt.rhs, access), stmt.accumulate)
    raise TypeError(f"Expected a forall, where or assignment, but found {stmt}")
