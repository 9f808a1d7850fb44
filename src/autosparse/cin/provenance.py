"""Derived index variables (Senanayake et al. §4.2): how the loops a schedule made relate to the indices
the tensors are indexed by.

Accesses keep their original indices; the loops of a scheduled statement may run over derived variables
instead (`∀i0 ∀i1 … y(i) += …` after `split(i, i0, i1, 32)`). `SuchThat` holds the statement and the
relations that define each derived variable from the variables it came from; lowering walks them back to
recover each original coordinate (its provenance) where the last loop deriving it is entered:

    Split(i, i0, i1, 32)          i = i0 * 32 + i1; i1 < 32 (the last tile is shorter)
    Split(i, i0, i1, 4, divide)   four tiles of ⌈N/4⌉: i = i0 * ⌈N/4⌉ + i1
    Collapse(i, j, f)             f runs over i × j in that order
    Pos(i, ip, A(i,j))            ip runs over the positions of A's level for i (or, for a collapsed i,
                                  of the level of its inner variable); coordinates are read back from A
    Bound(i, ib, 64, max_exact)   ib runs to the constant 64, the promise that N = 64 (checked per call)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterator, Union

from ..notation.ast import IndexVar
from .ast import Access, Stmt


@dataclass(frozen=True, slots=True)
class Split:
    parent: IndexVar
    outer: IndexVar
    inner: IndexVar
    factor: int
    divide: bool = False  # factor is the number of tiles (outer extent), not the tile size
    #: the outer variable is a tile's first coordinate, not its number (i = outer + inner): the column of
    #: a block of unaligned BCSR, which a sparse level stores
    offset: bool = False

    @property
    def made(self) -> tuple[IndexVar, ...]:
        return (self.outer, self.inner)

    @property
    def sources(self) -> tuple[IndexVar, ...]:
        return (self.parent,)

    def __str__(self) -> str:
        offset = ", offset" if self.offset else ""
        return f"{'divide' if self.divide else 'split'}({self.parent}, {self.outer}, {self.inner}, {self.factor}{offset})"


@dataclass(frozen=True, slots=True)
class Collapse:
    outer: IndexVar
    inner: IndexVar
    fused: IndexVar

    @property
    def made(self) -> tuple[IndexVar, ...]:
        return (self.fused,)

    @property
    def sources(self) -> tuple[IndexVar, ...]:
        return (self.outer, self.inner)

    def __str__(self) -> str:
        return f"collapse({self.outer}, {self.inner}, {self.fused})"


@dataclass(frozen=True, slots=True)
class Pos:
    index: IndexVar
    position: IndexVar
    access: Access

    @property
    def made(self) -> tuple[IndexVar, ...]:
        return (self.position,)

    @property
    def sources(self) -> tuple[IndexVar, ...]:
        return (self.index,)

    def __str__(self) -> str:
        return f"pos({self.index}, {self.position}, {self.access})"


class BoundKind(enum.Enum):
    """What `bound` promises about an extent: exactly the size, or at most it."""

    MAX_EXACT = "max_exact"
    MAX_CONSTRAINT = "max_constraint"


@dataclass(frozen=True, slots=True)
class Bound:
    index: IndexVar
    bounded: IndexVar
    size: int
    kind: BoundKind

    @property
    def made(self) -> tuple[IndexVar, ...]:
        return (self.bounded,)

    @property
    def sources(self) -> tuple[IndexVar, ...]:
        return (self.index,)

    def __str__(self) -> str:
        return f"bound({self.index}, {self.bounded}, {self.size}, {self.kind.value})"


Relation = Union[Split, Collapse, Pos, Bound]


@dataclass(frozen=True, slots=True)
class SuchThat:
    """A statement whose loops run over variables derived by `relations` (in the order they were made)."""

    stmt: Stmt
    relations: tuple[Relation, ...]

    def children(self) -> tuple:
        return (self.stmt,)

    def with_children(self, children: tuple) -> "SuchThat":
        return self if children == (self.stmt,) else SuchThat(children[0], self.relations)

    def __str__(self) -> str:
        return f"suchthat({self.stmt}, {', '.join(map(str, self.relations))})"


def split_relations(stmt) -> tuple[Stmt, tuple[Relation, ...]]:
    """The statement under a SuchThat and its relations (none for a plain statement)."""
    if isinstance(stmt, SuchThat):
        return stmt.stmt, stmt.relations
    return stmt, ()


def attach(stmt: Stmt, relations: tuple[Relation, ...]):
    return SuchThat(stmt, relations) if relations else stmt


@dataclass(frozen=True)
class Provenance:
    """The relations of a statement, asked about one variable at a time."""

    relations: tuple[Relation, ...] = ()

    def defining(self, index: IndexVar) -> Relation | None:
        """The relation that made `index`, if a schedule derived it."""
        return next((r for r in self.relations if index in r.made), None)

    def deriving(self, index: IndexVar) -> Relation | None:
        """The relation that derived variables from `index`, if any did."""
        return next((r for r in self.relations if index in r.sources), None)

    def derived(self) -> set[IndexVar]:
        return {v for r in self.relations for v in r.made}

    def roots(self, index: IndexVar) -> tuple[IndexVar, ...]:
        """The original (access) indices `index` was derived from, outermost first."""
        relation = self.defining(index)
        if relation is None:
            return (index,)
        return tuple(root for source in relation.sources for root in self.roots(source))

    def leaves(self, index: IndexVar) -> tuple[IndexVar, ...]:
        """The variables that loops run over in place of `index`: the last ones derived from it."""
        relation = self.deriving(index)
        if relation is None:
            return (index,)
        return tuple(leaf for made in relation.made for leaf in self.leaves(made))

    def writes_apart(self, index: IndexVar, written: tuple[IndexVar, ...]) -> bool:
        """Whether two iterations of a loop over `index` always write different places of a tensor indexed
        by `written`: every coordinate that `index` stands for is among them (a position stands for the
        coordinates of its level, and of the collapsed levels above it)."""
        return all(root in written for root in self.roots(index))


def relation_indices(relations: tuple[Relation, ...]) -> Iterator[IndexVar]:
    for relation in relations:
        yield from relation.sources
        yield from relation.made
