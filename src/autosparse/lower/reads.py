"""How a kernel reads one storage level: the uniform face that lowering sees of a tensor's level plug-in
or of a workspace being consumed.

A `ReadLevel` answers in C expressions (codegen's `c_ast.Expr`): the positions below a parent segment,
the coordinate at a position, the position a coordinate leads to (for the level below and the values),
and `locate`.
Positions come as segments [begin, end): below a unique level a segment is one position; below a
non-unique level (COO rows) it spans the entries that share a coordinate.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Mapping

from ..codegen.c_ast import Expr, Literal, as_expr, lt, ternary
from ..errors import ScheduleError
from ..format.level import Level


@dataclass(frozen=True, slots=True)
class Position:
    """Where an access stands at one level: position `begin`, or the segment [begin, end) of a
    non-unique level; `may_miss` when a locate above may have found nothing (begin is then -1)."""

    begin: Expr
    end: Expr | None = None
    may_miss: bool = False

    @property
    def last(self) -> Expr:
        return self.end if self.end is not None else self.begin + 1

    def unless_missed(self, value, missed) -> Expr:
        """`value`, or `missed` where a locate above found nothing (when it may have)."""
        return ternary(lt(self.begin, 0), missed, value) if self.may_miss else value


ROOT = Position(Literal(0))


class ReadLevel(ABC):
    full: bool
    ordered: bool  # siblings increase
    unique: bool
    descending: bool = False  # siblings decrease
    steppable: bool = True  # False: a view whose levels are only located (keyed.py)
    checked: bool = False  # its coordinates are compared with `dim` where loaded (`Types.checked`)

    @abstractmethod
    def range(self, parent: Position) -> tuple[Expr, Expr]:
        """[first, last) positions below `parent`."""

    @abstractmethod
    def coordinate(self, q: Expr) -> Expr:
        """The coordinate at position `q`."""

    def vacant(self, q: Expr) -> Expr | None:
        return None

    def indexed_by(self, what: str) -> None:
        """Refuse to index `what` by this level's coordinates where the kernel has not compared them."""
        if self.checked:
            raise ScheduleError(f"Expected coordinates checked before they index {what}, but this level's are "
                                f"checked only where loops load them")

    def searched(self, what: str) -> None:
        """Refuse to search this level's coordinates by their order (`what`: a merge, gallop or binary find)
        where the kernel has not checked the order: a check reaches only the runs loops load."""
        if self.checked and self.ordered:
            raise ScheduleError(f"Expected coordinates checked before {what} searches them by their order, but "
                                f"this level's are checked only where loops load them")

    def base(self, parent: Position) -> tuple[str, Expr] | None:
        """(name, value) of the variable a segment below `parent` declares for `coordinate` to read, if
        the level needs one (Level.segment_base)."""
        return None

    def stepped(self, q: Expr, coordinate: Expr) -> Expr:
        """The position that stepping to `q` (holding `coordinate`) leads to."""
        return q

    @abstractmethod
    def locate(self, parent: Position, coordinate: Expr) -> Position:
        """The position of `coordinate` below `parent` (may miss: see Position.may_miss)."""


@dataclass(frozen=True)
class TensorLevel(ReadLevel):
    """A level of an operand, through its plug-in's C fragments."""

    level: Level
    arrays: Mapping[str, str]
    dim: str
    #: a non-unique unordered level above (unsorted COO's rows): the entries sharing a prefix here are
    #: not all neighbours, and those that are come in no order, whatever this level promises
    unsorted: bool = False
    #: coordinates no one has checked: `load` compares each with `dim` (unsigned, so a negative one counts
    #: as too large) and fails the call on one out of range; a lowering that would index with them
    #: elsewhere (`indexed_by`) refuses, so the caller checks them first
    checked: bool = False

    @property
    def full(self) -> bool:
        return self.level.properties.full

    @property
    def ordered(self) -> bool:
        return self.level.properties.ordered and not self.unsorted

    @property
    def unique(self) -> bool:
        return self.level.properties.unique

    @property
    def descending(self) -> bool:
        return self.level.properties.descending and not self.unsorted

    def range(self, parent: Position) -> tuple[Expr, Expr]:
        begin, end = self.level.position_range(self.arrays, parent.begin, parent.last)
        return parent.unless_missed(begin, 0), parent.unless_missed(end, 0)

    def coordinate(self, q: Expr) -> Expr:
        return self.level.coordinate(self.arrays, q)

    def vacant(self, q: Expr) -> Expr | None:
        return self.level.vacant(self.arrays, q)

    def base(self, parent: Position) -> tuple[str, Expr] | None:
        value = self.level.segment_base(self.arrays, parent.begin)
        return None if value is None else (self.arrays["@base"], value)

    def locate(self, parent: Position, coordinate: Expr) -> Position:
        found = self.level.locate(self.arrays, parent.begin, coordinate, as_expr(self.dim))
        if self.level.locate_may_miss:
            return Position(found, may_miss=True)
        return Position(parent.unless_missed(found, -1), may_miss=parent.may_miss)
