"""The packed triangular level: below a dense level of rows, every coordinate on one side of the diagonal,
with no index arrays (Zhao et al.'s packed lower-triangular layout, value = data[i(i+1)/2 + j]).

`t` (format name "lower", spelled `dt`) stores row i's columns 0..i at positions i(i+1)/2 + j; `t^`
("upper", `dt^`) stores columns i..n-1 at positions i·n - i(i-1)/2 + (j - i). A level format cannot say
either: a compressed level spends an index array on coordinates the triangle already implies, a dense
one stores the other half. Kernels iterate the level natively: a row's segment is computed from the row,
and a coordinate is its position minus the segment's base (declared once per segment), so the loop over
j is the triangle's own bounds. Every coordinate of the triangle is stored (zeros are fill, as in a dense
level), which makes the level locatable too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..errors import FormatError
from ._checks import expand_ranges
from ..codegen.c_ast import Expr, Var, ge, le, ternary
from .level import Capability, Level, LevelProperties, Packed, Unpacked, Validated


@dataclass(frozen=True, slots=True)
class Triangular(Level):
    upper: bool = False

    @property
    def letter(self) -> str:
        return "t"

    @property
    def spelling(self) -> str:
        return "t^" if self.upper else "t"

    @property
    def properties(self) -> LevelProperties:
        return LevelProperties(full=False, ordered=True, unique=True, branchless=False, compact=True, filled=True)

    @property
    def capabilities(self) -> frozenset[Capability]:
        return frozenset({Capability.POSITION_ITERATION, Capability.LOCATE})

    @property
    def array_names(self) -> tuple[str, ...]:
        return ()

    @property
    def cut_keeps_format(self) -> bool:
        return False

    def placement_error(self, depth: int, levels: tuple[Level, ...]) -> str | None:
        if depth != 1 or not levels[0].properties.full:
            return f"Expected the triangular level {self.spelling!r} second, below a dense level of rows"
        return None

    # --- numpy ----------------------------------------------------------------------------------------

    def _starts(self, rows: np.ndarray, n: int) -> np.ndarray:
        rows = rows.astype(np.int64)
        return rows * n - rows * (rows - 1) // 2 if self.upper else rows * (rows + 1) // 2

    def _extent(self, rows: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """[first, last) coordinates of each row's segment."""
        rows = rows.astype(np.int64)
        return (rows, np.full_like(rows, n)) if self.upper else (np.zeros_like(rows), rows + 1)

    def positions_bound(self, nparents: int, dim: int, nentries: int) -> int:
        return dim * (dim + 1) // 2

    def _square(self, nparents: int, dim: int) -> None:
        if nparents != dim:
            raise FormatError(f"Expected a square matrix for a triangular level, but found {nparents} rows and "
                              f"{dim} columns")

    def pack(self, parent, nparents, coord, dim, index_dtype) -> Packed:
        self._square(nparents, dim)
        outside = np.flatnonzero(coord < parent if self.upper else coord > parent)
        if len(outside):
            k = int(outside[0])
            side = "on or above" if self.upper else "on or below"
            raise FormatError(f"Expected every entry {side} the diagonal, but found one at row {parent[k]}, "
                              f"column {coord[k]}")
        first, _ = self._extent(parent, dim)
        child = self._starts(parent, dim) + (coord - first)
        return Packed(arrays={}, child=child, nchildren=self.positions_bound(nparents, dim, len(coord)))

    def unpack(self, arrays: Mapping[str, np.ndarray], parents: np.ndarray, dim: int) -> Unpacked:
        first, last = self._extent(parents, dim)
        owner, coord = expand_ranges(first, last)
        child = self._starts(parents, dim)[owner] + coord - first[owner]
        return Unpacked(owner=owner, child=child, coord=coord)

    def validate(self, arrays, nparents, dim, parent_repeats) -> Validated:
        self._square(nparents, dim)
        return Validated(nchildren=self.positions_bound(nparents, dim, 0), repeats=None)

    # --- C ----------------------------------------------------------------------------------------------

    def _start(self, row: Expr, n: Expr | None) -> Expr:
        """The first position of `row` (`n` the dimension; the lower triangle needs none)."""
        return row * n - row * (row - 1) // 2 if self.upper else row * (row + 1) // 2

    def position_range(self, arrays, begin: Expr, end: Expr) -> tuple[Expr, Expr]:
        return self._start(begin, Var(arrays["@dim"])), self._start(end, Var(arrays["@dim"]))

    def segment_base(self, arrays, parent: Expr) -> Expr | None:
        return self._start(parent, Var(arrays["@dim"])) - parent if self.upper else self._start(parent, None)

    def coordinate(self, arrays, position: Expr) -> Expr:
        return position - Var(arrays["@base"])

    def locate(self, arrays, parent: Expr, coordinate: Expr, dim: Expr) -> Expr:
        if self.upper:
            return ternary(ge(coordinate, parent), self._start(parent, dim) + coordinate - parent, -1)
        return ternary(le(coordinate, parent), self._start(parent, dim) + coordinate, -1)
