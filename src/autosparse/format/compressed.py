"""The compressed level: `pos` delimits each parent's segment of `crd`, the stored coordinates.

Unique (`s`) levels store each coordinate once per parent; non-unique (`u`) levels give every entry a
position of its own, so the singleton levels below (COO) can tell duplicates of a prefix apart.

Siblings are stored in increasing coordinate order unless the spelling says otherwise: `s-` stores them
decreasing, `s~` (and `u~`, unsorted COO) in no particular order. Level formats of other compilers
cannot say either; the co-iteration strategies (Zhao et al.) are what make them usable: a decreasing
level is searched backwards, an unordered one through a hash table or a bitmap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ._checks import (check_in_range, check_pos, check_sibling_order, check_unique_unordered, expand_ranges, new_runs,
                      path_repeats, siblings)
from ..codegen.c_ast import Expr, Var
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


#: The spelling mark of each sibling order.
ORDER_MARKS = {"increasing": "", "decreasing": "-", "unordered": "~"}


@dataclass(frozen=True, slots=True)
class Compressed(Level):
    unique: bool = True
    order: str = "increasing"  # of siblings: increasing, decreasing or unordered

    def __post_init__(self):
        if self.order not in ORDER_MARKS:
            raise ValueError(f"Expected a sibling order in {sorted(ORDER_MARKS)}, but found {self.order!r}")

    @property
    def letter(self) -> str:
        return "s" if self.unique else "u"

    @property
    def spelling(self) -> str:
        return self.letter + ORDER_MARKS[self.order]

    @property
    def properties(self) -> LevelProperties:
        return LevelProperties(full=False, ordered=self.order == "increasing", unique=self.unique, branchless=False,
                               compact=True, descending=self.order == "decreasing")

    @property
    def capabilities(self) -> frozenset[Capability]:
        return frozenset({Capability.POSITION_ITERATION, Capability.APPEND})

    @property
    def array_names(self) -> tuple[str, ...]:
        return ("pos", "crd")

    def in_increasing_order(self) -> "Compressed":
        return Compressed(self.unique)

    @property
    def cuts_as_ranges(self) -> bool:
        return True

    def cut(self, arrays, begin, end, dim, root):
        """A run of parents' children are the positions pos[begin]..pos[end]; the root's coordinates
        [begin, end) are found in its (increasing) crd."""
        crd = arrays["crd"]
        if root:
            a, b = (int(x) for x in np.searchsorted(crd, [begin, end]))
            return {"pos": np.array([0, b - a], dtype=crd.dtype), "crd": crd[a:b] - crd.dtype.type(begin)}, a, b
        pos = arrays["pos"]
        a, b = int(pos[begin]), int(pos[end])
        return {"pos": pos[begin:end + 1] - pos[begin], "crd": crd[a:b]}, a, b

    def join(self, pieces, shifts, index_dtype, root):
        crd = np.concatenate([p["crd"].astype(index_dtype) + index_dtype.type(shift)
                              for p, shift in zip(pieces, shifts)])
        ends = np.cumsum([0, *(int(p["pos"][-1]) for p in pieces)])
        if root:  # one parent
            return {"pos": np.array([0, ends[-1]], dtype=index_dtype), "crd": crd}
        pos = np.concatenate([np.zeros(1, index_dtype), *(p["pos"][1:].astype(index_dtype) + index_dtype.type(ends[k])
                                                           for k, p in enumerate(pieces))])
        return {"pos": pos, "crd": crd}

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
        if self.order != "increasing":
            placed = self._placement(pos, owners, crd)
            child = placed[child]
            crd = np.empty_like(crd)
            crd[placed] = coord[fresh] if self.unique else coord
        arrays = {"pos": pos, "crd": crd.astype(index_dtype, copy=False)}
        return Packed(arrays=arrays, child=child, nchildren=len(crd))

    def _placement(self, pos: np.ndarray, owners: np.ndarray, crd: np.ndarray) -> np.ndarray:
        """Where each child of the increasing layout goes: its mirror in its parent's segment when
        decreasing; when unordered, a scramble of the segment (by a multiplicative hash of coordinate and rank),
        so that nothing that reads the level can lean on an order it does not promise."""
        starts = pos[:-1].astype(np.int64)[owners]
        ends = pos[1:].astype(np.int64)[owners]
        rank = np.arange(len(crd)) - starts
        if self.order == "decreasing":
            return ends - 1 - rank
        mixed = crd.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + rank.astype(np.uint64) * np.uint64(0xBF58476D1CE4E5B9)
        scramble = mixed >> np.uint64(33)
        placement = np.empty(len(crd), dtype=np.int64)
        placement[np.lexsort((scramble, owners))] = np.arange(len(crd))
        return placement

    def unpack(self, arrays: Mapping[str, np.ndarray], parents: np.ndarray, dim: int) -> Unpacked:
        owner, child = children_of(arrays["pos"], parents)
        crd = arrays["crd"]
        coord = crd if len(child) == len(crd) else crd[child]
        return Unpacked(owner=owner, child=child, coord=coord)

    def validate(self, arrays, nparents, dim, parent_repeats) -> Validated:
        pos, crd = arrays["pos"], arrays["crd"]
        check_pos(pos, nparents, len(crd))
        check_in_range(crd, dim)
        # each child's parent, where a check reads it: scipy's raw CSR (unordered, repeats allowed) needs none,
        # and spelling it out was a third of wrapping a scipy matrix
        unchecked = self.order == "unordered" and not self.unique
        parent = None if unchecked else np.repeat(np.arange(nparents), np.diff(pos))
        if self.order == "unordered":
            if self.unique:
                check_unique_unordered(crd, parent)
        else:
            check_sibling_order(crd, siblings(parent, parent_repeats), ordered=True, unique=self.unique,
                                descending=self.order == "decreasing")
        if self.unique:
            return Validated(nchildren=len(crd), repeats=None)
        if self.order != "increasing":  # entries sharing a prefix need not be neighbours: none counts as a repeat
            return Validated(nchildren=len(crd), repeats=np.zeros(len(crd), dtype=bool))
        return Validated(nchildren=len(crd), repeats=path_repeats(parent, parent_repeats, crd))

    def position_range(self, arrays, begin: Expr, end: Expr) -> tuple[Expr, Expr]:
        return Var(arrays["pos"])[begin], Var(arrays["pos"])[end]

    def coordinate(self, arrays, position: Expr) -> Expr:
        return Var(arrays["crd"])[position]
