"""Vectorised checks and index helpers shared by the level plug-ins."""

from __future__ import annotations

import numpy as np

from ..errors import FormatError


def expand_ranges(starts: np.ndarray, stops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate the ranges starts[k]..stops[k]-1: returns (k for each element, the element)."""
    counts = stops - starts
    owner = np.repeat(np.arange(len(starts)), counts)
    if len(owner) == 0:
        return owner, np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(counts) - counts
    return owner, np.arange(len(owner)) - offsets[owner] + starts[owner]


def check_pos(pos: np.ndarray, nparents: int, ncrd: int) -> None:
    """A `pos` array: one more entry than parents, starts at 0, never decreases, ends at len(crd)."""
    if len(pos) != nparents + 1:
        raise FormatError(f"Expected pos to have {nparents + 1} entries (parents + 1), but found {len(pos)}")
    if pos[0] != 0:
        raise FormatError(f"Expected pos[0] == 0, but found {pos[0]}")
    drops = np.flatnonzero(pos[1:] < pos[:-1])
    if len(drops):
        p = int(drops[0])
        raise FormatError(f"Expected pos to be non-decreasing, but pos[{p}] = {pos[p]} > pos[{p + 1}] = {pos[p + 1]}")
    if pos[-1] != ncrd:
        raise FormatError(f"Expected pos[-1] == len(crd) == {ncrd}, but found {pos[-1]}")


def check_in_range(crd: np.ndarray, dim: int, *, lowest: int = 0) -> None:
    """Every coordinate in lowest..dim-1."""
    bad = np.flatnonzero((crd < lowest) | (crd >= dim))
    if len(bad):
        q = int(bad[0])
        raise FormatError(f"Expected crd in [{lowest}, {dim}), but crd[{q}] = {crd[q]}")


def check_sibling_order(crd: np.ndarray, siblings: np.ndarray, *, ordered: bool, unique: bool,
                        descending: bool = False) -> None:
    """Where siblings[q] says q and q-1 share a parent path, enforce the level's order (increasing, or
    decreasing when `descending`) and uniqueness."""
    if len(crd) < 2 or not (ordered or unique):
        return
    previous, current = crd[:-1], crd[1:]
    same_parent = siblings[1:]
    if ordered:
        bad = np.flatnonzero(same_parent & ((current > previous) if descending else (current < previous)))
        if len(bad):
            q = int(bad[0]) + 1
            way, sign = ("coordinates sorted decreasing", "<") if descending else ("sorted coordinates", ">")
            raise FormatError(f"Expected {way}, but crd[{q - 1}] = {crd[q - 1]} {sign} crd[{q}] = {crd[q]}")
    if unique:
        bad = np.flatnonzero(same_parent & (current == previous))
        if len(bad):
            q = int(bad[0]) + 1
            raise FormatError(f"Expected unique coordinates, but crd[{q - 1}] == crd[{q}] == {crd[q]}")


def check_unique_unordered(crd: np.ndarray, parent: np.ndarray) -> None:
    """No coordinate twice below one parent, in whatever order the siblings come."""
    if len(crd) < 2:
        return
    order = np.lexsort((crd, parent))
    same = (parent[order][1:] == parent[order][:-1]) & (crd[order][1:] == crd[order][:-1])
    if np.any(same):
        k = int(np.flatnonzero(same)[0])
        first, second = sorted((int(order[k]), int(order[k + 1])))
        raise FormatError(f"Expected unique coordinates, but crd[{first}] == crd[{second}] == {crd[first]}")


def segment_starts(pos: np.ndarray, ncrd: int) -> np.ndarray:
    """A mask over positions 0..ncrd-1 that is True where a parent's segment begins."""
    starts = np.zeros(ncrd, dtype=bool)
    nonempty = pos[:-1][pos[:-1] < pos[1:]]
    starts[nonempty] = True
    return starts


def new_runs(parent: np.ndarray, coord: np.ndarray) -> np.ndarray:
    """A mask over sorted entries that is True where (parent, coord) differs from the previous entry."""
    fresh = np.ones(len(coord), dtype=bool)
    if len(coord) > 1:
        fresh[1:] = (parent[1:] != parent[:-1]) | (coord[1:] != coord[:-1])
    return fresh


def siblings(parent: np.ndarray, parent_repeats: np.ndarray | None) -> np.ndarray:
    """Mask over children: True where child q and q-1 hang below the same coordinate path.

    `parent` holds each child's parent position (non-decreasing); two different parents share a path
    when the parent level repeats it (below a non-unique level).
    """
    same = np.zeros(len(parent), dtype=bool)
    if len(parent) > 1:
        same[1:] = parent[1:] == parent[:-1]
        if parent_repeats is not None:
            same[1:] |= (parent[1:] == parent[:-1] + 1) & parent_repeats[parent[1:]]
    return same


def path_repeats(parent: np.ndarray, parent_repeats: np.ndarray | None, crd: np.ndarray) -> np.ndarray:
    """Mask over children: True where child q has the same coordinate path as child q-1."""
    repeats = siblings(parent, parent_repeats)
    repeats[1:] &= crd[1:] == crd[:-1]
    return repeats
