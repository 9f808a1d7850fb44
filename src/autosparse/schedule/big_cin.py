"""Branched iteration graphs to and from concrete index notation, so that `loopfuse` and a `reorder`
with a path can run as scheduling commands on a kernel's CIN.

A CIN statement is a BIG when it is built of loops, `where`s and statements whose right-hand side is a
product of accesses. Going back, operands keep their tensors and protocols (a sparse operand is stepped
through in storage order), and a dense operand or temporary is located at every index: a SparseAuto
temporary is a dense array (a scalar when it has no indices) read in whatever order the consumer's loops
bind it.
"""

from __future__ import annotations

from typing import Mapping

from ..cin import ast as cin
from ..errors import ScheduleError
from ..format import Format
from ..notation import ast as notation
from ..notation.ast import IndexVar
from .big import Compute, Factor, Loop, Node, Where, computes


def to_big(stmt: cin.Stmt, command: str) -> tuple[Node, dict[str, cin.Access]]:
    """The BIG of `stmt`, and each operand's access as the CIN reads or writes it."""
    found: dict[str, cin.Access] = {}

    def convert(node) -> Node:
        if isinstance(node, cin.Forall):
            if node.parallel is not None or node.unroll:
                raise ScheduleError(f"{command}: expected loops without parallel or unroll marks (place those "
                                    f"after it), but ∀{node.index} has one")
            return Loop(node.index.name, convert(node.body))
        if isinstance(node, cin.Where):
            producer = convert(node.producer)
            written = _written(node.producer)
            return Where(Factor(written.tensor.name, _names(written)), convert(node.consumer), producer)
        if isinstance(node, cin.Assign):
            found.setdefault(node.lhs.tensor.name, node.lhs)
            return Compute(Factor(node.lhs.tensor.name, _names(node.lhs)), tuple(_factors(node.rhs, found, command)))
        raise ScheduleError(f"{command}: expected loops, wheres and products of tensors, but found {node}")

    return convert(stmt), found


def _names(access: cin.Access) -> tuple[str, ...]:
    return tuple(i.name for i in access.indices)


def _written(stmt) -> cin.Access:
    while isinstance(stmt, cin.Forall):
        stmt = stmt.body
    if isinstance(stmt, cin.Where):
        return _written(stmt.consumer)
    return stmt.lhs


def _factors(expr, found, command):
    if isinstance(expr, notation.Mul):
        return [*_factors(expr.left, found, command), *_factors(expr.right, found, command)]
    if isinstance(expr, cin.Access):
        found.setdefault(expr.tensor.name, expr)
        return [Factor(expr.tensor.name, _names(expr))]
    raise ScheduleError(f"{command}: expected a product of tensors, but found {expr}")


def to_cin(node: Node, accesses: Mapping[str, cin.Access]) -> cin.Stmt:
    """`node` as CIN, operands as `accesses` gave them, temporaries dense and located."""
    if isinstance(node, Loop):
        return cin.Forall(IndexVar(node.index), to_cin(node.body, accesses))
    if isinstance(node, Where):
        return cin.Where(to_cin(node.consumer, accesses), to_cin(node.producer, accesses))
    lhs = _access(node.lhs, accesses)
    rhs = _access(node.factors[0], accesses)
    for factor in node.factors[1:]:
        rhs = notation.Mul(rhs, _access(factor, accesses))
    return cin.Assign(lhs, rhs, accumulate=True)


def _access(factor: Factor, accesses: Mapping[str, cin.Access]) -> cin.Access:
    indices = tuple(IndexVar(i) for i in factor.indices)
    known = accesses.get(factor.tensor)
    if known is None:
        tensor = cin.TensorVar(factor.tensor, Format("d" * len(indices)), temporary=True)
        return cin.Access(tensor, indices, (cin.Protocol.LOCATE,) * len(indices))
    if known.tensor.format.is_dense:
        return cin.Access(known.tensor, indices, (cin.Protocol.LOCATE,) * len(indices))
    return cin.Access(known.tensor, indices, known.protocols)


def operand_accesses(node: Node, formats: Mapping[str, Format]) -> dict[str, cin.Access]:
    """What `to_big` finds in a kernel's default CIN, for a BIG built without one: each tensor of
    `formats` accessed as `node` first does, with its format's default protocols (written for the
    result, which no factor reads)."""
    read = {f.tensor for c in computes(node) for f in c.factors}
    found: dict[str, cin.Access] = {}
    for compute in computes(node):
        for factor in (compute.lhs, *compute.factors):
            if factor.tensor in formats and factor.tensor not in found:
                tensor = cin.TensorVar(factor.tensor, formats[factor.tensor])
                indices = tuple(IndexVar(i) for i in factor.indices)
                found[factor.tensor] = cin.default_access(tensor, indices, write=factor.tensor not in read)
    return found


def formats_of(accesses: Mapping[str, cin.Access]) -> dict[str, Format]:
    return {name: access.tensor.format for name, access in accesses.items()}
