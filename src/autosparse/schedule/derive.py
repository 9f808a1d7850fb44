"""Commands that derive new index variables (Senanayake et al. §4): each replaces a loop (or two) by loops
over variables related to the old ones, and records the relation, from which lowering recovers the
original coordinates.

    split(i, i0, i1, s)        tiles of s:        ∀i → ∀i0 ∀i1   (i = i0·s + i1; the last tile is shorter)
    divide(i, i0, i1, n)       n tiles:           ∀i → ∀i0 ∀i1   (i = i0·⌈N/n⌉ + i1)
    collapse(i, j, f)          ∀i ∀j → ∀f over i × j in order
    pos(i, ip, A(i,j))         ∀i → ∀ip over A's positions for i (of i's collapsed levels, for a collapsed i)
    coord(ip, i)               undoes pos
    bound(i, ib, n, kind)      ∀i → ∀ib with the constant extent n (kind max_exact: N = n; max_constraint: N ≤ n)

Commands work on a statement and the relations made so far, and return both. Each checks what it can
see in the statement; what depends on formats and the loops inside (a pos of a merged loop, a split of a
loop that co-iterates a sparse level) lowering reports, also as a `ScheduleError` naming the command.
"""

from __future__ import annotations

from dataclasses import replace

from ..cin.ast import Access, Forall, Stmt, all_accesses, loop_indices
from ..cin.provenance import Bound, BoundKind, Collapse, Pos, Provenance, Relation, Split, relation_indices
from ..errors import ScheduleError
from ..notation.ast import IndexVar
from ..tensor.dtypes import INT64_MAX
from .commands import _as_cin, _count, _fail, _loop, _replace_chain

Derived = tuple[Stmt, tuple[Relation, ...]]


def split(stmt: Stmt, relations: tuple[Relation, ...], index: IndexVar, outer: IndexVar, inner: IndexVar,
          factor, divide: bool = False, offset: bool = False) -> Derived:
    name = "divide" if divide else "split"
    command = f"{name}({index}, {outer}, {inner}, {factor})"
    _count(factor, INT64_MAX, name, index, "number of tiles" if divide else "tile size")
    loop = _derivable(stmt, relations, index, command)
    made = Provenance(relations).defining(index)
    if isinstance(made, (Split, Bound)):
        raise _fail(name, index, f"{index} was made by {made}; splitting a variable twice is not supported")
    _fresh(stmt, relations, (outer, inner), command)
    tiles = Forall(outer, Forall(inner, loop.body, unroll=loop.unroll))
    return _replace_chain(stmt, loop, tiles), (*relations, Split(index, outer, inner, factor, divide, offset))


def collapse(stmt: Stmt, relations: tuple[Relation, ...], outer: IndexVar, inner: IndexVar,
             fused: IndexVar) -> Derived:
    command = f"collapse({outer}, {inner}, {fused})"
    first = _derivable(stmt, relations, outer, command)
    if not isinstance(first.body, Forall) or first.body.index != inner:
        raise _fail("collapse", inner, f"the loop over {inner} must be directly inside the loop over {outer}")
    second = _derivable(stmt, relations, inner, command)
    provenance = Provenance(relations)
    for index in (outer, inner):
        if provenance.defining(index) is not None:
            raise _fail("collapse", index, f"{index} was made by {provenance.defining(index)}; only loops over "
                                           f"the tensors' own indices collapse")
    _fresh(stmt, relations, (fused,), command)
    return (_replace_chain(stmt, first, Forall(fused, second.body, unroll=second.unroll)),
            (*relations, Collapse(outer, inner, fused)))


def pos(stmt: Stmt, relations: tuple[Relation, ...], index: IndexVar, position: IndexVar, access) -> Derived:
    command = f"pos({index}, {position}, {access})"
    loop = _derivable(stmt, relations, index, command)
    provenance = Provenance(relations)
    made = provenance.defining(index)
    if isinstance(made, Pos):
        raise _fail("pos", index, f"{index} already runs over positions ({made})")
    if made is not None and not isinstance(made, Collapse):
        raise _fail("pos", index, f"{index} was made by {made}; pos applies to a tensor's own index or a "
                                  f"collapsed one")
    found = _as_cin(access, stmt, command)
    if not isinstance(found, Access):
        raise _fail("pos", index, f"expected one access of a tensor, not {access}")
    _check_positions(found, provenance.roots(index), index, command)
    _fresh(stmt, relations, (position,), command)
    return _replace_chain(stmt, loop, replace(loop, index=position)), (*relations, Pos(index, position, found))


def _check_positions(access: Access, roots: tuple[IndexVar, ...], index: IndexVar, command: str) -> None:
    """The position space of `roots` is that of one level of `access` (or of two consecutive levels, the
    top one and a compressed one, for a collapsed index), whose positions stand for distinct coordinates."""
    levels = access.level_indices
    if not all(root in levels for root in roots):
        raise ScheduleError(f"{command}: {access} is not indexed by {', '.join(map(str, roots))}")
    depth = levels.index(roots[-1])
    fmt = access.tensor.format
    if access.tensor.temporary or fmt.levels[depth].properties.full:
        raise ScheduleError(f"{command}: {access}'s level for {roots[-1]} is dense (its positions are its "
                            f"coordinates): split {index} instead")
    if not fmt.levels[depth].properties.unique:
        raise ScheduleError(f"{command}: {access}'s level for {roots[-1]} repeats coordinates; positions of a "
                            f"non-unique level are not supported")
    if len(roots) == 2:
        if levels[:2] != roots or "pos" not in fmt.levels[1].array_names:
            raise ScheduleError(f"{command}: the positions of a collapsed {roots[0]}, {roots[1]} must be those of "
                                f"the first two levels of {access}, the second one compressed")
        if not fmt.levels[0].properties.unique:
            raise ScheduleError(f"{command}: {access}'s level for {roots[0]} repeats coordinates")


def coord(stmt: Stmt, relations: tuple[Relation, ...], position: IndexVar, index: IndexVar) -> Derived:
    command = f"coord({position}, {index})"
    made = Provenance(relations).defining(position)
    if not isinstance(made, Pos) or made.index != index:
        raise _fail("coord", position, f"{position} is not the position variable that pos made from {index}")
    loop = _derivable(stmt, relations, position, command)
    return _replace_chain(stmt, loop, replace(loop, index=index)), tuple(r for r in relations if r is not made)


def bound(stmt: Stmt, relations: tuple[Relation, ...], index: IndexVar, bounded: IndexVar, size,
          kind: BoundKind) -> Derived:
    command = f"bound({index}, {bounded}, {size}, {kind.value})"
    _count(size, INT64_MAX, "bound", index, "size")
    loop = _derivable(stmt, relations, index, command)
    if Provenance(relations).defining(index) is not None:
        raise _fail("bound", index, "only loops over the tensors' own indices can be bound")
    _fresh(stmt, relations, (bounded,), command)
    return _replace_chain(stmt, loop, replace(loop, index=bounded)), (*relations, Bound(index, bounded, size, kind))


def _derivable(stmt: Stmt, relations: tuple[Relation, ...], index: IndexVar, command: str) -> Forall:
    loop = _loop(stmt, index, command)
    if loop.parallel is not None:
        raise ScheduleError(f"{command}: no command may follow parallelize on loop {index}")
    return loop


def _fresh(stmt: Stmt, relations: tuple[Relation, ...], names: tuple[IndexVar, ...], command: str) -> None:
    taken = {*loop_indices(stmt), *relation_indices(relations), *(i for a in all_accesses(stmt) for i in a.indices)}
    if len(set(names)) != len(names):
        raise ScheduleError(f"{command}: the new index variables must differ")
    for name in names:
        if name in taken:
            raise ScheduleError(f"{command}: {name} is already an index variable of the statement; name the new "
                                f"variable afresh")
