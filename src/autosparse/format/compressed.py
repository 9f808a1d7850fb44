"""The compressed level: `pos` delimits each parent's segment of `crd`, the stored coordinates.

Unique (`s`) levels store each coordinate once per parent; non-unique (`u`) levels give every entry a
position of its own, so the singleton levels below (COO) can tell duplicates of a prefix apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ._checks import check_in_range, expand_ranges, check_pos, check_sibling_order, new_runs, path_repeats, siblings
from .level import Capability, Level, LevelProperties, Packed, Unpacked, Validated


def pos_from_counts(parent: np.ndarray, nparents: int, index_dtype: np.dtype) -> np.ndarray:
    """The `pos` array of children whose parents are `parent` (one entry per child)."""
    pos = np.zeros(nparents + 1, dtype=index_dtype)
    np.cumsum(np.bincount(parent, minlength=nparents), out=pos[1:])
    return pos


def children_of(pos: np.ndarray, parents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(owner, child) of the segments of `parents`; the common case of every parent avoids a gather."""
    if len(parents) == len(pos) - 1:
        counts = np.diff(pos)
        return np.repeat(np.arange(len(parents)), counts), np.arange(int(pos[-1]))
    return expand_ranges(pos[parents].astype(np.int64), pos[parents + 1].astype(np.int64))


@dataclass(frozen=True, slots=True)
class Compressed(Level):
    unique: bool = True

    @property
    def letter(self) -> str:
        return "s" if self.unique else "u"

    @property
    def properties(self) -> LevelProperties:
        return LevelProperties(full=False, ordered=True, unique=self.unique, branchless=False, compact=True)

    @property
    def capabilities(self) -> frozenset[Capability]:
        return frozenset({Capability.POSITION_ITERATION, Capability.APPEND})

    @property
    def array_names(self) -> tuple[str, ...]:
        return ("pos", "crd")

    def positions_bound(self, nparents: int, dim: int, nentries: int) -> int:
        return nentries if not self.unique else min(nentries, nparents * dim)

    def pack(self, parent, nparents, coord, dim, index_dtype) -> Packed:
        if self.unique:
            fresh = new_runs(parent, coord)
            child = np.cumsum(fresh) - 1
            crd, owners = coord[fresh], parent[fresh]
        else:
            child = np.arange(len(coord))
            crd, owners = coord, parent
        pos = pos_from_counts(owners, nparents, index_dtype)
        arrays = {"pos": pos, "crd": crd.astype(index_dtype, copy=False)}
        return Packed(arrays=arrays, child=child, nchildren=len(crd))

    def unpack(self, arrays: Mapping[str, np.ndarray], parents: np.ndarray, dim: int) -> Unpacked:
        owner, child = children_of(arrays["pos"], parents)
        crd = arrays["crd"]
        coord = crd if len(child) == len(crd) else crd[child]
        return Unpacked(owner=owner, child=child, coord=coord)

    def validate(self, arrays, nparents, dim, parent_repeats) -> Validated:
        pos, crd = arrays["pos"], arrays["crd"]
        check_pos(pos, nparents, len(crd))
        check_in_range(crd, dim)
        parent = np.repeat(np.arange(nparents), np.diff(pos))
        check_sibling_order(crd, siblings(parent, parent_repeats), ordered=True, unique=self.unique)
        return Validated(nchildren=len(crd), repeats=None if self.unique else path_repeats(parent, parent_repeats, crd))

    def position_range(self, arrays, begin, end) -> tuple[str, str]:
        return f"{arrays['pos']}[{begin}]", f"{arrays['pos']}[{end}]"

    def coordinate(self, arrays, position) -> str:
        return f"{arrays['crd']}[{position}]"
