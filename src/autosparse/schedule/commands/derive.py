"""Commands that derive new index variables (Senanayake et al. §4): each replaces a loop (or two) by loops
over variables related to the old ones, and records the relation, from which lowering recovers the
original coordinates.

    split(i, i0, i1, s)        tiles of s:        ∀i → ∀i0 ∀i1   (i = i0·s + i1; the last tile is shorter)
    divide(i, i0, i1, n)       n tiles:           ∀i → ∀i0 ∀i1   (i = i0·⌈N/n⌉ + i1)
    collapse(i, j, f)          ∀i ∀j → ∀f over i × j in order
    pos(i, ip, A(i,j))         ∀i → ∀ip over A's positions for i (of i's collapsed levels, for a collapsed i)
    coord(ip, i)               undoes pos
    bound(i, ib, n, kind)      ∀i → ∀ib with the constant extent n (kind max_exact: N = n; max_constraint: N ≤ n)

Each works on a statement and the relations made so far, and returns both. Each checks what it can
see in the statement; what depends on formats and the loops inside (a pos of a merged loop, a split of a
loop that co-iterates a sparse level) lowering reports, also as a `ScheduleError` naming the command.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from ...cin import provenance as relation
from ...cin.ast import Access, Forall, Stmt, all_accesses, loop_indices
from ...cin.provenance import BoundKind, Provenance, relation_indices
from ...errors import ScheduleError
from ...notation.ast import Expr, IndexVar
from ...tensor.dtypes import INT64_MAX
from .base import (Arity, Command, Derived, Relations, ScheduleCommand, command, read_choice, read_index,
                   read_integer)
from .rewrite import as_cin, checked_count, failure, find_loop, replace_node


@command
@dataclass(frozen=True)
class Split(ScheduleCommand):
    """∀index → ∀outer ∀inner over tiles of `factor` (the last one shorter). `offset`: the tiles start at
    any coordinate (the blocks of an unaligned BCSR operand), which only the blocked layout asks for."""

    name: ClassVar[str] = "split"
    arity: ClassVar[Arity] = Arity(4, 4)
    divides: ClassVar[bool] = False  # `factor` counts the tiles, not their size
    index: IndexVar
    outer: IndexVar
    inner: IndexVar
    factor: int
    offset: bool = False

    def __str__(self) -> str:
        return f"{self.name}({self.index}, {self.outer}, {self.inner}, {self.factor})"

    @classmethod
    def read(cls, written: Command) -> "Split":
        return cls(*(read_index(a, written) for a in written.args[:3]), read_integer(written.args[3], written))

    def apply(self, stmt: Stmt, relations: Relations) -> Derived:
        checked_count(self.factor, INT64_MAX, self.name, self.index,
                      "number of tiles" if self.divides else "tile size")
        loop = _derivable(stmt, self.index, str(self))
        made = Provenance(relations).defining(self.index)
        if isinstance(made, (relation.Split, relation.Bound)):
            raise failure(self.name, self.index, f"{self.index} was made by {made}; splitting a variable twice is "
                                                 f"not supported")
        _fresh(stmt, relations, (self.outer, self.inner), str(self))
        tiles = Forall(self.outer, Forall(self.inner, loop.body, unroll=loop.unroll))
        made = relation.Split(self.index, self.outer, self.inner, self.factor, self.divides, self.offset)
        return replace_node(stmt, loop, tiles), (*relations, made)


@command
@dataclass(frozen=True)
class Divide(Split):
    """∀index → ∀outer ∀inner over `factor` tiles (i = outer·⌈N/factor⌉ + inner)."""

    name: ClassVar[str] = "divide"
    divides: ClassVar[bool] = True


@command
@dataclass(frozen=True)
class Collapse(ScheduleCommand):
    """∀outer ∀inner → ∀fused over outer × inner in order."""

    name: ClassVar[str] = "collapse"
    arity: ClassVar[Arity] = Arity(3, 3)
    outer: IndexVar
    inner: IndexVar
    fused: IndexVar

    def __str__(self) -> str:
        return f"{self.name}({self.outer}, {self.inner}, {self.fused})"

    @classmethod
    def read(cls, written: Command) -> "Collapse":
        return cls(*(read_index(a, written) for a in written.args))

    def apply(self, stmt: Stmt, relations: Relations) -> Derived:
        first = _derivable(stmt, self.outer, str(self))
        if not isinstance(first.body, Forall) or first.body.index != self.inner:
            raise failure(self.name, self.inner, f"the loop over {self.inner} must be directly inside the loop over "
                                                 f"{self.outer}")
        second = _derivable(stmt, self.inner, str(self))
        provenance = Provenance(relations)
        for index in (self.outer, self.inner):
            if provenance.defining(index) is not None:
                raise failure(self.name, index, f"{index} was made by {provenance.defining(index)}; only loops over "
                                                f"the tensors' own indices collapse")
        _fresh(stmt, relations, (self.fused,), str(self))
        return (replace_node(stmt, first, Forall(self.fused, second.body, unroll=second.unroll)),
                (*relations, relation.Collapse(self.outer, self.inner, self.fused)))


@command
@dataclass(frozen=True)
class Pos(ScheduleCommand):
    """∀index → ∀position over the positions of `access`'s level for `index` (of its two collapsed levels,
    for a collapsed `index`)."""

    name: ClassVar[str] = "pos"
    arity: ClassVar[Arity] = Arity(3, 3)
    index: IndexVar
    position: IndexVar
    access: Expr  # an access of the statement, checked when applied

    def __str__(self) -> str:
        return f"{self.name}({self.index}, {self.position}, {self.access})"

    @classmethod
    def read(cls, written: Command) -> "Pos":
        return cls(read_index(written.args[0], written), read_index(written.args[1], written), written.args[2])

    def apply(self, stmt: Stmt, relations: Relations) -> Derived:
        index, command = self.index, str(self)
        loop = _derivable(stmt, index, command)
        provenance = Provenance(relations)
        made = provenance.defining(index)
        if isinstance(made, relation.Pos):
            raise failure(self.name, index, f"{index} already runs over positions ({made})")
        if made is not None and not isinstance(made, relation.Collapse):
            raise failure(self.name, index, f"{index} was made by {made}; pos applies to a tensor's own index or a "
                                            f"collapsed one")
        found = as_cin(self.access, stmt, command)
        if not isinstance(found, Access):
            raise failure(self.name, index, f"expected one access of a tensor, not {self.access}")
        _check_positions(found, provenance.roots(index), index, command)
        _fresh(stmt, relations, (self.position,), command)
        return (replace_node(stmt, loop, replace(loop, index=self.position)),
                (*relations, relation.Pos(index, self.position, found)))


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


@command
@dataclass(frozen=True)
class Coord(ScheduleCommand):
    """Undoes pos: ∀position → ∀index again."""

    name: ClassVar[str] = "coord"
    arity: ClassVar[Arity] = Arity(2, 2)
    position: IndexVar
    index: IndexVar

    def __str__(self) -> str:
        return f"{self.name}({self.position}, {self.index})"

    @classmethod
    def read(cls, written: Command) -> "Coord":
        return cls(read_index(written.args[0], written), read_index(written.args[1], written))

    def apply(self, stmt: Stmt, relations: Relations) -> Derived:
        made = Provenance(relations).defining(self.position)
        if not isinstance(made, relation.Pos) or made.index != self.index:
            raise failure(self.name, self.position, f"{self.position} is not the position variable that pos made "
                                                    f"from {self.index}")
        loop = _derivable(stmt, self.position, str(self))
        return replace_node(stmt, loop, replace(loop, index=self.index)), tuple(r for r in relations if r is not made)


@command
@dataclass(frozen=True)
class Bound(ScheduleCommand):
    """∀index → ∀bounded with the constant extent `size` (max_exact: N = size; max_constraint: N ≤ size)."""

    name: ClassVar[str] = "bound"
    arity: ClassVar[Arity] = Arity(4, 4)
    index: IndexVar
    bounded: IndexVar
    size: int
    kind: BoundKind

    def __str__(self) -> str:
        return f"{self.name}({self.index}, {self.bounded}, {self.size}, {self.kind.value})"

    @classmethod
    def read(cls, written: Command) -> "Bound":
        index, bounded, size, kind = written.args
        return cls(read_index(index, written), read_index(bounded, written), read_integer(size, written),
                   read_choice(BoundKind, kind, written))

    def apply(self, stmt: Stmt, relations: Relations) -> Derived:
        checked_count(self.size, INT64_MAX, self.name, self.index, "size")
        loop = _derivable(stmt, self.index, str(self))
        if Provenance(relations).defining(self.index) is not None:
            raise failure(self.name, self.index, "only loops over the tensors' own indices can be bound")
        _fresh(stmt, relations, (self.bounded,), str(self))
        made = relation.Bound(self.index, self.bounded, self.size, self.kind)
        return replace_node(stmt, loop, replace(loop, index=self.bounded)), (*relations, made)


def _derivable(stmt: Stmt, index: IndexVar, command: str) -> Forall:
    loop = find_loop(stmt, index, command)
    if loop.parallel is not None:
        raise ScheduleError(f"{command}: no command may follow parallelize on loop {index}")
    return loop


def _fresh(stmt: Stmt, relations: Relations, names: tuple[IndexVar, ...], command: str) -> None:
    taken = {*loop_indices(stmt), *relation_indices(relations), *(i for a in all_accesses(stmt) for i in a.indices)}
    if len(set(names)) != len(names):
        raise ScheduleError(f"{command}: the new index variables must differ")
    for name in names:
        if name in taken:
            raise ScheduleError(f"{command}: {name} is already an index variable of the statement; name the new "
                                f"variable afresh")
