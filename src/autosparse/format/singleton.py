"""The singleton level: exactly one child per parent position, its coordinate in `crd`.

It hangs below a non-unique level (COO's columns below its non-unique rows). `q` declares the paths it
completes unique among siblings; `c` lets them repeat (a middle level of a COO of order 3 or more).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..errors import FormatError
from ._checks import check_in_range, check_sibling_order, path_repeats
from ..codegen.c_ast import Expr, Var
from .level import Capability, Level, LevelProperties, Packed, Unpacked, Validated


@dataclass(frozen=True, slots=True)
class Singleton(Level):
    unique: bool = True

    @property
    def letter(self) -> str:
        return "q" if self.unique else "c"

    @property
    def properties(self) -> LevelProperties:
        return LevelProperties(full=False, ordered=True, unique=self.unique, branchless=True, compact=True)

    @property
    def capabilities(self) -> frozenset[Capability]:
        return frozenset({Capability.POSITION_ITERATION, Capability.APPEND})

    @property
    def array_names(self) -> tuple[str, ...]:
        return ("crd",)

    @property
    def cuts_as_ranges(self) -> bool:
        return True

    def cut(self, arrays, begin, end, dim, root):
        return {"crd": arrays["crd"][begin:end]}, begin, end

    def join(self, pieces, shifts, index_dtype, root):
        return {"crd": np.concatenate([p["crd"].astype(index_dtype) + index_dtype.type(shift)
                                       for p, shift in zip(pieces, shifts)])}

    def positions_bound(self, nparents: int, dim: int, nentries: int) -> int:
        return nparents

    def pack(self, parent, nparents, coord, dim, index_dtype) -> Packed:
        if len(coord) != nparents:
            raise FormatError(f"Expected one entry per parent position below a singleton level, "
                              f"but found {len(coord)} entries for {nparents} parents")
        return Packed(arrays={"crd": coord.astype(index_dtype, copy=False)}, child=parent, nchildren=nparents)

    def unpack(self, arrays: Mapping[str, np.ndarray], parents: np.ndarray, dim: int) -> Unpacked:
        crd = arrays["crd"]
        coord = crd if len(parents) == len(crd) else crd[parents]
        return Unpacked(owner=None, child=parents, coord=coord)

    def validate(self, arrays, nparents, dim, parent_repeats) -> Validated:
        crd = arrays["crd"]
        if len(crd) != nparents:
            raise FormatError(f"Expected crd to have one entry per parent position ({nparents}), but found {len(crd)}")
        check_in_range(crd, dim)
        if parent_repeats is None:
            return Validated(nchildren=nparents, repeats=None)
        check_sibling_order(crd, parent_repeats, ordered=True, unique=self.unique)
        repeats = None if self.unique else path_repeats(np.arange(nparents), parent_repeats, crd)
        return Validated(nchildren=nparents, repeats=repeats)

    def position_range(self, arrays, begin: Expr, end: Expr) -> tuple[Expr, Expr]:
        return begin, end

    def coordinate(self, arrays, position: Expr) -> Expr:
        return Var(arrays["crd"])[position]
