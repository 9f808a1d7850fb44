"""Program sketches: protocolized concrete index notation before storage formats are chosen.

The enumeration pipeline of Ahrens et al. §7 decides loop structure, workspaces and protocols first and
formats last, so its programs name tensors and protocols only:

    ∀j where(∀i a(i) += B(i@locate,j) * w, ∀k w += C(j@locate,k) * d(k@locate))

A sketch is small and hashable (millions are built for SpMTTKRP); `realise` turns a chosen one into CIN.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator, Union

STEP, LOCATE, APPEND, INSERT = "step", "locate", "append", "insert"


@dataclass(frozen=True, slots=True)
class Access:
    """`tensor` at `indices` (mode order); `protocols` one per mode once chosen, else empty."""

    tensor: str
    indices: tuple[str, ...]
    protocols: tuple[str, ...] = ()

    def protocol_of(self, index: str) -> str | None:
        return self.protocols[self.indices.index(index)] if self.protocols and index in self.indices else None

    def __str__(self) -> str:
        marks = [f"{i}@{p}" if p in (LOCATE, INSERT) else i for i, p in zip(self.indices, self.protocols)] \
            if self.protocols else list(self.indices)
        return f"{self.tensor}({','.join(marks)})" if self.indices else self.tensor


@dataclass(frozen=True, slots=True)
class Call:
    """An n-ary `*` or `+`, or a one-argument `-` (negation); literals are `Call("literal", (value,))`."""

    op: str
    args: tuple

    def __str__(self) -> str:
        if self.op == "literal":
            return repr(self.args[0])
        if self.op == "-":
            return f"-{_wrapped(self.args[0])}"
        return f" {self.op} ".join(_wrapped(a) if self.op == "*" else str(a) for a in self.args)


def _wrapped(expr) -> str:
    return f"({expr})" if isinstance(expr, Call) and expr.op == "+" else str(expr)


@dataclass(frozen=True, slots=True)
class Sum:
    """A scoped reduction (`sum(j, …)` in index notation): `body` summed over `indices`. It lives only in
    stages 1 and 2, which turn it into a workspace whose producer alone loops over `indices`."""

    indices: tuple[str, ...]
    body: "Expr"

    def __str__(self) -> str:
        return f"∑{','.join(self.indices)} ({self.body})"


Expr = Union[Access, Call, Sum]


@dataclass(frozen=True, slots=True)
class Assign:
    lhs: Access
    rhs: Expr
    reduce: bool  # +=, else =

    def __str__(self) -> str:
        return f"{self.lhs} {'+=' if self.reduce else '='} {self.rhs}"


@dataclass(frozen=True, slots=True)
class Loop:
    index: str
    body: "Stmt"

    def __str__(self) -> str:
        return f"∀{self.index} {self.body}"


@dataclass(frozen=True, slots=True)
class Where:
    consumer: "Stmt"
    producer: "Stmt"

    def __str__(self) -> str:
        return f"where({self.consumer}, {self.producer})"


Stmt = Union[Assign, Loop, Where]


def reads(node) -> Iterator[Access]:
    """The accesses read under `node`, left to right (a where's consumer before its producer)."""
    if isinstance(node, Access):
        yield node
    elif isinstance(node, Call):
        if node.op != "literal":
            for arg in node.args:
                yield from reads(arg)
    elif isinstance(node, Assign):
        yield from reads(node.rhs)
    elif isinstance(node, Loop):
        yield from reads(node.body)
    else:
        yield from reads(node.consumer)
        yield from reads(node.producer)


def assigns(stmt: Stmt) -> Iterator[Assign]:
    if isinstance(stmt, Assign):
        yield stmt
    elif isinstance(stmt, Loop):
        yield from assigns(stmt.body)
    else:
        yield from assigns(stmt.consumer)
        yield from assigns(stmt.producer)


def depth(stmt: Stmt) -> int:
    """The deepest nest of loops (Ahrens et al. §7.4)."""
    if isinstance(stmt, Assign):
        return 0
    if isinstance(stmt, Loop):
        return 1 + depth(stmt.body)
    return max(depth(stmt.consumer), depth(stmt.producer))


def map_accesses(node, change):
    """`node` with every access (read or written) replaced by `change(access)`."""
    if isinstance(node, Access):
        return change(node)
    if isinstance(node, Call):
        return node if node.op == "literal" else Call(node.op, tuple(map_accesses(a, change) for a in node.args))
    if isinstance(node, Assign):
        return Assign(change(node.lhs), map_accesses(node.rhs, change), node.reduce)
    if isinstance(node, Loop):
        return replace(node, body=map_accesses(node.body, change))
    return Where(map_accesses(node.consumer, change), map_accesses(node.producer, change))


def from_expression(expr, leaf, node=Call):
    """An index-notation expression as a sketch expression: leaves through `leaf`, operators through
    `node(op, args)` (binary `*`/`+`, `-` of one argument; `a - b` is `a + -b`), directly nested sums
    as one `Sum` over their indices."""
    from ...notation import ast as notation

    if isinstance(expr, notation.Sum):
        body = from_expression(expr.body, leaf, node)
        if isinstance(body, Sum):
            return Sum((expr.index.name, *body.indices), body.body)
        return Sum((expr.index.name,), body)
    if isinstance(expr, notation.Literal):
        return Call("literal", (expr.value,))
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
    """A sketch of a CIN statement (formats dropped, protocols kept), to cost hand-written schedules."""
    from ...cin import ast as cin

    def access(a: "cin.Access") -> Access:
        return Access(a.tensor.name, tuple(i.name for i in a.indices), tuple(p.value for p in a.protocols))

    if isinstance(stmt, cin.Forall):
        return Loop(stmt.index.name, from_cin(stmt.body))
    if isinstance(stmt, cin.Where):
        return Where(from_cin(stmt.consumer), from_cin(stmt.producer))
    if isinstance(stmt, cin.Assign):
        return Assign(access(stmt.lhs), from_expression(stmt.rhs, access), stmt.accumulate)
    raise TypeError(f"Expected a forall, where or assignment, but found {stmt}")
