"""The algebra an autoscheduled program computes in, read from the operator registry.

Both autoschedulers reason about an expression of `+`, `*` and sums (Ahrens et al., Dias et al.): a
product is absent where a factor is, a sum drops an absent term, a product distributes over a sum, and a
temporary starts at zero. Those are the laws of a semiring (⊕, ⊗) whose zero is the fill of the sparse
operands: ⊕'s identity and ⊗'s annihilator. So the search runs on the expression's skeleton — `+` for
⊕, `*` for ⊗, sums for ⊕-reductions — and `realise` spells the chosen program back in the expression's
operators (`min=` and `Reduce` for min-plus). What the laws do not give is not done:

- stages 1 and 2 distribute ⊗ over ⊕ (and move a reduction past a factor) only where the registry
  declares `distributes_over` (`add` over `minimum` yes, `multiply` over `maximum` no);
- a sparse operand whose fill is not the zero (max-times over fill 0, whose ⊕ has identity -inf; any
  operand of a semiring without a zero) is costed as a dense input: its absent entries count, and the
  lowering iterates them (its lattices read the fills);
- a unary function keeps its operand's pattern when its value at the zero is the zero (`abs`, `sqrt`,
  `negative` over 0, `pattern` over 0/False); any other function (`exp` over 0, comparisons, `where`, a
  binary function that is neither ⊕ nor ⊗) is refused with a ScheduleError naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

import numpy as np

from ..cin.ast import Access as CinAccess
from ..cin.ast import Assign, identity
from ..cin.rewrite import postwalk
from ..errors import ScheduleError
from ..format import Format
from ..notation import Add, Apply, Assignment, Mul, Neg, Reduce, Sub, Sum, accesses, operator_of, reduction_of, walk
from ..notation.operators import REGISTRY, Value, fold

_ANY = object()  # a semiring with no zero: no fill is one


@dataclass(frozen=True, slots=True)
class Semiring:
    """⊕ (`add`: the sketch's `+`, sums and accumulations) and ⊗ (`multiply`: the sketch's `*`), by name
    in the registry."""

    add: str = "add"
    multiply: str = "multiply"

    @property
    def plus_times(self) -> bool:
        return self == PLUS_TIMES

    @property
    def distributes(self) -> bool:
        """Whether ⊗ distributes over ⊕, so that stages 1 and 2 may multiply out and move reductions."""
        return self.add in REGISTRY[self.multiply].distributes_over

    @property
    def zero(self) -> Value:
        """⊕'s identity where it annihilates ⊗ (0 for + ·, +inf for min-plus, False for or-and), else a
        value no fill equals."""
        plus, times = REGISTRY[self.add], REGISTRY[self.multiply]
        value = plus.identity.value(np.dtype(np.float64)) if plus.identity is not None else None
        return value if value is not None and times.is_annihilator(value) else _ANY

    def has_zero(self, fill: Value) -> bool:
        zero = self.zero
        return zero is not _ANY and bool(fill == zero)


PLUS_TIMES = Semiring()


def semiring_of(assignment: Assignment) -> Semiring:
    """The (⊕, ⊗) of `assignment`: ⊕ its reduction's operator (sum where only sums, implicit or written),
    ⊗ its other binary operator; a ScheduleError naming what is neither. + and * alone (with -, / and
    sums) are `PLUS_TIMES`, as before the registry."""
    if not any(isinstance(node, (Apply, Reduce)) for node in walk(assignment.rhs)):
        return PLUS_TIMES
    reductions = {reduction_of(node).name for node in walk(assignment.rhs) if reduction_of(node) is not None}
    if assignment.reduction_indices or assignment.accumulate:
        reductions.add("add")
    binary = {op.name for op in map(operator_of, walk(assignment.rhs)) if op is not None and op.arity == 2}
    if len(reductions) > 1:
        raise _refused(assignment, f"reductions of {sorted(reductions)}: one ⊕ per program")
    plus = next(iter(reductions), None)
    if plus is None:  # element-wise: ⊕ is the one binary operator with an identity that is not a product
        plus = next((name for name in sorted(binary) if name not in ("multiply", "subtract", "divide")), "add")
    times = binary - {plus, "subtract"} if plus == "add" else binary - {plus}
    if len(times) > 1:
        raise _refused(assignment, f"the binary operators {sorted(times)} beside {plus}: one ⊗ per program")
    for name in (plus, *times):
        op = REGISTRY[name]
        if not (op.commutative and op.associative):
            raise _refused(assignment, f"{name}, which is not commutative and associative")
    return Semiring(plus, next(iter(times), "multiply" if plus == "add" else _times_for(assignment, plus)))


def _times_for(assignment: Assignment, plus: str) -> str:
    """A ⊗ for an element-wise ⊕ with none: one that distributes over it, so that the sketch means the
    same (no `*` is ever built)."""
    times = next((op.name for op in REGISTRY.values() if plus in op.distributes_over), None)
    if times is None:
        raise _refused(assignment, f"{plus}, over which no operator distributes")
    return times


def checked(assignment: Assignment) -> Semiring:
    """`assignment`'s semiring, once every node is one the search reads: ⊕, ⊗, their reductions, and
    unary functions that keep the zero; negation and subtraction only under + and *."""
    semiring = semiring_of(assignment)
    for node in walk(assignment.rhs):
        if isinstance(node, (Neg, Sub)) and not semiring.plus_times:
            raise _refused(assignment, f"{node}: negation and subtraction only with + and *")
        if isinstance(node, Apply) and REGISTRY[node.op].arity != 2:
            _check_unary(assignment, semiring, node)
    return semiring


def _check_unary(assignment: Assignment, semiring: Semiring, node: Apply) -> None:
    op = REGISTRY[node.op]
    zero = semiring.zero
    if op.arity != 1:
        raise _refused(assignment, f"the function {node.op} in {node}: it keeps no sparsity (it has {op.arity} "
                                   f"arguments, neither ⊕ nor ⊗)")
    if zero is _ANY or not bool(fold(op, zero) == zero):
        raise _refused(assignment, f"the function {node.op} in {node}: it keeps no sparsity (its value at the "
                                   f"semiring's zero is not the zero)")


def untracked(assignment: Assignment, semiring: Semiring, formats: Mapping[str, Format],
              fills: Mapping[str, Value]) -> frozenset[str]:
    """The sparse operands whose fill is not the semiring's zero: the search costs them as dense inputs."""
    return frozenset(a.tensor for a in accesses(assignment.rhs)
                     if not formats[a.tensor].is_dense and not semiring.has_zero(fills.get(a.tensor, 0)))


def as_products(expr, semiring: Semiring):
    """`expr` with ⊗ written `*` and ⊕-reductions written as sums, for a search that reads products and
    sums only (SparseAuto); `in_semiring` spells its programs back."""
    def spelled(node):
        op, reduction = operator_of(node), reduction_of(node)
        if reduction is not None and reduction.name == semiring.add:
            return Sum(node.index, node.body)
        if op is not None and op.arity == 2 and op.name == semiring.multiply:
            return Mul(*node.children())
        return node
    return postwalk(expr, spelled)


def in_semiring(stmt, semiring: Semiring):
    """A CIN statement of products and sums (`+=`) spelled in `semiring`: `*` as ⊗, accumulations by ⊕,
    temporaries starting at ⊕'s identity."""
    if semiring.plus_times:
        return stmt
    start = identity(semiring.add)

    def tensor(access):
        var = access.tensor
        return replace(access, tensor=replace(var, fill=start)) if var.temporary else access

    def spelled(node):
        if isinstance(node, Mul):
            return applied(semiring.multiply, node.left, node.right)
        if isinstance(node, CinAccess):
            return tensor(node)
        if isinstance(node, Assign):
            return replace(node, lhs=tensor(node.lhs), reduce=semiring.add if node.accumulate else node.reduce)
        return node
    return postwalk(stmt, spelled)


def applied(name: str, left, right):
    """The node of the binary operator `name`: `Add`/`Mul` for add and multiply (CIN's symbols, so that
    + · programs print as before), the registry's function otherwise (`minimum(a, b)`)."""
    symbol = _SYMBOLS.get(name)
    return symbol(left, right) if symbol is not None else Apply(name, (left, right))


_SYMBOLS = {"add": Add, "multiply": Mul}


def _refused(assignment: Assignment, what: str) -> ScheduleError:
    return ScheduleError(f"Expected an expression the autoschedulers read as a semiring (⊕ and ⊗ from the "
                         f"operator registry, unary functions that keep the zero), but {assignment} has {what}; "
                         f"use schedule=None (the default schedule) or write one")
