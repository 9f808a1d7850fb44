"""The hashed level: one open-addressing table per parent, for random inserts and lookups.

Parent p owns slots pos[p]..pos[p+1]-1 (a power-of-two count, at most half full); crd[slot] is the
coordinate stored there or -1 for an empty slot, and a child's position is its slot. A coordinate c is
looked for from its home slot ((c · HASH_MULTIPLIER mod 2⁶⁴) >> 32) & (size - 1), probing linearly. The
generated C code computes the same hash, so this module is the definition of the layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..codegen import names
from ..codegen.c_ast import CType, Expr, Prelude, Var, call, ctype, lt
from ..errors import FormatError
from ._checks import check_in_range, check_pos, expand_ranges, new_runs
from .compressed import pos_from_counts
from .level import Capability, Level, LevelProperties, Packed, Unpacked, Validated

HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
EMPTY = -1


def home_slot(coord: np.ndarray, size: np.ndarray) -> np.ndarray:
    """The first slot probed for each coordinate in a table of `size` slots (a power of two)."""
    mixed = (coord.astype(np.uint64) * HASH_MULTIPLIER) >> np.uint64(32)
    return (mixed & (size.astype(np.uint64) - np.uint64(1))).astype(np.int64)


def table_sizes(counts: np.ndarray) -> np.ndarray:
    """Power-of-two table sizes holding `counts` keys at a load of at most one half (0 for no keys)."""
    sizes = np.zeros(len(counts), dtype=np.int64)
    used = counts > 0
    sizes[used] = np.left_shift(1, np.ceil(np.log2(2 * counts[used])).astype(np.int64))
    return sizes


def insert(keys: np.ndarray, base: np.ndarray, size: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Place `keys` (distinct within a table) by linear probing, all at once, one probe step per round.

    In each round every unplaced key tries its next slot; of the keys meeting at an empty slot the first
    wins. A key moves on only past occupied slots, so lookups that probe from the home slot find it.
    """
    slot_of = np.empty(len(keys), dtype=np.int64)
    waiting = np.arange(len(keys))
    step = home_slot(keys, size)
    while len(waiting):
        want = base[waiting] + (step[waiting] & (size[waiting] - 1))
        free = table[want] == EMPTY
        candidates, first = np.unique(want[free], return_index=True)
        winners = waiting[free][first]
        table[candidates] = keys[winners]
        slot_of[winners] = candidates
        placed = np.zeros(len(keys), dtype=bool)
        placed[winners] = True
        waiting = waiting[~placed[waiting]]
        step[waiting] += 1
    return slot_of


@dataclass(frozen=True, slots=True)
class Hashed(Level):
    @property
    def letter(self) -> str:
        return "h"

    @property
    def properties(self) -> LevelProperties:
        return LevelProperties(full=False, ordered=False, unique=True, branchless=False, compact=False)

    @property
    def capabilities(self) -> frozenset[Capability]:
        return frozenset({Capability.POSITION_ITERATION, Capability.LOCATE, Capability.INSERT})

    @property
    def array_names(self) -> tuple[str, ...]:
        return ("pos", "crd")

    def positions_bound(self, nparents: int, dim: int, nentries: int) -> int:
        return 4 * nentries

    def pack(self, parent, nparents, coord, dim, index_dtype) -> Packed:
        fresh = new_runs(parent, coord)
        keys, owners = coord[fresh].astype(np.int64), parent[fresh]
        pos = pos_from_counts(owners, nparents, np.int64)
        sizes = table_sizes(np.diff(pos))
        pos[1:] = np.cumsum(sizes)
        table = np.full(int(pos[-1]), EMPTY, dtype=index_dtype)
        slots = insert(keys, pos[owners], sizes[owners], table)
        child = slots[np.cumsum(fresh) - 1]
        return Packed(arrays={"pos": pos.astype(index_dtype), "crd": table}, child=child, nchildren=len(table))

    def unpack(self, arrays: Mapping[str, np.ndarray], parents: np.ndarray, dim: int) -> Unpacked:
        pos, crd = arrays["pos"], arrays["crd"]
        owner, slot = expand_ranges(pos[parents].astype(np.int64), pos[parents + 1].astype(np.int64))
        stored = crd[slot] != EMPTY
        return Unpacked(owner=owner[stored], child=slot[stored], coord=crd[slot[stored]])

    def validate(self, arrays, nparents, dim, parent_repeats) -> Validated:
        pos, crd = arrays["pos"], arrays["crd"]
        check_pos(pos, nparents, len(crd))
        sizes = np.diff(pos).astype(np.int64)
        bad = np.flatnonzero(sizes & (sizes - 1))
        if len(bad):
            raise FormatError(f"Expected a power-of-two table size per parent, but parent {bad[0]} has {sizes[bad[0]]}")
        check_in_range(crd, dim, lowest=EMPTY)
        owner = np.repeat(np.arange(nparents), sizes)
        slot = np.flatnonzero(crd != EMPTY)
        keys, owners = crd[slot].astype(np.int64), owner[slot]
        order = np.lexsort((keys, owners))
        twice = np.flatnonzero((np.diff(owners[order]) == 0) & (np.diff(keys[order]) == 0))
        if len(twice):
            key, table = keys[order][twice[0]], owners[order][twice[0]]
            raise FormatError(f"Expected unique coordinates, but {key} is stored twice in the table of parent {table}")
        crowded = np.flatnonzero(2 * np.bincount(owners, minlength=nparents) > sizes)
        if len(crowded):
            p = crowded[0]
            raise FormatError(f"Expected tables at most half full, but the table of parent {p} holds "
                              f"{np.count_nonzero(owners == p)} keys in {sizes[p]} slots")
        self._check_probe_paths(pos.astype(np.int64), sizes, crd, slot, keys, owners)
        return Validated(nchildren=len(crd), repeats=None, vacant=np.flatnonzero(crd == EMPTY))

    @staticmethod
    def _check_probe_paths(pos, sizes, crd, slot, keys, owners) -> None:
        """Each key must be reachable: every slot from its home slot up to it (circularly) is occupied."""
        empties = np.zeros(len(crd) + 1, dtype=np.int64)
        np.cumsum(crd == EMPTY, out=empties[1:])
        base, size = pos[owners], sizes[owners]
        home = base + home_slot(keys, size)
        straight = home <= slot
        gaps = np.where(
            straight,
            empties[slot] - empties[home],
            (empties[base + size] - empties[home]) + (empties[slot] - empties[base]),
        )
        bad = np.flatnonzero(gaps)
        if len(bad):
            s = slot[bad[0]]
            raise FormatError(f"Expected coordinate {crd[s]} in slot {s} to be reachable by probing from its "
                              f"home slot {home[bad[0]]}, but an empty slot lies between")

    def position_range(self, arrays, begin: Expr, end: Expr) -> tuple[Expr, Expr]:
        return Var(arrays["pos"])[begin], Var(arrays["pos"])[end]

    def coordinate(self, arrays, position: Expr) -> Expr:
        return Var(arrays["crd"])[position]

    def vacant(self, arrays, position: Expr) -> Expr | None:
        return lt(Var(arrays["crd"])[position], 0)

    def locate(self, arrays, parent: Expr, coordinate: Expr, dim: Expr) -> Expr:
        return call(_find_helper(arrays["@type"]), Var(arrays["pos"]), Var(arrays["crd"]), parent, coordinate)

    def c_helpers(self, index_type: "CType | str") -> Prelude:
        """Linear probing from the home slot of HASH_MULTIPLIER (the layout this module defines)."""
        return Prelude("hashed_level_find", (("name", _find_helper(index_type)), ("index_type", ctype(index_type)),
                                             ("multiplier", int(HASH_MULTIPLIER))))


def _find_helper(index_type: "CType | str") -> str:
    """The helper that finds a coordinate in tables of `index_type` (generated names hold no `_`)."""
    return names.generated("hashedfind", ctype(index_type).base.removeprefix("int").removesuffix("_t"))
