"""Index notation + formats -> concrete index notation under the default schedule, then legalised.

The default schedule (ARCHITECTURE.md): every loop in a stable topological order of the storage-order
constraints of all accesses — ties broken by the output's index order, then by first appearance — and
no `where`. The output's constraints give way when they would make the order cyclic (a CSR to CSC copy):
legalisation then routes the writes through a temporary. Legalisation first drops the preferences of
dense operands, which are read at random in any order: when the order of the other constraints writes
the sparse output in order, it is used (SDDMM `A(i,j) = B(i,j) * C(i,k) * D(k,j)` runs i, j, k, one dot
product per stored entry, instead of i, k, j through a workspace). Otherwise it inserts a workspace
exactly where an out-of-order write into a sparse output would remain (Gustavson SpGEMM into CSR).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ..errors import ScheduleError
from ..format import Format
from ..notation import ast as notation
from ..notation.ast import IndexVar
from .ast import Access, Assign, Protocol, Stmt, TensorVar, Where, default_access, nest, tensors, unnest_loops
from .provenance import Provenance, attach, split_relations
from .rewrite import rebuild_expr

#: Dense workspaces larger than this many entries become hashed: a hypersparse output must not be densified.
DENSE_WORKSPACE_LIMIT = 1 << 24


def concretize(assignment: notation.Assignment, formats: Mapping[str, Format],
               extents: Mapping[IndexVar, int] | None = None) -> Stmt:
    """The default schedule of `assignment`, with each tensor stored in `formats[name]`, legalised.

    `extents` (when known) decide whether a workspace that legalisation needs can be a dense array.
    """
    return legalise(default_loops(assignment, formats), extents or {})


def default_loops(assignment: notation.Assignment, formats: Mapping[str, Format]) -> Stmt:
    """The default schedule before legalisation: what scheduling commands rewrite."""
    variables = {name: TensorVar(name, fmt) for name, fmt in formats.items()}
    lhs = _access(assignment.lhs, variables, write=True)
    rhs = rebuild_expr(assignment.rhs, lambda access: _access(access, variables, write=False))
    order = loop_order(assignment, formats)
    if _first_disorder(order, lhs) is not None:
        relaxed = _topological(_constraints(assignment, formats, dense_operands=False), output=True)
        if relaxed is not None and _first_disorder(relaxed, lhs) is None:
            order = relaxed
    accumulate = assignment.accumulate or bool(assignment.reduction_indices)
    return nest(order, Assign(lhs, rhs, accumulate))


def _access(access: notation.Access, variables: Mapping[str, TensorVar], write: bool) -> Access:
    return default_access(variables[access.tensor], access.indices, write)


def _edges(access: notation.Access, fmt: Format) -> set[tuple[IndexVar, IndexVar]]:
    ordered = [access.indices[mode] for mode in fmt.mode_order]
    return set(zip(ordered, ordered[1:]))


def loop_order(assignment: notation.Assignment, formats: Mapping[str, Format]) -> tuple[IndexVar, ...]:
    """A stable topological order of the storage-order constraints (see the module docstring)."""
    constraints = _constraints(assignment, formats, dense_operands=True)
    order = _topological(constraints, output=True) or _topological(constraints, output=False)
    if order is None:
        raise ScheduleError(f"Expected the operands' storage orders to admit one loop order for {assignment}, "
                            f"but they are cyclic: convert an operand to a format concordant with the others")
    return order


@dataclass(frozen=True)
class _Constraints:
    indices: list[IndexVar]  # in order of priority: the output's, then first appearance
    inputs: set[tuple[IndexVar, IndexVar]]
    output: set[tuple[IndexVar, IndexVar]]


def _constraints(assignment: notation.Assignment, formats: Mapping[str, Format],
                 dense_operands: bool) -> _Constraints:
    """The storage-order constraints of the operands (of the dense ones too when `dense_operands`: they
    are read at random, so their order is a preference, not a need) and of the output."""
    appearance = list(dict.fromkeys((*assignment.lhs.indices, *assignment.reduction_indices)))
    inputs = set().union(*(_edges(a, formats[a.tensor]) for a in notation.accesses(assignment.rhs)
                           if dense_operands or not formats[a.tensor].is_dense))
    return _Constraints(appearance, inputs, _edges(assignment.lhs, formats[assignment.lhs.tensor]))


def _topological(constraints: _Constraints, output: bool) -> tuple[IndexVar, ...] | None:
    """The stable topological order of the inputs' constraints (and the output's when `output`), ties
    going to the index first in `constraints.indices`; None when they are cyclic."""
    edges = constraints.inputs | constraints.output if output else constraints.inputs
    placed: list[IndexVar] = []
    waiting = list(constraints.indices)
    while waiting:
        ready = [i for i in waiting if not any(after == i and before in waiting for before, after in edges)]
        if not ready:
            return None
        placed.append(ready[0])
        waiting.remove(ready[0])
    return tuple(placed)


def legalise(stmt: Stmt, extents: Mapping[IndexVar, int]) -> Stmt:
    """Route the writes of a forall nest through a workspace from the first loop at which appending to the
    sparse output would go out of order; return `stmt` itself when no loop does. A loop over a derived
    variable counts as the loop over the indices it came from, once the last of their loops is entered."""
    body, relations = split_relations(stmt)
    provenance = Provenance(relations)
    headers, assign = unnest_loops(body)
    if not isinstance(assign, Assign):
        return stmt
    recovered, first_loop = _recovery_order(headers, provenance)
    at = _first_disorder(recovered, assign.lhs)
    if at is None:
        return stmt
    outer = recovered[:at]
    inner = tuple(i for i in assign.lhs.level_indices if i not in outer)
    workspace = _workspace(assign.lhs, inner, extents, taken=set(tensors(body)))
    write, read = default_access(workspace, inner, write=True), default_access(workspace, inner, write=False)
    consumer = nest(inner, Assign(assign.lhs, read, accumulate=False))
    split_at = first_loop[recovered[at]]
    producer = nest(headers[split_at:], Assign(write, assign.rhs, assign.accumulate))
    return attach(nest(headers[:split_at], Where(consumer, producer)), relations)


def _recovery_order(headers, provenance: Provenance) -> tuple[tuple[IndexVar, ...], dict[IndexVar, int]]:
    """The original indices in the order the loops complete them, and the first loop of each."""
    completed: list[IndexVar] = []
    first: dict[IndexVar, int] = {}
    seen: set[IndexVar] = set()
    for depth, loop in enumerate(headers):
        seen.add(loop.index)
        for root in provenance.roots(loop.index):
            first.setdefault(root, depth)
            if root not in completed and set(provenance.leaves(root)) <= seen:
                completed.append(root)
    return tuple(completed), first


def _first_disorder(loops: tuple[IndexVar, ...], lhs: Access) -> int | None:
    """The position of the first loop that breaks in-order appends to `lhs`: a loop other than the
    output's shallower indices enclosing an appended level, or the output's levels down to an appended
    one bound out of their storage order."""
    first = None
    levels = lhs.level_indices
    for depth, (index, protocol) in enumerate(zip(levels, lhs.level_protocols)):
        if protocol is not Protocol.APPEND:
            continue
        at = loops.index(index)
        allowed = set(levels[:depth])
        breaking = [p for p, loop in enumerate(loops[:at]) if loop not in allowed]
        placed = [loops.index(i) for i in levels[:depth + 1]]
        if placed != sorted(placed):
            breaking.append(min(placed))
        if breaking:
            first = min(breaking) if first is None else min(first, *breaking)
    return first


def _workspace(lhs: Access, indices: tuple[IndexVar, ...], extents: Mapping[IndexVar, int],
               taken: set[str]) -> TensorVar:
    """A dense workspace for one index (a dense array with a list of touched coordinates) when it is
    small enough, else a hashed one; its levels follow `indices`, the output's storage order."""
    size = 1
    for index in indices:
        size *= extents.get(index, 1)
    letter = "d" if len(indices) == 1 and size <= DENSE_WORKSPACE_LIMIT else "h"
    name = next(n for n in (f"w{k or ''}" for k in range(len(taken) + 1)) if n not in taken)
    return TensorVar(name, Format(letter * len(indices)), temporary=True)
