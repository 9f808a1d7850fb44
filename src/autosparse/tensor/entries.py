"""Canonical entry lists: coordinate paths sorted lexicographically, each path once (duplicates summed).

Every conversion passes through one: storage -> entries in the target's level order -> storage. Sorting
is skipped when the paths are already in order (CSR -> COO, CSR -> CSF), and limited to the leading
levels when the trailing ones already are (CSR -> CSC sorts by column only: rows are in order).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_WORD_BITS = 63


@dataclass(frozen=True, slots=True)
class Entries:
    """paths[l][k] is the level-l coordinate of entry k; values[k] its value."""

    paths: tuple[np.ndarray, ...]
    values: np.ndarray

    def __len__(self) -> int:
        return len(self.values)

    def take(self, index: np.ndarray) -> "Entries":
        return Entries(tuple(p[index] for p in self.paths), self.values[index])


def canonical(entries: Entries, dims: tuple[int, ...]) -> Entries:
    """Sort by path and sum entries that share a path; `dims` are the extents of the paths' levels."""
    if len(entries) < 2:
        return entries
    rises, repeats = _compare_neighbours(entries.paths, len(entries))
    if not np.all(rises | repeats):
        entries = entries.take(_sort_order(entries.paths, dims))
        rises, repeats = _compare_neighbours(entries.paths, len(entries))
    if not np.any(repeats):
        return entries
    starts = np.concatenate(([0], np.flatnonzero(~repeats) + 1))
    return Entries(tuple(p[starts] for p in entries.paths), np.add.reduceat(entries.values, starts))


def _compare_neighbours(paths, count: int) -> tuple[np.ndarray, np.ndarray]:
    """For each of `count` entries but the first: does its path come after the previous entry's (rises),
    or equal it (repeats)?"""
    rises, repeats = np.zeros(count - 1, dtype=bool), np.ones(count - 1, dtype=bool)
    for path in paths:
        rises |= repeats & (path[1:] > path[:-1])
        repeats &= path[1:] == path[:-1]
    return rises, repeats


def _sort_order(paths, dims) -> np.ndarray:
    """A stable lexicographic argsort. Levels already in order at the end are left alone; the others are
    linearised into one integer key, packed with the entry index when both fit in 63 bits, because numpy
    sorts plain integers about twice as fast as it argsorts them; keys wider than a word are sorted in
    groups of levels, least significant first."""
    count = len(paths[0])
    index_bits = max(1, (count - 1).bit_length())
    unsorted = next((k for k in range(1, len(paths)) if np.all(np.logical_or(*_compare_neighbours(paths[k:], count)))),
                    len(paths))
    bits = [max(0, dim - 1).bit_length() for dim in dims]
    # One pass when the key fits in a word (packed with the index if it can be); else groups that pack.
    group_bits = _WORD_BITS if sum(bits[:unsorted]) <= _WORD_BITS else _WORD_BITS - index_bits
    order: np.ndarray | None = None  # None: the entries' own order, before the first pass
    stop = unsorted
    while stop > 0:
        start, width = stop - 1, bits[stop - 1]
        while start > 0 and width + bits[start - 1] <= group_bits:
            start -= 1
            width += bits[start]
        key = (paths[start] if order is None else paths[start][order]).astype(np.int64)
        for level in range(start + 1, stop):
            key *= dims[level]
            key += paths[level] if order is None else paths[level][order]
        step = _stable_argsort(key, width, index_bits)
        order = step if order is None else order[step]
        stop = start
    return order


def _stable_argsort(key: np.ndarray, key_bits: int, index_bits: int) -> np.ndarray:
    if key_bits + index_bits > _WORD_BITS:
        return np.argsort(key, kind="stable")
    packed = key << index_bits
    packed |= np.arange(len(key))
    packed.sort()
    return packed & ((1 << index_bits) - 1)
