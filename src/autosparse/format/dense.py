"""The dense level: every coordinate of its dimension below each parent, with no index arrays."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..codegen.c_ast import Expr, Literal
from .level import Capability, Level, LevelProperties, Packed, Unpacked, Validated


@dataclass(frozen=True, slots=True)
class Dense(Level):
    """Child position = parent position × N + coordinate."""

    @property
    def letter(self) -> str:
        return "d"

    @property
    def cuts_as_ranges(self) -> bool:
        return True

    def cut(self, arrays, begin, end, dim, root):
        return ({}, begin, end) if root else ({}, begin * dim, end * dim)

    def join(self, pieces, shifts, index_dtype, root):
        return {}

    @property
    def properties(self) -> LevelProperties:
        return LevelProperties(full=True, ordered=True, unique=True, branchless=False, compact=True)

    @property
    def capabilities(self) -> frozenset[Capability]:
        return frozenset({Capability.COORDINATE_ITERATION, Capability.LOCATE, Capability.INSERT})

    @property
    def array_names(self) -> tuple[str, ...]:
        return ()

    def positions_bound(self, nparents: int, dim: int, nentries: int) -> int:
        return nparents * dim

    def pack(self, parent, nparents, coord, dim, index_dtype) -> Packed:
        child = parent.astype(np.int64) * dim + coord
        return Packed(arrays={}, child=child, nchildren=nparents * dim)

    def unpack(self, arrays: Mapping[str, np.ndarray], parents: np.ndarray, dim: int) -> Unpacked:
        owner = np.repeat(np.arange(len(parents)), dim)
        coord = np.tile(np.arange(dim), len(parents))
        return Unpacked(owner=owner, child=parents[owner].astype(np.int64) * dim + coord, coord=coord)

    def validate(self, arrays, nparents, dim, parent_repeats) -> Validated:
        return Validated(nchildren=nparents * dim, repeats=None)

    def locate(self, arrays, parent: Expr, coordinate: Expr, dim: Expr) -> Expr:
        return coordinate if parent == Literal(0) else parent * dim + coordinate

    @property
    def locate_may_miss(self) -> bool:
        return False
