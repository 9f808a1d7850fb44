"""The level plug-in interface: what one storage level of a tensor is and can do.

A tensor is a coordinate tree with one level per mode. Each level kind (dense, compressed, singleton,
hashed, or one a user registers) is an object that declares its properties and capabilities, which is all
the compiler asks of it, and implements the storage operations of this package with numpy: `pack` (build
the level from sorted coordinates), `unpack` (list its coordinates) and `validate` (check arrays that came
from outside). Nothing else in autosparse tests for a level's kind.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..codegen.c_ast import TopLevel
from ..errors import ScheduleError


class Capability(enum.Enum):
    """What a level can do, as the lowering asks it (LOWERING.md §1)."""

    COORDINATE_ITERATION = "iterate every coordinate 0..N-1"
    POSITION_ITERATION = "iterate its stored positions"
    LOCATE = "find a coordinate's position directly"
    APPEND = "append coordinates in order"
    INSERT = "insert coordinates in any order"


@dataclass(frozen=True, slots=True)
class LevelProperties:
    """Facts about the coordinates a level stores below one parent position.

    full: every coordinate of the dimension is stored. ordered: coordinates appear in increasing order.
    unique: no coordinate appears twice among siblings. branchless: each parent has exactly one child.
    compact: positions are contiguous (no unused slots). descending: coordinates appear in decreasing
    order (then `ordered` is False: everything that merges in increasing order must refuse the level).
    filled: every coordinate of each segment's range is stored, zeros included, as in a dense level
    (a packed triangle): zeros at such a last level are fill, not entries.
    """

    full: bool
    ordered: bool
    unique: bool
    branchless: bool
    compact: bool
    descending: bool = False
    filled: bool = False


@dataclass(frozen=True, slots=True)
class Packed:
    """A level built by `Level.pack`: its arrays, each entry's position in it, and its position count."""

    arrays: Mapping[str, np.ndarray]
    child: np.ndarray
    nchildren: int


@dataclass(frozen=True, slots=True)
class Unpacked:
    """The stored coordinates below some parent positions, as listed by `Level.unpack`.

    owner[k] indexes the parent (in the `parents` array given to unpack) of the k-th child, or owner is
    None when child k belongs to parent k; child[k] is its position in this level and coord[k] its
    coordinate.
    """

    owner: np.ndarray | None
    child: np.ndarray
    coord: np.ndarray


@dataclass(frozen=True, slots=True)
class Validated:
    """What `Level.validate` learnt: the level's position count, which positions repeat a prefix, and
    which hold no coordinate.

    repeats[q] is True when position q has the same coordinate path (this level and above) as q - 1;
    None means no position does, which holds below unique levels only. vacant lists the positions that
    hold no coordinate (a hashed level's empty slots); nothing may be stored below them.
    """

    nchildren: int
    repeats: np.ndarray | None
    vacant: np.ndarray | None = None


class Level(ABC):
    """One storage level kind. Subclasses are frozen dataclasses, so levels compare and hash by value."""

    @property
    @abstractmethod
    def letter(self) -> str:
        """The format-string letter that spells this level."""

    @property
    def spelling(self) -> str:
        """How format strings spell this level: its letter, and the mark of a variant (`s-`, `s~`)."""
        return self.letter

    @property
    @abstractmethod
    def properties(self) -> LevelProperties: ...

    @property
    @abstractmethod
    def capabilities(self) -> frozenset[Capability]: ...

    @property
    @abstractmethod
    def array_names(self) -> tuple[str, ...]:
        """The index arrays this level stores, in the order kernels receive them."""

    @abstractmethod
    def positions_bound(self, nparents: int, dim: int, nentries: int) -> int:
        """An upper bound on this level's position count when it holds `nentries` coordinate paths."""

    @abstractmethod
    def pack(self, parent: np.ndarray, nparents: int, coord: np.ndarray, dim: int, index_dtype: np.dtype) -> Packed:
        """Build the level from one coordinate per entry.

        Entries are grouped by `parent` in increasing order and sorted by coordinate path within a parent;
        entries with the same parent and coordinate share a child when the level is unique.
        """

    @abstractmethod
    def unpack(self, arrays: Mapping[str, np.ndarray], parents: np.ndarray, dim: int) -> Unpacked:
        """List the stored children of the (increasing) `parents` positions, in position order."""

    @abstractmethod
    def validate(
        self, arrays: Mapping[str, np.ndarray], nparents: int, dim: int, parent_repeats: np.ndarray | None
    ) -> Validated:
        """Check arrays from outside; raise `FormatError` naming the broken rule."""

    # C fragments that lowering splices into kernels (LOWERING.md §1). `arrays` maps this level's array
    # names to their C identifiers; positions and coordinates are C expressions. A level implements those
    # its capabilities promise; a plug-in that leaves one out can store tensors but not be compiled for,
    # and says so with a ScheduleError.

    def _no_code(self, what: str):
        return ScheduleError(f"Expected level {self.letter!r} to give the C code to {what}, but it gives none")

    def position_range(self, arrays: Mapping[str, str], begin: str, end: str) -> tuple[str, str]:
        """[first, last) positions below the parent positions [begin, end) (POSITION_ITERATION)."""
        raise self._no_code("iterate its positions")

    def coordinate(self, arrays: Mapping[str, str], position: str) -> str:
        """The coordinate stored at `position` (POSITION_ITERATION)."""
        raise self._no_code("read a stored coordinate")

    def segment_base(self, arrays: Mapping[str, str], parent: str) -> str | None:
        """For a level whose coordinate is its position minus a per-segment base (a packed triangle),
        that base below `parent`; kernels declare it once per segment as `arrays["@base"]`, which
        `coordinate` then reads. None: coordinates need no base."""
        return None

    def placement_error(self, depth: int, levels: tuple["Level", ...]) -> str | None:
        """Why this level cannot be level `depth` of a format with `levels`, or None when it can."""
        return None

    def vacant(self, arrays: Mapping[str, str], position: str) -> str | None:
        """A condition true when `position` holds no coordinate, or None when every position holds one."""
        return None

    def locate(self, arrays: Mapping[str, str], parent: str, coordinate: str, dim: str) -> str:
        """The position of `coordinate` below `parent`, or -1 when absent (LOCATE)."""
        raise self._no_code("locate a coordinate")

    @property
    def locate_may_miss(self) -> bool:
        """Whether `locate` can answer -1."""
        return True

    def c_helpers(self, index_type: str) -> "TopLevel | None":
        """C functions the fragments call, for arrays of `index_type`; defined once per kernel."""
        return None

    def __str__(self) -> str:
        return self.spelling
