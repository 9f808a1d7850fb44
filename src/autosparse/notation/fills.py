"""What an absent entry means: the fill of an expression, and the role an absent child plays in its parent.

A sparse tensor stores some entries; every other entry is its fill (0 by default, +inf for a min-plus
distance, False for a boolean mask). `fill_of` folds the operands' fills through the registry
(`operators.py`), so `exp(A)` over fill 0 has fill 1 and `pattern(M)` has fill False. `role` is the one
question lattices, zero elimination and the result's format ask of a child that is absent:

- ANNIHILATES: the parent is then its own fill, whatever the other children are (`A * B` with A's 0,
  `min(A, B)` with A's -inf, `maximum(A, 0)` where the other child is a constant, any unary function):
  the parent's entries are bounded by this child's (an intersection).
- DROPS: the child is the operator's identity at that side, so the parent is the other child (`A + B`
  with 0, `minimum(A, B)` with +inf, a reduction over its identity): a union.
- NEITHER: the absent child's fill must be computed with (`maximum(A, B)` with 0, `A - B` with B's 0 on
  the left): the parent's entries are not bounded by this child's.
"""

from __future__ import annotations

from enum import Enum
from typing import Mapping

from ..errors import ScheduleError
from .ast import Access, Apply, Assignment, Expr, Literal, Sum, accesses, operator_of, reduction_of
from .operators import Operator, Value, fold


class Role(Enum):
    ANNIHILATES = "annihilates"
    DROPS = "drops"
    NEITHER = "neither"


def fill_of(expr: Expr, fills: Mapping[str, Value]) -> Value:
    """The value of `expr` where every operand is absent: each tensor's fill (`fills`, by name, 0 when not
    given), folded through the registry. A reduction keeps its body's fill when the operator is
    idempotent, the fill is its identity, or the fill is its annihilator (a product over fill 0 is 0
    wherever its slice has an absent entry, which lowering visits: the assignment writes 0, not the
    identity, there, so the loop runs over the whole dimension; a full slice is its product, and an empty
    dimension leaves the identity the result starts at); any other reduction is refused (a ScheduleError):
    a sum over a fill of 1 would be its extent, not a fill."""
    if isinstance(expr, Access):
        return fills.get(expr.tensor, 0)
    if isinstance(expr, Literal):
        return expr.value
    reduction = reduction_of(expr)
    if reduction is not None:
        body = fill_of(expr.children()[0], fills)
        if not (reduction.idempotent or reduction.is_identity(body) or reduction.is_annihilator(body)):
            raise ScheduleError(f"Expected the body of {expr} to have a fill that {reduction.name} drops (its "
                                f"identity), repeats (an idempotent reduction) or is decided by (its "
                                f"annihilator), but its fill is {body!r}: "
                                f"the reduction would depend on the extent of {expr.index}")
        return body
    op = operator_of(expr)
    values = tuple(fill_of(child, fills) for child in expr.children())
    annihilator = _annihilator(op, values)
    return fold(op, *values) if annihilator is None else annihilator


def _annihilator(op: Operator, values: tuple) -> Value | None:
    """The annihilator among `values` (the operands' fills, at their sides), which is then the result: the
    laws come before numpy's fold, as in a kernel, where 0 / b is 0 without reading b (its caveat)."""
    return next((value for side, value in enumerate(values) if op.is_annihilator(value, side)), None)


def result_fill(assignment: Assignment, fills: Mapping[str, Value]) -> Value:
    """The fill of the assignment's result: its right-hand side's, through the implicit sums over it."""
    rhs = assignment.rhs
    for index in assignment.reduction_indices:
        rhs = Sum(index, rhs)
    return fill_of(rhs, fills)


def role(node: Expr, child: int, fills: Mapping[str, Value]) -> Role:
    """What `node` becomes where its child number `child` is absent (takes its fill); see the module's
    docstring. A child with no access is never absent: NEITHER."""
    children = node.children()
    if not accesses(children[child]):
        return Role.NEITHER
    fill = fill_of(children[child], fills)
    reduction = reduction_of(node)
    if reduction is not None:
        return Role.DROPS if reduction.is_identity(fill) else Role.NEITHER
    others = [other for n, other in enumerate(children) if n != child]
    if isinstance(node, Apply) and node.op == "where":
        return _where_role(node, child, fill)
    op = operator_of(node)
    if not op.reads_values or not any(accesses(other) for other in others):
        return Role.ANNIHILATES  # nothing else varies: the parent is a constant, its fill
    if op.is_annihilator(fill, child):
        return Role.ANNIHILATES
    return Role.DROPS if op.is_identity(fill, child) else Role.NEITHER


def _where_role(node: Apply, child: int, fill: Value) -> Role:
    """`where(c, a, b)`: an absent condition picks one branch for good; it annihilates when that branch
    is a constant (a mask `where(M(i,j), e, 0)`). An absent branch leaves the condition choosing."""
    if child != 0:
        return Role.NEITHER
    chosen = node.args[1] if bool(fill) else node.args[2]
    return Role.NEITHER if accesses(chosen) else Role.ANNIHILATES
