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
from typing import Mapping, Sequence

import numpy as np

from ..codegen.c_ast import CType, Expr, TopLevel
from ..errors import FormatError, ScheduleError


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
    def inserts_sparsely(self) -> bool:
        """Whether the level takes coordinates in any order without storing every one, as a hash table
        does: the autoschedulers cost such levels as hash tables, and lowering builds a temporary of them
        as a hash-table workspace. Derived from the capabilities, so a registered level that can do the
        same counts too."""
        return Capability.INSERT in self.capabilities and not self.properties.full

    def in_increasing_order(self) -> "Level":
        """This level with its siblings in increasing order where it has such a variant (a compressed level
        does), else itself: partial results are summed by merging, which needs increasing levels."""
        return self

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

    # Cutting a tensor into runs of its outermost stored mode and joining them back (tensor/slicing.py, the
    # chunks of a partitioned tensor): a level that cuts as ranges implements `cut` and `join`.

    @property
    def cuts_as_ranges(self) -> bool:
        """Whether a run of parent positions owns one range of this level's positions, so that a cut is
        views of its arrays and a join their concatenation; a tensor with a level that says no is cut
        through its coordinates. Slicing asks this instead of the level's kind."""
        return False

    @property
    def cut_keeps_format(self) -> bool:
        """Whether a run of the outermost mode, cut out, is still a tensor of the same format (a packed
        triangle's rows are no triangle); slicing refuses to cut through a level that says no."""
        return True

    def cut(self, arrays: Mapping[str, np.ndarray], begin: int, end: int, dim: int,
            root: bool) -> tuple[dict[str, np.ndarray], int, int]:
        """This level's arrays below the parent positions [begin, end), re-based to start at zero, and the
        range of its own positions they hold (when `cuts_as_ranges`). The first level (`root`) is cut by
        its coordinates [begin, end) instead, which become 0..end - begin."""
        raise FormatError(f"level {self.spelling!r} does not cut as ranges (its cuts_as_ranges is False): "
                          f"slice or partition a tensor of it through its coordinates")

    def join(self, pieces: Sequence[Mapping[str, np.ndarray]], shifts: Sequence[int], index_dtype: np.dtype,
             root: bool) -> dict[str, np.ndarray]:
        """This level's arrays for the `cut` pieces one after another, each piece's coordinates plus its
        shift (when `cuts_as_ranges`); `root`: the level is the first, below one parent."""
        raise FormatError(f"level {self.spelling!r} does not join as ranges (its cuts_as_ranges is False): "
                          f"assemble the pieces through their coordinates")

    # C fragments that lowering splices into kernels (LOWERING.md §1), as nodes of codegen's C AST, as
    # TACO's ModeFormatImpl answers in IR: `arrays` maps this level's array names to their C identifiers;
    # positions, coordinates and extents come and go as expressions (`c_ast.Expr`). A level implements
    # those its capabilities promise; a plug-in that leaves one out can store tensors but not be compiled
    # for, and says so with a ScheduleError.

    def _no_code(self, what: str):
        return ScheduleError(f"Expected level {self.letter!r} to give the C code to {what}, but it gives none")

    def position_range(self, arrays: Mapping[str, str], begin: Expr, end: Expr) -> tuple[Expr, Expr]:
        """[first, last) positions below the parent positions [begin, end) (POSITION_ITERATION)."""
        raise self._no_code("iterate its positions")

    def coordinate(self, arrays: Mapping[str, str], position: Expr) -> Expr:
        """The coordinate stored at `position` (POSITION_ITERATION)."""
        raise self._no_code("read a stored coordinate")

    def segment_base(self, arrays: Mapping[str, str], parent: Expr) -> Expr | None:
        """For a level whose coordinate is its position minus a per-segment base (a packed triangle),
        that base below `parent`; kernels declare it once per segment as `arrays["@base"]`, which
        `coordinate` then reads. None: coordinates need no base."""
        return None

    def placement_error(self, depth: int, levels: tuple["Level", ...]) -> str | None:
        """Why this level cannot be level `depth` of a format with `levels`, or None when it can."""
        return None

    def vacant(self, arrays: Mapping[str, str], position: Expr) -> Expr | None:
        """A condition true when `position` holds no coordinate, or None when every position holds one."""
        return None

    def locate(self, arrays: Mapping[str, str], parent: Expr, coordinate: Expr, dim: Expr) -> Expr:
        """The position of `coordinate` below `parent`, or -1 when absent (LOCATE)."""
        raise self._no_code("locate a coordinate")

    @property
    def locate_may_miss(self) -> bool:
        """Whether `locate` can answer -1."""
        return True

    def c_helpers(self, index_type: CType) -> "TopLevel | None":
        """C functions the fragments call, for arrays of `index_type`; defined once per kernel."""
        return None

    def __str__(self) -> str:
        return self.spelling
