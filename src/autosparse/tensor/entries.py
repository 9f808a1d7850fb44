"""Canonical entry lists: coordinate paths sorted lexicographically, each path once (duplicates summed).

Every conversion passes through one: storage -> entries in the target's level order -> storage. The sort
is skipped when the paths are already in order, which is the common case (CSR -> COO, CSR -> CSF).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_KEY_LIMIT = 2**63 - 1


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
    if len(entries) == 0:
        return entries
    key = _linear_key(entries.paths, dims)
    if key is None:
        return _canonical_lexicographic(entries)
    steps = np.diff(key)
    if not np.all(steps > 0):
        if not np.all(steps >= 0):
            order = _stable_order(key, dims)
            entries, key = entries.take(order), key[order]
        entries = _sum_runs(entries, key[1:] != key[:-1])
    return entries


def _linear_key(paths: tuple[np.ndarray, ...], dims: tuple[int, ...]) -> np.ndarray | None:
    """Row-major linearised paths as int64, or None when the index space does not fit in 63 bits."""
    if int(np.prod([max(d, 1) for d in dims], dtype=object)) > _KEY_LIMIT:
        return None
    if not paths:
        return None
    key = paths[0].astype(np.int64)
    for path, dim in zip(paths[1:], dims[1:]):
        key *= dim
        key += path
    return key


def _stable_order(key: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    """argsort(key, kind="stable"), about twice as fast when the key and the entry's index fit together in
    63 bits: numpy sorts plain integers (vectorised) much faster than it argsorts them."""
    index_bits = max(1, (len(key) - 1).bit_length())
    key_bits = (int(np.prod([max(d, 1) for d in dims], dtype=object)) - 1).bit_length()
    if key_bits + index_bits > 63:
        return np.argsort(key, kind="stable")
    packed = key << index_bits
    packed |= np.arange(len(key))
    packed.sort()
    return packed & ((1 << index_bits) - 1)


def _canonical_lexicographic(entries: Entries) -> Entries:
    if entries.paths:
        order = np.lexsort(entries.paths[::-1])
        entries = entries.take(order)
    changes = np.zeros(len(entries) - 1, dtype=bool)
    for path in entries.paths:
        changes |= path[1:] != path[:-1]
    return _sum_runs(entries, changes)


def _sum_runs(entries: Entries, changes: np.ndarray) -> Entries:
    """Merge runs of sorted entries with equal paths; changes[k] says entry k+1 starts a new path."""
    if np.all(changes):
        return entries
    starts = np.concatenate(([0], np.flatnonzero(changes) + 1))
    values = np.add.reduceat(entries.values, starts)
    return Entries(tuple(p[starts] for p in entries.paths), values)
